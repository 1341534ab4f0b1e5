"""How Engram starts a Python child: :func:`python_argv`, the interpreter with ``-P``.

``python -m engram`` and ``python -c`` put the working directory first on ``sys.path``, and
Engram's children start inside a repository: the language server's and a hook's working
directory is the workspace, and background jobs (``engram.jobs``) are started there. So an
``engram/`` folder or an ``attrs.py`` committed to a cloned repository was imported instead
of the installed package: running ``engram search`` in such a clone ran the repository's code
in the engine it spawned (docs/security.md, "Python children"). ``-P`` (Python 3.11, the
oldest Engram supports) leaves the working directory off ``sys.path``.

Standard library only: the forwarding CLI spawns the engine with it before importing more.
"""

from __future__ import annotations

import sys

#: the flag that keeps the working directory (a repository) off a child's ``sys.path``
SAFE_PATH_FLAG = "-P"


def python_argv() -> list[str]:
    """``[sys.executable, "-P"]``: what every Python child of Engram starts with."""
    return [sys.executable, SAFE_PATH_FLAG]


__all__ = ["SAFE_PATH_FLAG", "python_argv"]
