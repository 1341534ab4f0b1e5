"""Which files of the workspace to index, honouring ``.gitignore``.

Inside git, ``git ls-files`` is the authority (tracked plus untracked-but-not-ignored files);
elsewhere the tree is walked with every ``.gitignore`` applied through ``pathspec``. Both
stream paths, so a large tree never sits in memory as parsed objects.

Every listed path is confined (:func:`engram.workspace.confine`): a symlink the repository
carries that points outside the root (``src/settings.py -> ~/.aws/credentials``, a linked
folder) is never listed, so nothing downstream (graph, chunks, project facts) reads it; it is
reported to the caller instead (docs/security.md).
"""

from __future__ import annotations

import logging
import os
import subprocess
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from engram.gitroot import SAFE_GIT_CONFIG, unsafe_git_file
from engram.workspace import MAX_SETTINGS_FILE_BYTES, WorkspaceError, confine, read_regular

log = logging.getLogger(__name__)

#: Folders never worth indexing, whatever the ignore files say.
ALWAYS_SKIPPED_DIRS = frozenset(
    {".git", ".engram", "node_modules", ".venv", "venv", "__pycache__", ".hg", ".svn"}
)
#: Folders skipped outside git, where no .gitignore may exist to say so.
UNTRACKED_SKIPPED_DIRS = ALWAYS_SKIPPED_DIRS | frozenset(
    {".mypy_cache", ".ruff_cache", ".pytest_cache", ".tox", "target", "dist", "build"}
)


#: how often a listing git is looked at while it runs (:func:`_waits_on_a_fifo`)
_WATCH_SECONDS = 0.2


def _waits_on_a_fifo(pid: int) -> bool:
    """Whether process ``pid`` is blocked opening a FIFO (Linux's ``/proc``; elsewhere it
    never says so and the timeout applies)."""
    try:
        with open(f"/proc/{pid}/wchan", encoding="ascii", errors="replace") as f:
            return f.read().strip() in ("wait_for_partner", "fifo_open")
    except OSError:
        return False


def _git_files(root: Path) -> list[str] | None:
    """``git ls-files`` of tracked and untracked, not ignored files; ``None`` when git
    cannot say, and the tree is walked instead.

    git reads the ``.gitignore`` of every folder it walks with a plain ``open``: a FIFO of
    that name in any folder, which an archive can carry, holds it until the timeout
    (:func:`engram.gitroot.unsafe_git_file` checks git's own files and the top's; this
    one is anywhere). So git is watched while it runs, and stopped as soon as it waits on
    a FIFO: the walk reads ``.gitignore`` files without blocking."""
    if unsafe_git_file(str(root)) is not None:  # git would wait on it: walk the tree instead
        return None
    argv = ["git", *SAFE_GIT_CONFIG, "-C", str(root), "ls-files", "-z", "--cached", "--others",
            "--exclude-standard"]  # fmt: skip
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    except OSError:
        return None
    deadline = time.monotonic() + 60
    while True:
        try:
            out, _ = proc.communicate(timeout=_WATCH_SECONDS)
            break
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline or _waits_on_a_fifo(proc.pid):
                log.info("git ls-files stopped (it waited on a FIFO or timed out): walking")
                proc.kill()
                proc.communicate()
                return None
    if proc.returncode != 0:
        return None
    return [p for p in out.decode("utf-8", errors="replace").split("\0") if p]


def _walk_files(root: Path) -> Iterator[str]:
    import pathspec

    specs: list[tuple[str, pathspec.GitIgnoreSpec]] = []
    real_root = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = Path(dirpath).relative_to(root).as_posix()
        rel_dir = "" if rel_dir == "." else rel_dir
        if ".gitignore" in filenames:
            try:
                # a regular file inside: a link to /dev/zero or a FIFO would never end
                real = confine(real_root, Path(dirpath) / ".gitignore")
                data = read_regular(real, MAX_SETTINGS_FILE_BYTES)
                lines = data.decode("utf-8", errors="replace").splitlines()
                specs.append((rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
            except (OSError, WorkspaceError):
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
            if os.path.islink(os.path.join(dirpath, name)):
                yield rel  # never walked into; the confinement check reports it if it points out
                continue
            kept.append(name)
        dirnames[:] = kept
        for name in sorted(filenames):
            rel = f"{rel_dir}/{name}" if rel_dir else name
            if not ignored(rel, False):
                yield rel


class _Confinement:
    """Which listed paths stay inside the root once symlinks are resolved.

    A folder's verdict is cached, so a file costs one ``lstat`` unless it (or a folder above
    it) is a link; links go through :func:`engram.workspace.confine`.
    """

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self._prefix = f"{self.root}/"  # joined as strings: a Path per listed file costs
        self._dirs: dict[str, bool] = {"": True}

    def _dir_inside(self, rel_dir: str) -> bool:
        known = self._dirs.get(rel_dir)
        if known is None:
            parent = rel_dir.rpartition("/")[0]
            known = self._dir_inside(parent) and (
                not os.path.islink(self._prefix + rel_dir) or self._confined(rel_dir)
            )
            self._dirs[rel_dir] = known
        return known

    def _confined(self, rel: str) -> bool:
        try:
            confine(self.root, rel)
        except WorkspaceError:
            return False
        return True

    def inside(self, rel: str) -> bool:
        if not self._dir_inside(rel.rpartition("/")[0]):
            return False
        return not os.path.islink(self._prefix + rel) or self._confined(rel)


def iter_workspace_files(
    root: Path, exclude: Sequence[str] = (), outside: list[str] | None = None
) -> Iterator[str]:
    """Workspace-relative POSIX paths of every file not ignored, sorted within folders.

    The caller decides which of them to parse (manifests such as ``go.mod`` matter too).
    Paths whose real location is outside the root (through a symlink) are left out and
    appended to ``outside`` when given.
    """
    import pathspec

    user_excludes = pathspec.GitIgnoreSpec.from_lines(list(exclude)) if exclude else None
    listed = _git_files(root) if (root / ".git").exists() else None
    paths: Iterator[str] = iter(sorted(listed)) if listed is not None else _walk_files(root)
    confinement = _Confinement(root)
    for rel in paths:
        parts = rel.split("/")
        if any(part in ALWAYS_SKIPPED_DIRS for part in parts[:-1]):
            continue
        if user_excludes is not None and user_excludes.match_file(rel):
            continue
        if not confinement.inside(rel):
            if outside is not None:
                outside.append(rel)
            continue
        if listed is None and os.path.isdir(root / rel):
            continue  # a folder link that stays inside: its files are listed under their real path
        yield rel
