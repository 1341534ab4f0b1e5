"""The workspace a command is about: the git root enclosing a directory.

Standard library only, because a forwarding ``engram`` process (``engram.daemon.forward``)
must know the workspace, and so the engine to call, before it imports anything else.
``engram.workspace`` re-exports :func:`find_workspace_root`.
"""

from __future__ import annotations

from pathlib import Path


def find_workspace_root(start: Path) -> Path:
    """The enclosing git root of ``start``, or ``start`` itself outside git."""
    start = start.resolve()
    probe = start if start.is_dir() else start.parent
    for candidate in (probe, *probe.parents):
        if (candidate / ".git").exists():
            return candidate
    import subprocess

    try:
        out = subprocess.run(
            ["git", "-C", str(probe), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if out.returncode == 0 and out.stdout.strip():
            return Path(out.stdout.strip()).resolve()
    except (OSError, subprocess.TimeoutExpired):
        pass
    return probe


__all__ = ["find_workspace_root"]
