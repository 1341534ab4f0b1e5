"""The workspace: the project Engram serves, and its private ``.engram/`` folder.

Every path that crosses a boundary (CLI argument, LSP command argument, MCP tool argument)
goes through :meth:`Workspace.resolve` so that nothing outside the workspace is ever read
or written, and every path Engram stores is POSIX and relative to the root, so that
memories survive a clone to another directory or OS.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from engram.gitroot import find_workspace_root

ENGRAM_DIR = ".engram"
_GITIGNORE_TEXT = (
    "# Engram's local store: never commit it (share memories with `engram export`).\n*\n"
)


class WorkspaceError(ValueError):
    """A path or workspace cannot be used; the message is one line for the user."""


@attrs.define(frozen=True)
class Workspace:
    root: Path

    @classmethod
    def open(
        cls, path: str | os.PathLike[str] | None = None, *, discover: bool = True
    ) -> Workspace:
        """Open the workspace at ``path`` (default: the git root enclosing the cwd)."""
        if path is None:
            root = find_workspace_root(Path.cwd()) if discover else Path.cwd()
        else:
            root = Path(path).expanduser()
            if not root.exists():
                raise WorkspaceError(f"workspace {root} does not exist")
            if not root.is_dir():
                raise WorkspaceError(f"workspace {root} is not a directory")
        return cls(root.resolve())

    @property
    def engram_dir(self) -> Path:
        return self.root / ENGRAM_DIR

    def ensure_engram_dir(self) -> Path:
        """Create ``.engram/`` with its own ``.gitignore`` so the store is never committed."""
        path = self.engram_dir
        try:
            path.mkdir(parents=True, exist_ok=True)
            ignore = path / ".gitignore"
            if not ignore.exists():
                ignore.write_text(_GITIGNORE_TEXT, encoding="utf-8")
        except PermissionError as exc:
            raise WorkspaceError(f"cannot write to {path}: permission denied") from exc
        except OSError as exc:
            raise WorkspaceError(f"cannot create {path}: {exc.strerror or exc}") from exc
        return path

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """An absolute path inside the workspace, or :class:`WorkspaceError`.

        Relative paths are taken from the root. Symlinks are resolved before the check,
        so a link that points outside is refused too.
        """
        raw = Path(path).expanduser()
        candidate = raw if raw.is_absolute() else self.root / raw
        resolved = candidate.resolve()
        if resolved != self.root and self.root not in resolved.parents:
            raise WorkspaceError(f"{path} is outside the workspace {self.root}")
        return resolved

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The POSIX path relative to the root, as memories and the graph store it."""
        resolved = self.resolve(path)
        rel = resolved.relative_to(self.root).as_posix()
        return rel or "."

    def uri_to_path(self, uri: str) -> Path:
        """A ``file://`` URI as a path inside the workspace."""
        from urllib.parse import unquote, urlparse

        parsed = urlparse(uri)
        if parsed.scheme not in ("file", ""):
            raise WorkspaceError(f"{uri} is not a file URI")
        return self.resolve(unquote(parsed.path))
