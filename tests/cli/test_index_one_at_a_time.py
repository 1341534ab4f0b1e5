"""One index of a workspace at a time, across processes (``engram.app.index_lock``).

Two ``engram index`` started together on one workspace (or the CLI beside an engine's
start-up index) wrote the same graph rows: one failed with ``UNIQUE constraint failed:
nodes.id`` or ``database is locked``, and a graph doubled its nodes. The second run now
waits and says who it waits for, or with ``--no-wait`` exits 75 at once; either way the
graph is the one a single run builds (docs/codegraph.md "One index at a time").
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests.cli.conftest import ENGRAM, RunCli

from engram.app.index_lock import index_lock, is_running
from engram.workspace import Workspace

MODULES = 40


def _write_workspace(root: Path) -> None:
    """A small package whose modules import and call each other (edges, closure rows)."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text("")
    for i in range(MODULES):
        previous = f"from pkg.m{i - 1} import f{i - 1}\n\n\n" if i else ""
        body = f"    return f{i - 1}(x) + 1\n" if i else "    return x\n"
        (pkg / f"m{i}.py").write_text(
            f"{previous}def f{i}(x):\n{body}\n\nclass C{i}:\n    def run(self):\n"
            f"        return f{i}(2)\n"
        )


def graph_rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    """Every row the graph stores, files named instead of numbered, duplicates kept."""
    conn = sqlite3.connect(db)
    queries = {
        "files": "SELECT path, language, hash, status, note, stale_at IS NULL FROM files",
        "nodes": """SELECT f.path, n.kind, n.qualname, n.start_line, n.end_line, p.qualname,
                    n.exported FROM nodes n JOIN files f ON f.id=n.file_id
                    LEFT JOIN nodes p ON p.id=n.parent_id""",
        "edges": """SELECT s.path, e.kind, e.dst_name, d.path, e.target, e.weight, e.line
                    FROM edges e JOIN files s ON s.id=e.src_file
                    LEFT JOIN files d ON d.id=e.dst_file""",
        "closure": """SELECT a.path, d.path, c.depth, c.weight FROM closure c
                      JOIN files a ON a.id=c.ancestor JOIN files d ON d.id=c.descendant""",
    }
    out = {name: sorted(conn.execute(sql).fetchall(), key=repr) for name, sql in queries.items()}
    conn.close()
    return out


def _single_run(tmp_path: Path, cli_env: dict[str, str]) -> dict[str, list[tuple[object, ...]]]:
    root = tmp_path / "single"
    _write_workspace(root)
    proc = subprocess.run(
        [str(ENGRAM), "index", "--no-embed", "--workspace", str(root)],
        env=cli_env, capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return graph_rows(root / ".engram" / "graph.sqlite")


def test_two_index_processes_at_once_build_one_runs_graph(
    tmp_workspace: Workspace, tmp_path: Path, cli_env: dict[str, str]
) -> None:
    root = tmp_workspace.root
    _write_workspace(root)
    argv = [str(ENGRAM), "index", "--no-embed", "--workspace", str(root)]
    procs = [
        subprocess.Popen(argv, env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
        for _ in range(2)
    ]  # fmt: skip
    results = [(p.wait(timeout=240), p.communicate()[1]) for p in procs]
    for code, err in results:
        assert code == 0, err
        assert "UNIQUE constraint" not in err and "database is locked" not in err, err
    rows = graph_rows(root / ".engram" / "graph.sqlite")
    assert len(rows["files"]) == MODULES + 1
    assert rows == _single_run(tmp_path, cli_env)


def test_a_second_index_waits_and_says_for_whom_or_exits_75(
    tmp_workspace: Workspace, tmp_path: Path, cli, cli_env: dict[str, str]
) -> None:  # type: ignore[no-untyped-def]
    """A run holding the lock (here this test process, as another index would) makes
    ``--no-wait`` exit 75 naming it, and a plain ``engram index`` wait for it, say so, and
    index once it is free."""
    run_cli: RunCli = cli
    root = tmp_workspace.root
    _write_workspace(root)
    with index_lock(tmp_workspace) as held:
        assert held
        holder = is_running(tmp_workspace)
        assert holder is not None and holder.pid == os.getpid()
        busy = run_cli("index", "--no-embed", "--no-wait")
        assert busy.code == 75, busy.err
        assert f"an index of this workspace is running (pid {os.getpid()}" in busy.err
        assert (
            not (root / ".engram" / "graph.sqlite").exists()
            or not graph_rows(root / ".engram" / "graph.sqlite")["files"]
        )
        waiting = subprocess.Popen(
            [str(ENGRAM), "index", "--no-embed", "--workspace", str(root)],
            env=cli_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert waiting.stderr is not None
        first = waiting.stderr.readline()  # it says it waits before anything else
        assert f"running (pid {os.getpid()}" in first and "waiting" in first, first
        assert waiting.poll() is None
    assert waiting.wait(timeout=240) == 0, waiting.communicate()[1]
    assert is_running(tmp_workspace) is None
    assert graph_rows(root / ".engram" / "graph.sqlite") == _single_run(tmp_path, cli_env)


def test_the_lock_dies_with_a_killed_holder(tmp_workspace: Workspace) -> None:
    """A holder killed with SIGKILL leaves no lock behind (a pid file would)."""
    code = (
        "import sys, time\n"
        "from engram.app.index_lock import index_lock\n"
        "from engram.workspace import Workspace\n"
        "with index_lock(Workspace.open(sys.argv[1])):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(600)\n"
    )
    child = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_workspace.root)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline().strip() == "held"
    holder = is_running(tmp_workspace)
    assert holder is not None and holder.pid == child.pid
    child.kill()
    child.wait(timeout=30)
    deadline = time.monotonic() + 30
    while is_running(tmp_workspace) is not None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert is_running(tmp_workspace) is None
    with index_lock(tmp_workspace, wait=False) as held:
        assert held
