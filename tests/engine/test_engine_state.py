"""``.engram/engine_state.json`` written from several threads of one process.

The workspace engine serves calls side by side and an index run's history steps run in a
thread beside the chunk pass (4029799): the team sync (``team_files``) and the history
steps (``renames_applied_commit``, ``coaccess_seeded_from``) can write the file at once.
Each write read the file, changed one key and replaced the file through a temporary
named by the process only: two threads wrote the same temporary file, one's replace found
it gone (``FileNotFoundError``, the step failed) or one's key was lost (the next run
followed renames again, or read every team file again).
"""

from __future__ import annotations

import threading

from engram.app.state import EngineState
from engram.workspace import Workspace


def test_threads_writing_keys_at_once_lose_none(tmp_workspace: Workspace) -> None:
    state = EngineState.of(tmp_workspace)
    errors: list[BaseException] = []
    start = threading.Barrier(4)

    def write(name: str) -> None:
        start.wait()
        for n in range(60):
            try:
                state.set(f"{name}-{n}", n)
            except BaseException as exc:  # the failure is the finding
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(f"t{i}",)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert all(state.get(f"t{i}-{n}") == n for i in range(4) for n in range(60))
    assert not list(state.path.parent.glob("*.tmp"))
