"""The one way Engram starts ``engram …`` in a child process: locked and reaped.

Agent hooks start the observer drain and the digest rebuild in the background; the language
server starts ``engram index`` for the embeddings. Both go through :func:`start`, so each
kind of job runs at most once per workspace at a time: the child holds
``.engram/agents/<job>.lock`` from before it starts until it exits. On POSIX the parent
takes it (``flock``, as ``filelock`` does there) and the child inherits it; elsewhere the
child takes the lock named in :data:`LOCK_ENV` (``filelock``, which works where ``fcntl``
does not) before it runs the command and quits quietly when another process has it. The
parent probes the same lock first so it does not start a child that would only quit. A
caller that waits (the language server) reaps its child with ``Popen.wait``; a detached
child (hooks) runs in its own session and is reaped by init when the short-lived hook
process is gone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from engram.interpreter import python_argv
from engram.workspace import Workspace

log = logging.getLogger(__name__)

#: Names the lock file a child ``engram`` process holds while it runs (set by :func:`start`).
LOCK_ENV = "ENGRAM_JOB_LOCK"


def lock_path(workspace: Workspace, job: str) -> Path:
    return workspace.engram_dir / "agents" / f"{job}.lock"


def is_running(workspace: Workspace, job: str) -> bool:
    """Whether a job of this kind holds its lock now (a probe: taken and released at once)."""
    from filelock import FileLock, Timeout

    path = lock_path(workspace, job)
    if not path.exists():
        return False
    lock = FileLock(str(path))
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return True
    lock.release()
    return False


def start(
    workspace: Workspace,
    job: str,
    args: Sequence[str],
    *,
    log_name: str,
    stdin_text: str | None = None,
    env: Mapping[str, str] | None = None,
    detach: bool = False,
    lower_priority: bool = False,
) -> subprocess.Popen[bytes] | None:
    """``engram ARGS --workspace ROOT`` as a child holding the ``job`` lock, or ``None`` when
    a job of this kind already runs. Its stdout is dropped, stderr goes to
    ``.engram/logs/<log_name>``; ``stdin_text`` is written to it and stdin closed."""
    if is_running(workspace, job):
        return None
    workspace.ensure_engram_dir()  # never a lock or log written through a repository's link
    lock = lock_path(workspace, job)
    lock.parent.mkdir(parents=True, exist_ok=True)
    logs = workspace.engram_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    child_env = {**os.environ, **(env or {})}
    child_env.pop(LOCK_ENV, None)
    handed = _take_for_child(lock)
    if handed is None and os.name == "posix":
        return None  # another process took it since the probe
    if handed is None:
        child_env[LOCK_ENV] = str(lock)  # no lock to hand over: the child takes it itself
    try:
        with (logs / log_name).open("ab") as log_file:
            proc = subprocess.Popen(
                [*python_argv(), "-m", "engram", *args, "--workspace", str(workspace.root)],
                stdin=subprocess.PIPE if stdin_text is not None else subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log_file,
                cwd=workspace.root,
                env=child_env,
                start_new_session=detach,
                preexec_fn=_lower_priority if lower_priority and os.name == "posix" else None,
                pass_fds=(handed,) if handed is not None else (),
            )
    finally:
        if handed is not None:
            os.close(handed)  # the child keeps its inherited copy, and with it the lock
    if stdin_text is not None and proc.stdin is not None:
        try:
            proc.stdin.write(stdin_text.encode("utf-8"))
            proc.stdin.close()
        except OSError as exc:  # the child died at once; its stderr went to the log
            log.warning("background engram %s failed to start: %s", list(args), exc)
    return proc


def _take_for_child(lock: Path) -> int | None:
    """On POSIX, the job's lock taken here and handed to the child as an inherited file
    descriptor (``flock``, the lock ``filelock`` takes there too): it is held from before the
    child starts until it exits, so no second job slips in while the child boots and a waiter
    never sees the lock free too early. ``None`` where that is not possible, or when another
    process holds it."""
    if os.name != "posix":
        return None
    import fcntl

    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


@contextlib.contextmanager
def held_by_this_process(environ: Mapping[str, str] | None = None) -> Iterator[bool]:
    """In the child: hold the lock :func:`start` named for the whole run.

    Yields False when another process holds it (a job of this kind already runs: the caller
    returns at once), True otherwise, and True when no lock was asked for.
    """
    source = environ if environ is not None else os.environ
    path = source.get(LOCK_ENV)
    if not path:
        yield True
        return
    if environ is None:
        os.environ.pop(LOCK_ENV, None)  # never inherited by what this job starts (the engine)
    from filelock import FileLock, Timeout

    lock = FileLock(path)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        yield False
        return
    try:
        yield True
    finally:
        lock.release()


def _lower_priority() -> None:
    """In the background child: yield the CPU to the editor (``nice 10``) and, on Linux,
    end with the parent if it dies without a shutdown (no orphaned indexing)."""
    with contextlib.suppress(OSError):
        os.nice(10)
    if sys.platform.startswith("linux"):
        with contextlib.suppress(Exception):
            import ctypes
            import signal

            pr_set_pdeathsig = 1
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGTERM)


__all__ = ["LOCK_ENV", "held_by_this_process", "is_running", "lock_path", "start"]
