"""Two real processes on one workspace: nothing lost, nothing corrupted, lock timeouts."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engram.model import Memory
from engram.store import MemoryStore, StoreLocked
from engram.store.lock import WriteLock
from engram.workspace import Workspace

WRITER = textwrap.dedent(
    """
    import sys, numpy as np
    from engram.model import Memory
    from engram.store import MemoryStore
    from engram.workspace import Workspace

    root, tag, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    store = MemoryStore(Workspace.open(root), lock_timeout_s=60)
    rng = np.random.default_rng(abs(hash(tag)) % 1000)
    i = 0
    while i < n:
        batch = [
            Memory(f"{tag} note {j} marker{tag}", id=f"m-{tag}-{j}")
            for j in range(i, min(n, i + 3))
        ]
        if i % 2:
            store.add(batch, rng.normal(size=(len(batch), 8)).astype("float32"), "rand")
        else:
            store.add(batch)
        if i % 6 == 0 and i:
            store.update([batch[0]])
        i += len(batch)
    # tell the other writer we are done, wait for it, then we must see its rows too
    from pathlib import Path
    import time
    Path(root, f"done-{tag}").touch()
    other = "beta" if tag == "alpha" else "alpha"
    deadline = time.monotonic() + 180
    while not Path(root, f"done-{other}").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    print(store.count(), len(store.keyword_search(f"marker{other}", 100)))
    """
)


def test_two_processes_write_concurrently_without_loss(tmp_workspace: Workspace) -> None:
    n = 24
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_workspace.root), tag, str(n)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for tag in ("alpha", "beta")
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-2000:]
        assert out.split() == [str(2 * n), str(n)]  # each saw all of the other's writes
    store = MemoryStore(tmp_workspace)
    assert store.count() == 2 * n
    for tag in ("alpha", "beta"):
        expected = {f"m-{tag}-{j}" for j in range(n)}
        assert {m.id for m in store.get_many(sorted(expected))} == expected
        found = {mid for mid, _ in store.keyword_search(f"marker{tag}", 100)}
        assert found == expected
    # each process saw the other's rows afterwards: a third write from here lands on top
    store.add([Memory("after both")])
    assert MemoryStore(tmp_workspace, read_only=True).count() == 2 * n + 1


HOLDER = textwrap.dedent(
    """
    import fcntl, sys, time
    fd = open(sys.argv[1], "a+")
    fcntl.flock(fd, fcntl.LOCK_EX)
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
    """
)


def test_lock_held_too_long_raises_store_locked(tmp_workspace: Workspace) -> None:
    store = MemoryStore(tmp_workspace, lock_timeout_s=0.3)
    lock_path = tmp_workspace.engram_dir / "write.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock_path), "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(StoreLocked) as info:
            store.add([Memory("blocked")])
        assert str(lock_path) in str(info.value) and "\n" not in str(info.value)
        assert store.count() == 0  # reads never need the lock
    finally:
        holder.kill()
        holder.wait()
    store.add([Memory("now it goes through")])
    assert store.count() == 1


def test_write_lock_is_reentrant_and_times_out_with_injected_clock(tmp_path: Path) -> None:
    lock = WriteLock(tmp_path / "write.lock", timeout_s=5)
    with lock.hold(), lock.hold():  # re-entrant within a process
        pass
    now = [0.0]
    other = WriteLock(
        tmp_path / "write.lock",
        timeout_s=5,
        clock=lambda: now[0],
        sleep=lambda s: now.__setitem__(0, now[0] + 1.0),
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tmp_path / "write.lock"), "30"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        started = time.monotonic()
        with pytest.raises(StoreLocked), other.hold():
            pass
        assert time.monotonic() - started < 2  # the fake clock, not real waiting
    finally:
        holder.kill()
        holder.wait()
