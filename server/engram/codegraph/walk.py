"""Which files of the workspace to index, honouring ``.gitignore``.

Inside git, ``git ls-files`` is the authority (tracked plus untracked-but-not-ignored files);
elsewhere the tree is walked with every ``.gitignore`` applied through ``pathspec``. Both
stream paths, so a large tree never sits in memory as parsed objects.
"""

from __future__ import annotations

import logging
import os
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

log = logging.getLogger(__name__)

#: Folders never worth indexing, whatever the ignore files say.
ALWAYS_SKIPPED_DIRS = frozenset(
    {".git", ".engram", "node_modules", ".venv", "venv", "__pycache__", ".hg", ".svn"}
)
#: Folders skipped outside git, where no .gitignore may exist to say so.
UNTRACKED_SKIPPED_DIRS = ALWAYS_SKIPPED_DIRS | frozenset(
    {".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", "target", "dist", "build"}
)


def _git_files(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(
            [
                "git",
                "-C",
                str(root),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return [p for p in out.stdout.decode("utf-8", errors="replace").split("\0") if p]


def _walk_files(root: Path) -> Iterator[str]:
    import pathspec

    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        if ".gitignore" in filenames:
            try:
                lines = (Path(dirpath) / ".gitignore").read_text(errors="replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except OSError:
                pass

        def ignored(rel: str, is_dir: bool) -> bool:
            for base, spec in specs:
                if base and not rel.startswith(base + "/"):
                    continue
                sub = rel[len(base) + 1 :] if base else rel
                if spec.match_file(sub + "/" if is_dir else sub):
                    return True
            return False

        kept = []
        for name in sorted(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if name in UNTRACKED_SKIPPED_DIRS or ignored(rel, True):
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not ignored(rel, False):
                yield rel


def iter_workspace_files(root: Path, exclude: Sequence[str] = ()) -> Iterator[str]:
    """Workspace-relative POSIX paths of every file not ignored, sorted within folders.

    The caller decides which of them to parse (manifests such as ``go.mod`` matter too).
    """
    import pathspec

    user_excludes = pathspec.GitIgnoreSpec.from_lines(list(exclude)) if exclude else None
    listed = _git_files(root) if (root / ".git").exists() else None
    paths: Iterator[str] = iter(sorted(listed)) if listed is not None else _walk_files(root)
    for rel in paths:
        parts = rel.split("/")
        if any(part in ALWAYS_SKIPPED_DIRS for part in parts[:-1]):
            continue
        if user_excludes is not None and user_excludes.match_file(rel):
            continue
        yield rel
