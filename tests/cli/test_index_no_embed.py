"""``engram index --no-embed`` loads no embedding model at all (issue 18).

It used to load the model at the end anyway, to back-fill memory vectors, so the "fast,
keyword-only" index peaked at ~466 MB on a tiny workspace; the memories it stores now wait
for the next full ``engram index`` (docs/codegraph.md "At 50,000 files").
"""

from __future__ import annotations

import json

import pytest

import engram.embed
from engram.app import Engine
from engram.cli.main import main
from engram.workspace import Workspace


def test_index_no_embed_never_loads_the_model(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_workspace.root
    (root / "app.py").write_text("def charge(x):\n    return x + 1\n")
    (root / "CLAUDE.md").write_text("- Always run the tests with pytest -x before pushing.\n")
    monkeypatch.delenv("ENGRAM_EMBED__MODEL", raising=False)

    def no_model(*args: object, **kwargs: object) -> object:
        raise AssertionError("engram index --no-embed loaded the embedding model")

    monkeypatch.setattr(engram.embed, "load_embedder", no_model)

    assert main(["index", "--no-embed", "--json", "--workspace", str(root)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["code"]["files_indexed"] >= 1
    assert summary["seeded"]["rules"] >= 1  # a memory was stored, with no vector yet
    assert summary["memories"] == {"count": summary["memories"]["count"], "embedded": 0,
                                   "model": None}  # fmt: skip
    assert summary["memories"]["count"] >= 1
    with Engine.open(root, {"embed": {"model": "none"}}) as engine:
        stored = engine.store.list()
    assert any("pytest -x" in m.content for m in stored)


def test_index_says_plainly_why_search_is_keyword_only(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A new user's walk read "no embedding model ()" after ``engram index``: the last line
    names the setting and where to change it, and ``--no-embed`` says what it did."""
    root = tmp_workspace.root
    (root / "app.py").write_text("def charge(x):\n    return x + 1\n")
    (root / "CLAUDE.md").write_text("- Always run the tests with pytest -x before pushing.\n")
    monkeypatch.setenv("ENGRAM_EMBED__MODEL", "none")

    assert main(["index", "--workspace", str(root)]) == 0
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("engram: memories: ") and "()" not in last, last
    assert 'keyword-only because embed.model is "none"' in last, last
    assert "~/.config/engram/config.toml" in last and "ENGRAM_EMBED__MODEL" in last, last

    assert main(["index", "--no-embed", "--workspace", str(root)]) == 0
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert "not embedded (--no-embed)" in last and "()" not in last, last
