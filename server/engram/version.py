"""The version ``engram --version`` prints: the release and, when known, the commit.

A wheel built from a checkout records its commit in ``engram/_build_info.py`` (written by the
build hook in ``setup.py``; docs/install.md). An editable install runs from the checkout itself,
so its commit is read from git at the time of asking (the recorded one would go stale). Only
the standard library, and only when asked: nothing here runs on a request path.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from engram import __version__

_PACKAGE = Path(__file__).resolve().parent


def checkout_commit(package_dir: Path = _PACKAGE) -> str | None:
    """``abc1234567`` (``-modified`` when the tree has changes) if this package runs from
    its own git checkout; None otherwise, e.g. installed into a project that is a git repo."""
    try:
        top = subprocess.run(
            ["git", "-C", str(package_dir), "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        if top.returncode != 0:
            return None
        ours = Path(top.stdout.strip()) / "server" / "engram" / "__init__.py"
        if not ours.exists() or ours.resolve() != package_dir / "__init__.py":
            return None
        described = subprocess.run(
            ["git", "-C", str(package_dir), "describe", "--always", "--dirty", "--abbrev=10"],
            capture_output=True,
            text=True,
            timeout=5,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    text = described.stdout.strip()
    if described.returncode != 0 or not text:
        return None
    return text.replace("-dirty", "-modified")


def built_commit() -> str | None:
    """The commit a wheel was built from, if the build recorded one."""
    try:
        from engram import _build_info  # type: ignore[attr-defined,unused-ignore]
    except ImportError:
        return None
    commit = getattr(_build_info, "COMMIT", None)
    return commit if isinstance(commit, str) and commit else None


def version_string() -> str:
    """``0.1.0`` or ``0.1.0 (commit abc1234567)``."""
    commit = checkout_commit() or built_commit()
    return f"{__version__} (commit {commit})" if commit else __version__
