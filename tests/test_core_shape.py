"""Issue 14's scenarios: each failed on the core before the restructuring."""

from __future__ import annotations

import logging
import shutil
import subprocess
import sys
from pathlib import Path

import attrs
import pytest

from engram.anchors import LineSpan
from engram.app.history_sync import AnchorFinder
from engram.lsp.anchors import locate_anchor
from engram.model import CodeAnchor, content_hash
from engram.workspace import uri_to_path

ROOT = Path(__file__).resolve().parents[1]


def test_layers_hold_and_there_are_no_import_cycles() -> None:
    """import-linter: front ends > api > app > domain > store/embed > foundations."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is a dev dependency"
    run = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]


def test_a_windows_file_uri_is_a_drive_path() -> None:
    """The LSP used to turn file:///C:/… into /C:/… (urlparse); pygls.uris knows drives."""
    path = uri_to_path("file:///C:/work/a%20b.py")
    assert path is not None and str(path).lower().startswith("c:") and path.name == "a b.py"
    assert uri_to_path("untitled:Untitled-1") is None


def test_the_editor_and_the_index_place_a_moved_anchor_alike(tmp_path: Path) -> None:
    """One relocator: the LSP and engram index agree where a memory sits now."""
    body = ["def charge(amount):", "    return amount * 100", ""]
    text = ["import os", "", *body]
    anchor = CodeAnchor(
        file="billing.py",
        start_line=0,
        end_line=1,
        content_hash=content_hash("\n".join(body[:2])),
    )
    (tmp_path / "billing.py").write_text("\n".join(text))
    in_editor = locate_anchor(anchor, text)
    on_disk = AnchorFinder(tmp_path).find(anchor)
    assert in_editor == LineSpan(2, 3) and on_disk == 2


def test_one_content_hash_for_anchors_and_indexed_files() -> None:
    import engram.codegraph.graph as graph
    import engram.codegraph.parse_worker as parse_worker

    # the index hashes a file where it reads it: in parse_worker.examine, in this process or
    # a worker's (docs/codegraph.md, "A cold index on several cores")
    assert parse_worker.content_hash is content_hash  # no second (blake2b) hash of contents
    assert not hasattr(graph, "hashlib") and not hasattr(parse_worker, "hashlib")


def test_a_swapped_engine_is_closed_by_its_last_user_never_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A settings change swaps the engine while a worker uses it: closed when it is done.

    The server used to close nothing it replaced until shutdown (every settings change
    kept one more store open), and a removed folder's engine was closed under its users.
    """
    from engram.lsp.engines import Slot

    closed: list[str] = []
    slot: Slot[str] = Slot(closed.append, "engine")
    slot.set("old")
    worker = slot.acquire("command search")  # a command running on the old engine
    assert worker is not None and worker.value == "old"
    with caplog.at_level(logging.INFO, logger="engram.lsp.engines"):
        slot.set("new")  # the settings change
    assert slot.current == "new" and closed == [] and slot.draining == 1
    # the log says who the old engine waits for (a stuck swap is diagnosable)
    assert "the replaced engine closes after: command search" in caplog.text
    with slot.hold("test") as engine:  # new work sees the new engine
        assert engine == "new"
    worker.release()  # the command finished
    assert closed == ["old"] and slot.draining == 0
    slot.close()  # folder removed, nobody using it: closed at once
    assert closed == ["old", "new"] and slot.current is None and slot.acquire("test") is None


def test_a_settings_change_names_the_sections_that_changed() -> None:
    from engram.config import DiagnosticsConfig, EmbedConfig, EngramConfig
    from engram.lsp.feature import changed_sections

    base = EngramConfig()
    assert changed_sections(base, base) == frozenset()
    diag = attrs.evolve(base, diagnostics=DiagnosticsConfig(trust_level=4))
    assert changed_sections(base, diag) == {"diagnostics"}
    both = attrs.evolve(diag, embed=EmbedConfig(model="other"))
    assert changed_sections(base, both) == {"diagnostics", "embed"}
