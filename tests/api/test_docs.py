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


@pytest.mark.parametrize("rel", sorted(docs.FILES))
def test_generated_files_are_current(rel: str) -> None:
    """The CLI's table of declared commands (``engram --help`` reads it, not engram.api)."""
    current = (ROOT / rel).read_text(encoding="utf-8")
    assert docs.FILES[rel]() == current, f"{rel} is out of date: run python -m engram.cli.docs"


def test_the_command_table_is_what_the_declarations_say() -> None:
    from engram.api import Surface, declared_in, on
    from engram.cli.declared_table import DECLARED

    declared = [(u.cli, u.name, u.summary) for u in on(Surface.CLI)]
    assert [(cli, name, summary) for cli, name, _module, summary in DECLARED] == declared
    for _cli, name, module, _summary in DECLARED:
        assert name in {u.name for u in declared_in(module)}


def test_a_changed_limit_shows_as_drift(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for rel in docs.SECTIONS:
        text = (ROOT / rel).read_text(encoding="utf-8")
        (tmp_path / rel).write_text(text.replace("1..200", "1..50"), encoding="utf-8")
    for rel in docs.FILES:  # a summary changed in a declaration but not in the table
        table = (ROOT / rel).read_text(encoding="utf-8")
        (tmp_path / rel).parent.mkdir(parents=True)
        (tmp_path / rel).write_text(table.replace("hybrid search", "search"), encoding="utf-8")
    assert docs.main(["--check", "--root", str(tmp_path)]) == 1
    assert docs.main(["--root", str(tmp_path)]) == 0
    assert docs.main(["--check", "--root", str(tmp_path)]) == 0
