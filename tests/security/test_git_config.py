"""A repository's own ``.git/config`` never makes Engram run a command (docs/security.md, "Git").

``core.fsmonitor`` names a command git runs whenever it refreshes the index: ``ls-files
--others`` (listing the workspace for the graph), ``status`` (the team folder's facts) and
``commit`` (``share --commit``) all do. A ``git clone`` cannot carry it, but a workspace
unpacked from an archive with its ``.git`` can, and ``engram index`` ran it: found by the
lead's hostile-workspace walk, stop 27. Every git command Engram runs starts with
``engram.gitroot.SAFE_GIT_CONFIG``.
"""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

import pytest
from tests.conftest import git
from tests.security.conftest import engram

from engram.workspace import Workspace


@pytest.fixture
def armed_repo(tmp_workspace: Workspace, tmp_path: Path) -> tuple[Workspace, Path]:
    """A workspace whose ``.git/config`` runs ``touch MARKER`` as its file-system monitor."""
    root = tmp_workspace.root
    (root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    marker = tmp_path / "FSMONITOR-RAN"
    git(root, "config", "user.name", "Ana")
    git(root, "config", "user.email", "ana@example.invalid")
    git(root, "config", "core.fsmonitor", f"touch {shlex.quote(str(marker))}; false")
    # the set-up is live: git itself runs the command for the listing Engram does
    subprocess.run(["git", "-C", str(root), "ls-files", "--others"], capture_output=True)
    assert marker.exists(), "git did not run core.fsmonitor: the test would prove nothing"
    marker.unlink()
    return tmp_workspace, marker


def test_index_remember_share_and_sync_never_run_the_repositorys_fsmonitor(
    armed_repo: tuple[Workspace, Path],
) -> None:
    ws, marker = armed_repo
    steps = [
        ("index", "--no-embed"),
        ("remember", "--file", "billing.py", "charge() takes cents, never euros"),
        ("share", "--commit"),
        ("sync",),
        ("impact", "billing.py"),
    ]
    for args in steps:
        run = engram(ws, *args)
        assert run.returncode == 0, (args, run.stderr)
        assert not marker.exists(), f"`engram {' '.join(args)}` ran the repository's fsmonitor"
    # and the work was done: the share is a commit of the team folder
    log = git(ws.root, "log", "-1", "--format=%s")
    assert log.startswith("engram: share")
