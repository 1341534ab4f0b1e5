"""A cancelled history mining returns, and ends its ``git log`` (docs/engine.md "Faults").

The miner broke out of ``git log``'s stream on a cancel and then waited for git, which was
blocked writing to the full pipe nobody read any more: a stopping engine hung there until
the git process was killed by hand.
"""

from __future__ import annotations

import subprocess
import threading
from pathlib import Path

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

    def cancel() -> bool:  # asked every 200 commits: stop at the first
        asked.append(1)
        return True

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
