"""Who a shared memory is shown as shared by, when its file names nobody."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

from engram.app import Engine, team
from engram.config import EmbedConfig, EngramConfig
from engram.lifecycle.team import render_team_file
from engram.model import Memory, team_origin
from engram.workspace import Workspace


def test_a_file_shared_with_no_git_identity_is_shown_as_its_commit_authors(
    tmp_workspace: Workspace,
) -> None:
    """walk31: shared while git had no identity, the file keeps ``shared.by: null`` and
    teammates read 'shared by "the team"' for ever, although sync knows who committed it."""
    root = tmp_workspace.root
    folder = root / ".engram-team"
    folder.mkdir()
    now = datetime(2026, 11, 29, tzinfo=UTC)
    nobody = Memory("derive_key salts with the class name", id="m-00000000a1")
    named = Memory("sign() needs a secret key", id="m-00000000a2")
    (folder / f"{nobody.id}.json").write_text(
        render_team_file(nobody, shared_by=None, shared_at=now)
    )
    (folder / f"{named.id}.json").write_text(
        render_team_file(named, shared_by="Ana", shared_at=now)
    )
    author = ["-c", "user.name=Ada Walker", "-c", "user.email=ada@example.invalid"]
    subprocess.run(["git", *author, "add", "."], cwd=root, check=True)
    subprocess.run(["git", *author, "commit", "-qm", "team"], cwd=root, check=True)
    engine = Engine(tmp_workspace, EngramConfig(embed=EmbedConfig(model="none")))
    try:
        team.sync_team(engine)
        by = {
            m.id: (team_origin(m) or {}).get("by")
            for m in engine.store.get_many([nobody.id, named.id])
        }
    finally:
        engine.close()
    assert by == {nobody.id: "Ada Walker", named.id: "Ana"}
