"""The scratchpad survives a crash: a new process rebuilds the session from its checkpoint."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from observer_helpers import bash, edit, feed, read

from engram.config import ObserverConfig
from engram.observer import Observer


def test_reload_after_simulated_kill_keeps_everything(tmp_workspace, sink, clock) -> None:  # type: ignore[no-untyped-def]
    first = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(
        first,
        [
            read("app/auth.py"),
            bash("pytest -q", 1, "E   KeyError: 'a1'"),
            bash("pytest -q", 1, "E   KeyError: 'a2'"),
            {
                "kind": "reasoning",
                "text": "Actually, the key must include the tenant id, not just the user.",
            },
            {"kind": "note", "text": "auth cache is per process", "files": ["app/auth.py"]},
        ],
    )
    before = first._sessions["s1"].state
    del first  # no finalize, no close: as if the process was killed

    second = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    notes = second.scratchpad_notes("s1", "app/auth.py")
    assert "auth cache is per process" in [n.content for n in notes]
    after = second._sessions["s1"].state
    assert after.step == before.step
    assert after.errors.keys() == before.errors.keys()
    assert len(after.self_corrections) == 1
    feed(
        second,
        [
            edit("app/keys.py", "k = u", "k = (t, u)"),
            bash("pytest -q", 0, "3 passed"),
            bash("git commit -am x", 0, "[main abc1234] x"),
        ],
    )
    types = sorted(m.type.value for m in sink.memories.values())
    assert types == ["error_pattern", "gotcha", "gotcha"]  # self-correction + note + error


def test_reload_does_not_promote_twice(tmp_workspace, sink, clock) -> None:  # type: ignore[no-untyped-def]
    first = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(
        first,
        [
            {
                "kind": "reasoning",
                "text": "Actually, ports are read from PORT, not from the config file.",
            },
            bash("git commit -am x", 0, "[main abc1234] x"),
        ],
    )
    assert len(sink.memories) == 1
    second = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(second, [bash("git commit -am y", 0, "[main def5678] y"), {"kind": "session_end"}])
    assert len(sink.memories) == 1


def test_torn_last_line_is_skipped(tmp_workspace, sink, clock) -> None:  # type: ignore[no-untyped-def]
    obs = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(obs, [read("a.py"), read("b.py")])
    path = obs.scratchpads.path("s1")
    with path.open("a", encoding="utf-8") as fh:
        fh.write('{"ts": 1, "event": {"session_id": "s1", "ki')  # killed mid-write
    again = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(again, [read("c.py")])
    assert again._sessions["s1"].state.step == 3


def test_checkpoint_written_before_observe_returns_in_a_killed_process(tmp_workspace) -> None:  # type: ignore[no-untyped-def]
    """A real child process observes two events and is killed with SIGKILL."""
    script = textwrap.dedent(
        f"""
        import os, signal
        from engram.observer import Observer
        from engram.workspace import Workspace
        class Sink:
            def remember_many(self, memories): return []
            def list(self, **kw): return []
            def memories_for_file(self, rel): return []
        obs = Observer(Sink(), workspace=Workspace.open({str(tmp_workspace.root)!r}))
        obs.observe({{"session_id": "k1", "kind": "note", "text": "survives", "files": ["x.py"]}})
        obs.observe({{"session_id": "k1", "kind": "tool_result", "tool": "Read",
                     "files": ["x.py"]}})
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=60)
    assert proc.returncode != 0
    lines = (tmp_workspace.engram_dir / "observer" / "k1.jsonl").read_text().splitlines()
    assert [json.loads(line)["event"]["kind"] for line in lines] == ["note", "tool_result"]

    class Sink:
        def remember_many(self, memories):  # type: ignore[no-untyped-def]
            return []

        def list(self, **kw):  # type: ignore[no-untyped-def]
            return []

        def memories_for_file(self, rel):  # type: ignore[no-untyped-def]
            return []

    obs = Observer(Sink(), workspace=tmp_workspace)
    assert [n.content for n in obs.scratchpad_notes("k1")] == ["survives"]


def test_idle_sessions_are_finalised_at_the_next_start(tmp_workspace, sink, clock) -> None:  # type: ignore[no-untyped-def]
    import os

    obs = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(obs, [edit("a.py", "1", "2")], sid="old")
    path = obs.scratchpads.path("old")
    os.utime(path, (1, 1))
    fresh = Observer(sink, workspace=tmp_workspace, config=ObserverConfig(), clock=clock)
    feed(fresh, [{"kind": "session_start"}], sid="new")
    assert [m.type.value for m in sink.memories.values()] == ["work_state"]
    assert "old" not in fresh.active_sessions()
