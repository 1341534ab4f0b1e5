"""A read counts the memories it handed out after its reply, and no count is lost.

Every ``engram_context`` and search counts one use of each memory it returned
(``access_count``, docs/trust.md "Usage is not confidence"). That was a LanceDB write inside
the read in-process, and in the engine a write every two seconds that counted a memory
handed out five times in those seconds once. Now a read adds its ids to the engine's
``PendingUses``; they are written together later, and all of them when the engine closes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from tests.conftest import git

from engram.app import Engine, recall
from engram.app.remember import remember
from engram.store.memory_store import MemoryStore
from engram.workspace import Workspace

from .conftest import EngineEnv
from .test_frontend_calls import mcp_session

NO_MODEL = {"embed": {"model": "none"}}
TEXT = "The job timeout in jobs.py is 30s: the nightly run takes 40s."


def _table_version(root: Path) -> int:
    hint = root / ".engram" / "memories.lance" / "_versions" / "latest_version_hint.json"
    return int(json.loads(hint.read_text())["version"])


def _jobs(root: Path) -> None:
    (root / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return TIMEOUT\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "jobs")


def test_a_read_writes_no_use_and_closing_writes_every_use(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_workspace.root
    _jobs(root)
    with Engine.open(root, NO_MODEL) as engine:
        mid = remember(engine, TEXT, file="jobs.py", type="gotcha").memory.id
    writes: list[str] = []
    update = MemoryStore.update

    def counted(self: MemoryStore, *args: object, **kwargs: object) -> None:
        writes.append("update")
        update(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(MemoryStore, "update", counted)
    engine = Engine.open(root, NO_MODEL)
    try:
        version = _table_version(root)
        for _ in range(3):
            pack = recall.context(engine, file="jobs.py")
            assert mid in [item.memory.id for item in pack.items]
        for _ in range(2):
            assert mid in [h.memory.id for h in recall.search(engine, "job timeout nightly")]
        assert writes == [] and _table_version(root) == version  # nothing on the reads' path
        assert engine.uses.waiting == {mid: 5}
    finally:
        engine.close()
    assert writes == ["update"]  # the five uses, in one write
    assert _table_version(root) == version + 1
    with Engine.open(root, NO_MODEL) as again:
        stored = again.store.get(mid)
        assert stored is not None and stored.access_count == 5


@pytest.mark.timeout(300)
async def test_an_agents_reads_in_the_engine_lose_no_use_at_its_stop(
    engine_env: EngineEnv,
) -> None:
    root = engine_env.root
    _jobs(root)
    made = engine_env.run("remember", "--type", "gotcha", "--file", "jobs.py", "--json", TEXT)
    assert made.code == 0, made.err
    mid = str(json.loads(made.out)["id"])
    async with mcp_session(engine_env, engine_env.env) as session:
        version = _table_version(root)
        for _ in range(5):  # an agent asks again within seconds: five uses, not one
            done = await session.call_tool("engram_context", {"file": "jobs.py"})
            assert not done.is_error and mid in str(done.content), done.content
        await asyncio.sleep(2.5)  # the engine wrote its uses every two seconds
        assert _table_version(root) == version  # no write after the replies either, yet
    stopped = engine_env.run("stop")
    assert stopped.code == 0, stopped.err
    shown = engine_env.run("show", mid, "--json")
    assert shown.code == 0, shown.err
    assert json.loads(shown.out)["access_count"] == 5
