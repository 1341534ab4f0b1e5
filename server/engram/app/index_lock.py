"""One index run per workspace at a time, across processes (``.engram/index.lock``).

Why: two runs on one store (two ``engram index`` at once, the CLI beside an editor's
start-up index, an in-process CLI beside the engine) wrote the same graph rows and one of
them failed with ``UNIQUE constraint failed: nodes.id`` or ``database is locked``. The lock
is an OS file lock (``filelock``: ``flock`` on POSIX), so it dies with its holder: a run
killed by a crash or ``kill -9`` never blocks the next one, as a pid file would. Two runs
in one process (the engine's threads) exclude each other too: each takes its own file
descriptor. Beside the lock, ``index.lock.holder`` names the run that holds it (pid, start,
command); it is read only while the lock is busy, so a record a dead run left behind is
never shown.

A second run waits by default and says so once, with who holds the lock; it then indexes
what changed since (usually nothing), so the graph ends as one run leaves it. It gives up
when its ``cancel`` says stop (the engine stopping), and at once when told not to wait
(:class:`IndexBusy`, ``engram index --no-wait``) (docs/codegraph.md "One index at a time").
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path

import attrs

from engram.errors import EngramError
from engram.workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)

LOCK_NAME = "index.lock"
#: How often a waiting run tries the lock again and asks its ``cancel``.
POLL_SECONDS = 0.25

_held = threading.local()


@attrs.frozen
class IndexHolder:
    """Who holds the index lock, as its record says (``None``: not said yet or unreadable)."""

    pid: int | None
    started: str | None
    command: str

    def describe(self) -> str:
        """``pid 123, engram index, started 18:45:02 UTC`` (as much as is known)."""
        parts = [f"pid {self.pid}" if self.pid is not None else "another process"]
        if self.command:
            parts.append(self.command)
        if self.started:
            parts.append(f"started {self.started}")
        return ", ".join(parts)


class IndexBusy(EngramError):
    """Another run indexes this workspace and the caller asked not to wait."""

    def __init__(self, holder: IndexHolder) -> None:
        super().__init__(
            f"an index of this workspace is running ({holder.describe()}); "
            "not waiting for it (run again without --no-wait to wait)"
        )
        self.holder = holder


def lock_path(workspace: Workspace) -> Path:
    return workspace.engram_dir / LOCK_NAME


def _record_path(path: Path) -> Path:
    return path.with_name(path.name + ".holder")


def read_holder(path: Path) -> IndexHolder:
    """The holder record beside the lock ``path`` (fields missing: unknown)."""
    try:
        data = json.loads(_record_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return IndexHolder(None, None, "")
    if not isinstance(data, dict):
        return IndexHolder(None, None, "")
    pid, started, command = data.get("pid"), data.get("started"), data.get("command")
    return IndexHolder(
        pid if isinstance(pid, int) else None,
        started if isinstance(started, str) else None,
        command if isinstance(command, str) else "",
    )


def _command() -> str:
    """What runs the index, in a few words (``engram index``, ``engram engine``)."""
    name = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
    if name in ("__main__.py", "engram", "engram.exe"):
        name = "engram"
    words = [name, *(w for w in sys.argv[1:2] if not w.startswith("-"))]
    text = " ".join(words)
    return "".join(ch if ch.isprintable() else "?" for ch in text)[:80]


def _write_holder(path: Path) -> None:
    started = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    record = {"pid": os.getpid(), "started": started, "command": _command()}
    with suppress(OSError):  # the record only names the holder; the lock is what counts
        _record_path(path).write_text(json.dumps(record), encoding="utf-8")


def is_running(workspace: Workspace) -> IndexHolder | None:
    """The run that indexes the workspace now, or None (a probe: taken and let go)."""
    from filelock import FileLock, Timeout

    path = lock_path(workspace)
    if not path.exists():
        return None
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return read_holder(path)
    except OSError:
        return None
    lock.release()
    return None


@contextmanager
def index_lock(
    workspace: Workspace,
    *,
    wait: bool = True,
    cancel: Callable[[], bool] | None = None,
    on_wait: Callable[[IndexHolder], None] | None = None,
) -> Iterator[bool]:
    """Hold the workspace's index lock for the ``with`` block; yields True when held.

    Yields False when ``cancel`` said stop while waiting (the caller indexes nothing).
    ``on_wait`` hears once who holds it when the run has to wait; without ``wait`` a busy
    lock raises :class:`IndexBusy`. Re-entrant within a thread (a nested run would wait
    for itself). A workspace whose ``.engram/`` cannot be written runs unlocked: it
    cannot store an index either, and says so itself.
    """
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield True
        finally:
            _held.depth -= 1
        return
    from filelock import FileLock, Timeout

    try:
        path = workspace.ensure_engram_dir() / LOCK_NAME
    except (OSError, WorkspaceError) as exc:
        log.debug("index lock not taken (%s)", exc)
        yield True
        return
    lock = FileLock(str(path))
    told = False
    while True:
        try:
            lock.acquire(timeout=0)
            break
        except Timeout:
            pass
        except OSError as exc:  # a read-only .engram/: as above
            log.debug("index lock not taken (%s)", exc)
            yield True
            return
        holder = read_holder(path)
        if not wait:
            raise IndexBusy(holder)
        if not told:
            told = True
            log.info("an index of %s is running (%s); waiting", workspace.root, holder.describe())
            if on_wait is not None:
                on_wait(holder)
        if cancel is not None and cancel():
            yield False
            return
        time.sleep(POLL_SECONDS)
    try:
        _write_holder(path)
        _held.depth = 1
        yield True
    finally:
        _held.depth = 0
        lock.release()


__all__ = [
    "IndexBusy",
    "IndexHolder",
    "index_lock",
    "is_running",
    "lock_path",
    "read_holder",
]
