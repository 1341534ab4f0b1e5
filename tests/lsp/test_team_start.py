"""A teammate's clone: the team folder is read when the server starts.

A new user's walk (stop 31): the teammate cloned a repository with ``.engram-team/`` and
opened it in VS Code; Engram started (the folder counts as set up) and showed "0 memories"
and no diagnostic until *Sync Team Memories*, though the README says the open editor reads
the team's memories in. The server read the folder only when the editor reported a change
under it, and a clone, or a pull made while no editor ran, is none.
"""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.lsp.conftest import APP_SOURCE, lsp_session, open_doc, wait_for, wait_ready
from tests.lsp.test_e2e_clients import engram_diags

from engram.lifecycle.team import render_team_file, team_path
from engram.model import CodeAnchor, Memory, MemoryType, utcnow
from engram.workspace import Workspace

SHARED = "parse_config reads the whole file at once: never give it a log file"


def teammates_clone(root: Path) -> str:
    """A repository as a teammate's clone has it: code and a committed team folder, no
    ``.engram/``; the id of the shared memory."""
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text(APP_SOURCE)
    memory = Memory(
        SHARED,
        type=MemoryType.GOTCHA,
        anchors=[CodeAnchor(file="src/app.py", start_line=3, end_line=6)],
    )
    team = root / ".engram-team"
    team.mkdir()
    team_path(team, memory.id).write_text(
        render_team_file(memory, shared_by="Ana", shared_at=utcnow()), encoding="utf-8"
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "code and Ana's memory")
    return memory.id


async def test_a_clone_shows_the_teams_memories_when_opened(tmp_workspace: Workspace) -> None:
    root = tmp_workspace.root
    shared = teammates_clone(root)
    assert not (root / ".engram").exists()
    async with lsp_session([root]) as client:
        await wait_ready(client)
        doc_uri = await open_doc(client, root / "src" / "app.py")
        (diag,) = await wait_for(
            lambda: engram_diags(client, doc_uri), timeout=30, what="the team's memory"
        )
        assert diag.data["id"] == shared
        assert diag.range.start.line == 3
        assert SHARED in diag.message and 'shared by "Ana"' in diag.message
