"""docs/commands.md and docs/cli.md say what the declarations say (regenerate on drift)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.cli import docs

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("rel", sorted(docs.SECTIONS))
def test_generated_docs_are_current(rel: str) -> None:
    current = (ROOT / rel).read_text(encoding="utf-8")
    fresh = docs.render(current, docs.SECTIONS[rel])
    assert fresh == current, f"{rel} is out of date: run python -m engram.cli.docs"


def test_a_changed_limit_shows_as_drift(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for rel in docs.SECTIONS:
        text = (ROOT / rel).read_text(encoding="utf-8")
        (tmp_path / rel).write_text(text.replace("1..200", "1..50"), encoding="utf-8")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert docs.main(["--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0
