"""Who a shared memory is shown as shared by, when its file names nobody."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime

from engram.app import Engine, team
from engram.config import EmbedConfig, EngramConfig
from engram.lifecycle.team import render_team_file
from engram.model import Memory, team_origin
from engram.workspace import Workspace


def _committed_by_ada(ws: Workspace, files: list[tuple[Memory, str | None]]) -> None:
    """Team files naming whom ``files`` says (None: nobody), committed by Ada Walker."""
    folder = ws.root / ".engram-team"
    folder.mkdir()
    now = datetime(2026, 11, 29, tzinfo=UTC)
    for memory, by in files:
        (folder / f"{memory.id}.json").write_text(
            render_team_file(memory, shared_by=by, shared_at=now)
        )
    author = ["-c", "user.name=Ada Walker", "-c", "user.email=ada@example.invalid"]
    subprocess.run(["git", *author, "add", "."], cwd=ws.root, check=True)
    subprocess.run(["git", *author, "commit", "-qm", "team"], cwd=ws.root, check=True)


def test_a_file_shared_with_no_git_identity_is_shown_as_its_commit_authors(
    tmp_workspace: Workspace,
) -> None:
    """walk31: shared while git had no identity, the file keeps ``shared.by: null`` and
    teammates read 'shared by "the team"' for ever, although sync knows who committed it."""
    nobody = Memory("derive_key salts with the class name", id="m-00000000a1")
    named = Memory("sign() needs a secret key", id="m-00000000a2")
    _committed_by_ada(tmp_workspace, [(nobody, None), (named, "Ana")])
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


def test_a_memory_stored_naming_nobody_is_named_at_the_next_sync(
    tmp_workspace: Workspace,
) -> None:
    """A memory synced before 1e05bf4 was stored 'shared by "the team"'; sync skips a file
    it read before (same digest), so it kept that until the file changed. The next sync
    names the commit's author, in the store and in the agents' digest, text untouched."""
    import attrs

    from engram.agents import Digest
    from engram.model.memory import TEAM_KEY

    nobody = Memory("derive_key salts with the class name", id="m-00000000b1")
    _committed_by_ada(tmp_workspace, [(nobody, None)])
    engine = Engine(tmp_workspace, EngramConfig(embed=EmbedConfig(model="none")))
    try:
        team.sync_team(engine)
        # as the code before 1e05bf4 stored it: the file's null name
        (stored,) = engine.store.get_many([nobody.id])
        origin = {**(team_origin(stored) or {}), "by": None}
        old = attrs.evolve(stored, extra={**stored.extra, TEAM_KEY: origin})
        engine.store.update([old])
        engine.mirror([old])
        assert Digest(tmp_workspace).shown([nobody.id])[0].shared_by == "the team"
        report = team.sync_team(engine)
        (now,) = engine.store.get_many([nobody.id])
        again = team.sync_team(engine)
    finally:
        engine.close()
    assert (team_origin(now) or {}).get("by") == "Ada Walker"
    assert now.content == stored.content and now.needs_review == stored.needs_review
    assert report.updated == 1 and again.updated == 0 and again.unchanged == 1
    assert Digest(tmp_workspace).shown([nobody.id])[0].shared_by == "Ada Walker"
