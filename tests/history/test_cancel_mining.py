"""A cancelled history mining returns, and ends its ``git log`` (docs/engine.md "Faults").

The miner broke out of ``git log``'s stream on a cancel and then waited for git, which was
blocked writing to the full pipe nobody read any more: a stopping engine hung there until
the git process was killed by hand.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from engram.history import GitHistory
from engram.history.git_history import MineReport
from engram.workspace import Workspace

COMMITS = 3000  # ~0.5 MB of ``git log`` output: far more than a pipe holds


def _many_commits(root: Path) -> None:
    """A repository with COMMITS commits, each touching two files (``git fast-import``)."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    lines: list[str] = []
    for n in range(COMMITS):
        lines += [  # commits of one stream on one branch follow each other
            "commit refs/heads/main",
            f"committer Test <t@example.com> {1_600_000_000 + n * 60} +0000",
            "data 6",
            "change",
        ]
        for name in (f"pkg/m{n % 97}.py", f"pkg/n{n % 89}.py"):
            text = f"x = {n}\n"
            lines += [f"M 100644 inline {name}", f"data {len(text)}", text.rstrip("\n")]
    stream = "\n".join(lines) + "\n"
    subprocess.run(
        ["git", "-C", str(root), "fast-import", "--quiet"], input=stream.encode(), check=True
    )
    subprocess.run(["git", "-C", str(root), "checkout", "-q", "main"], check=True)


def _git_logs_of(pid: int) -> list[int]:
    found = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            except OSError:
                continue
            if b"log" in cmdline.split(b"\0"):
                found.append(int(child))
    return found


def test_a_cancelled_mining_returns_and_leaves_no_git_behind(tmp_path: Path) -> None:
    import os

    root = tmp_path / "repo"
    _many_commits(root)
    history = GitHistory(Workspace.open(root), db_path=tmp_path / "history.sqlite")
    asked: list[int] = []

    def cancel() -> bool:  # stop after ~300 stored commits, with git's output far from read
        # counted where a stored commit asks, not at the reads of git's output: those come as
        # fast as the reader polls, and on an idle machine 300 of them came before the first
        # commit was stored (new_commits 0 in the CI loop's run of a7fe3d1)
        if sys._getframe(1).f_code.co_name == "_mine_locked":
            asked.append(1)
        return len(asked) > 300

    result: list[MineReport] = []
    miner = threading.Thread(target=lambda: result.append(history.mine(cancel=cancel)))
    miner.start()
    miner.join(120)
    hung = miner.is_alive()
    if hung:  # end the blocked git so the test process can finish
        for pid in _git_logs_of(os.getpid()):
            os.kill(pid, 9)
        miner.join(60)
    history.close()
    assert not hung, "history mining hung on git log after a cancel"
    assert asked, "the miner never asked whether to stop"
    assert result and result[0].reason == "cancelled", result
    assert 0 < result[0].new_commits < COMMITS, result
    assert not _git_logs_of(os.getpid()), "git log outlived the cancelled mining"


def test_the_cancel_is_heard_at_the_next_commit_not_the_next_batch(tmp_path: Path) -> None:
    """Mining looked at the cancel every 200 commits (up to 4 s apart on babel's history at
    load 8); now every commit, and what it stored is kept for the next run."""
    root = tmp_path / "repo"
    _many_commits(root)
    history = GitHistory(Workspace.open(root), db_path=tmp_path / "history.sqlite")
    asked: list[int] = []

    def cancel() -> bool:  # counted where a stored commit asks (not the reads of git's output)
        if sys._getframe(1).f_code.co_name == "_mine_locked":
            asked.append(1)
        return len(asked) > 10

    report = history.mine(cancel=cancel)
    assert report.reason == "cancelled"
    assert 0 < report.new_commits < 20, report
    resumed = history.mine()
    history.close()
    assert resumed.new_commits == COMMITS - report.new_commits, resumed
    assert resumed.commits == COMMITS


def test_a_cancel_while_git_writes_nothing_is_heard(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``git log`` silent for seconds (its rename detection on a commit of thousands of
    files): the read waits for output a quarter of a second at a time, not for 64 KiB."""
    import os
    import time

    root = tmp_path / "repo"
    _many_commits(root)
    real = shutil.which("git")
    assert real is not None
    shims = tmp_path / "bin"
    shims.mkdir()
    shim = shims / "git"
    shim.write_text(  # the log writes nothing for 30 s: as git busy on one huge commit
        f'#!/bin/sh\nfor a in "$@"; do [ "$a" = log ] && exec sleep 30; done\nexec {real} "$@"\n'
    )
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{shims}{os.pathsep}{os.environ['PATH']}")
    history = GitHistory(Workspace.open(root), db_path=tmp_path / "history.sqlite")
    told = threading.Event()
    threading.Timer(1.0, told.set).start()
    started = time.monotonic()
    report = history.mine(cancel=told.is_set)
    took = time.monotonic() - started
    history.close()
    assert report.reason == "cancelled", report
    assert report.new_commits == 0
    assert took < 5.0, f"the cancel waited {took:.1f}s for git"
