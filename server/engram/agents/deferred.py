"""What an ``engram hook`` does after its answer is out (docs/agents.md, "Hook latency").

A hook is a fresh process per agent tool call, and the agent waits for it to exit. Queueing
the payload for the observer (which imports the secret redaction, dozens of regular
expressions) and starting background jobs need not hold up the answer: :func:`run_detached`
runs them in a child forked once the answer is written. Standard library only, imported on
the hook's answering path.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from engram.workspace import Workspace

    OnError = Callable[[Exception], None]

#: Serialises the deferred children of one workspace's hooks (see :func:`run_detached`).
INBOX_LOCK = "inbox.lock"


def run_all(work: Sequence[Callable[[], None]], on_error: OnError) -> None:
    """Each step of ``work`` in order; a failure goes to ``on_error`` and the rest still run."""
    for step in work:
        try:
            step()
        except Exception as exc:  # the answer is out already; a failure is only reported
            on_error(exc)


def run_detached(
    workspace: Workspace, work: Sequence[Callable[[], None]], on_error: OnError
) -> None:
    """Run ``work`` in a forked child that outlives this process, after the answer is out.

    The children run in the order the hooks came: this process takes
    ``.engram/agents/inbox.lock`` (waiting for an earlier hook's child still at work, which
    is rare: its work takes milliseconds, the agent's next tool call longer) and the child
    inherits it, holding it until it is done (the descriptor is close-on-exec, so a job the
    child starts does not hold it). The child leaves the agent's stdio (Claude Code reads the
    hook's stdout to its end) and session at once. Where ``fork`` fails or is missing
    (Windows) the work runs here.
    """
    if not hasattr(os, "fork"):
        run_all(work, on_error)
        return
    import fcntl

    fd = -1
    try:
        lock = workspace.engram_dir / "agents" / INBOX_LOCK
        lock.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
    except OSError as exc:
        on_error(exc)  # unordered is better than not queued at all
    try:
        pid = os.fork()
    except OSError:
        run_all(work, on_error)
        pid = -1
    if pid != 0:  # this process (or no child): the lock goes with the child, if any
        if fd >= 0:
            os.close(fd)
        return
    try:
        os.setsid()
        null = os.open(os.devnull, os.O_RDWR)
        for target in (0, 1, 2):
            os.dup2(null, target)
        run_all(work, on_error)
    finally:
        os._exit(0)  # no atexit handlers, no second flush of the parent's buffers


def wait_for_queued(workspace: Workspace) -> None:
    """Return once the deferred work of every ``engram hook`` that already answered in this
    workspace is done (its payload queued, its job started): the lock each hook's child
    holds until then is taken once. For whoever reads the inbox right after a hook (tests,
    benchmarks); the drain needs no wait (the Stop child queues before it starts one)."""
    if not hasattr(os, "fork"):
        return  # no deferred children there: the hook did its work before it returned
    import fcntl

    lock = workspace.engram_dir / "agents" / INBOX_LOCK
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # no hook ever deferred anything here
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
    finally:
        os.close(fd)


__all__ = ["INBOX_LOCK", "run_all", "run_detached", "wait_for_queued"]
