"""Which plotly.js the report page inlines: the pinned partial bundle setup.py fetched at
build time when it is there unaltered, plotly's full bundle (with a warning) otherwise."""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
from importlib import resources
from pathlib import Path

import pytest

from engram.report import build_report, render_html
from engram.report.data import MemoryColumns
from engram.report.render import bundle_from, plotly_js

PACKAGE = Path(str(resources.files("engram.report")))
SPEC = json.loads((PACKAGE / "plotly_bundle.json").read_text(encoding="utf-8"))
PARTIAL = f"{SPEC['npm_package']}@{SPEC['version']}"


def test_the_installed_page_inlines_the_pinned_partial_bundle() -> None:
    # the install (setup.py, npm on the PATH as in CI) fetched it; without it the report
    # still works, three times slower to draw, and this test says how to get it
    text, name = plotly_js()
    assert name == PARTIAL, "no partial bundle installed: reinstall with npm on the PATH"
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert digest == SPEC["files"][SPEC["bundle"]]
    # its MIT notice ships beside it and stays at the head of the inlined code
    assert (PACKAGE / "vendor" / "LICENSE").read_text(encoding="utf-8").startswith("MIT License")
    assert text.lstrip().startswith("/**") and "Licensed under the MIT license" in text[:400]
    data = build_report(
        workspace="/ws", memories=MemoryColumns.from_memories([]), cochange_pairs=[], impact=None
    )
    page = render_html(data)
    assert text in page
    assert page.count("Licensed under the MIT license") == 1  # one bundle, not two


def _package_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "report"
    folder.mkdir()
    shutil.copyfile(PACKAGE / "plotly_bundle.json", folder / "plotly_bundle.json")
    return folder


def test_a_missing_or_altered_bundle_falls_back_to_the_full_one(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from plotly.offline import get_plotlyjs

    folder = _package_copy(tmp_path)
    with caplog.at_level(logging.WARNING, logger="engram.report.render"):
        text, name = bundle_from(folder)
    assert (text, name) == (get_plotlyjs(), "plotly full bundle")
    assert "not installed" in caplog.text

    caplog.clear()
    (folder / "vendor").mkdir()
    (folder / "vendor" / SPEC["bundle"]).write_text("alert('not plotly')", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="engram.report.render"):
        text, name = bundle_from(folder)
    assert name == "plotly full bundle" and "alert(" not in text
    assert "altered" in caplog.text


def test_an_intact_bundle_is_taken_from_the_folder_given(tmp_path: Path) -> None:
    folder = _package_copy(tmp_path)
    (folder / "vendor").mkdir()
    text, _ = plotly_js()
    (folder / "vendor" / SPEC["bundle"]).write_text(text, encoding="utf-8")
    assert bundle_from(folder) == (text, PARTIAL)
