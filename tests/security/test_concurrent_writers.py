"""Issue 13, nothing silently out of sync: with 8 processes x 25 writes on one store, every
write succeeds. Waiters queue while the lock changes hands (engram.store.lock); only one
holder keeping the lock past the timeout makes a waiter give up.

The timeout here is 5 s instead of the default 15 s so the queue is far longer than the
timeout (200 writes on a loaded machine take minutes): before, a waiter gave up after 5 s
of waiting in total however busy the queue was.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from engram.store import MemoryStore
from engram.workspace import Workspace

WRITER = textwrap.dedent(
    """
    import sys
    from engram.model import Memory
    from engram.store import MemoryStore
    from engram.workspace import Workspace

    root, tag = sys.argv[1], sys.argv[2]
    store = MemoryStore(Workspace.open(root), lock_timeout_s=5)
    for j in range(25):
        store.add([Memory(f"writer {tag} note {j}", id=f"m-{tag}-{j}")])
    """
)


def test_eight_by_twenty_five_writers_all_succeed(tmp_workspace: Workspace) -> None:
    root = str(tmp_workspace.root)
    MemoryStore(tmp_workspace).close()  # the table exists before the race
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, root, f"w{i}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(8)
    ]
    failures = []
    for proc in procs:
        _out, err = proc.communicate(timeout=900)
        if proc.returncode != 0:
            failures.append(err.strip().splitlines()[-1:] if err.strip() else proc.returncode)
    assert failures == []
    assert MemoryStore(tmp_workspace, read_only=True).count() == 200
