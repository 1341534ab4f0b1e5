"""Issue 13, writers queue instead of failing: a waiter's deadline restarts whenever the lock
changes hands (engram.store.lock); only one holder keeping the lock past the timeout makes a
waiter give up.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from engram.store.lock import WriteLock


def test_a_waiter_outlasts_its_timeout_while_the_lock_changes_hands(tmp_path: Path) -> None:
    path = tmp_path / "write.lock"
    busy = WriteLock(path, timeout_s=30)
    holding = threading.Event()

    def hand_over_and_over() -> None:
        for _ in range(10):  # 10 holds of 0.3 s, re-taken at once: 3 s in all
            with busy.hold():
                holding.set()
                time.sleep(0.3)

    holder = threading.Thread(target=hand_over_and_over)
    holder.start()
    assert holding.wait(10)
    waiter = WriteLock(path, timeout_s=1.0)
    started = time.monotonic()
    with waiter.hold():  # before: StoreLocked after 1 s, however busy the queue
        waited = time.monotonic() - started
    holder.join()
    assert waited < 30  # it got its turn (no StoreLocked) once the queue moved on
