"""`engram index` lets memories follow git: renames, changed code, co-access, summaries."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.conftest import RunCli
from tests.conftest import git

from engram.workspace import Workspace

from .conftest import ok

SOURCE = "def charge(amount):\n    # cents, never floats\n    return round(amount * 100)\n"


def commit_all(root: Path, message: str) -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def remember(cli: RunCli, text: str, file: str, lines: str) -> str:
    run = ok(cli("remember", text, "--file", file, "--line", lines, "--json"))
    memory_id: str = json.loads(run.out)["id"]
    return memory_id


def test_git_mv_then_index_moves_the_memory(cli: RunCli, tmp_workspace: Workspace) -> None:
    root = tmp_workspace.root
    (root / "billing.py").write_text(SOURCE)
    commit_all(root, "billing")
    memory_id = remember(cli, "charge takes euros and stores cents", "billing.py", "1-3")
    shown = json.loads(ok(cli("show", memory_id, "--json")).out)
    assert shown["provenance"]["commit_sha"] == git(root, "rev-parse", "HEAD").strip()

    git(root, "mv", "billing.py", "payments.py")
    commit_all(root, "rename billing to payments")
    indexed = ok(cli("index", "--no-embed", "--json"))
    summary = json.loads(indexed.out)
    assert summary["history"]["memories"]["renamed"] == 1

    listed = json.loads(ok(cli("list", "--file", "payments.py", "--json")).out)
    assert [m["id"] for m in listed["memories"]] == [memory_id]
    memory = listed["memories"][0]
    assert [a["file"] for a in memory["anchors"]] == ["payments.py"]
    assert json.loads(ok(cli("list", "--file", "billing.py", "--json")).out)["count"] == 0


def test_changed_code_lands_in_the_review_queue(cli: RunCli, tmp_workspace: Workspace) -> None:
    root = tmp_workspace.root
    (root / "billing.py").write_text(SOURCE)
    commit_all(root, "billing")
    memory_id = remember(cli, "cents, never floats", "billing.py", "2-3")
    ok(cli("index", "--no-embed"))
    assert json.loads(ok(cli("list", "--review", "--json")).out)["count"] == 0

    (root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    commit_all(root, "floats after all")
    run = ok(cli("index", "--no-embed"))
    assert "need review" in run.err

    review = json.loads(ok(cli("list", "--review", "--json")).out)
    assert [m["id"] for m in review["memories"]] == [memory_id]
    assert "code_changed" in review["memories"][0]["flags"]


def test_list_review_shows_the_last_session(cli: RunCli, tmp_workspace: Workspace) -> None:
    events = [
        {"kind": "editor", "action": "open", "files": ["a.py"], "session_id": "s-1"},
        {"kind": "session_end", "session_id": "s-1", "outcome": "success"},
    ]
    ok(cli("observe", stdin="\n".join(json.dumps(e) for e in events)))
    review = json.loads(ok(cli("list", "--review", "--json")).out)
    assert review["session"]["session_id"] == "s-1"
    assert review["session"]["outcome"] == "success"
    text = ok(cli("list", "--review"))
    assert "Last session (s-1)" in text.out


def test_index_learns_the_cochange_ranking_so_impact_never_waits(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    """Issue 17: the ranking is fitted during `engram index`, then impact only reads it."""
    import sqlite3

    root = tmp_workspace.root
    for i in range(260):  # api.py changed with old.py first, with new.py lately
        (root / "api.py").write_text(f"VERSION = {i}\n")
        partner = "old.py" if i < 160 else "new.py"
        (root / partner).write_text(f"X = {i}\n")
        (root / f"noise{i % 6}.py").write_text(f"Y = {i}\n")
        commit_all(root, f"change {i}")
    ok(cli("index", "--no-embed", "--json"))
    db = sqlite3.connect(root / ".engram" / "history.sqlite")
    stored = json.loads(
        db.execute("SELECT value FROM meta WHERE key='cochange_model'").fetchone()[0]
    )
    db.close()
    assert stored["model"] is not None and stored["fitted_at"] >= 250
    impact = json.loads(ok(cli("impact", "api.py", "--json")).out)
    ranked = [r["file"] for r in impact["ranked_files"]]
    assert ranked.index("new.py") < ranked.index("old.py")
