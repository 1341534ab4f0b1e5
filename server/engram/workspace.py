"""The workspace: the project Engram serves, and its private ``.engram/`` folder.

Confinement lives here, in one function (:func:`confine`): every path that crosses a boundary
(CLI argument, LSP command argument, MCP tool argument, a team file's anchor) and every file
Engram reads for indexing, chunking, project facts or anchors goes through it (through
:meth:`Workspace.resolve` / :meth:`Workspace.read_bytes`, or the file listing of
:mod:`engram.codegraph.walk`), so nothing outside the workspace is ever read or written, even
through a symlink the repository carries (docs/security.md). Every path Engram stores is
POSIX and relative to the root, so that memories survive a clone to another directory or OS.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
from pathlib import Path

from engram.gitroot import SAFE_GIT_CONFIG, find_workspace_root, unsafe_git_file

ENGRAM_DIR = ".engram"
#: What makes a folder "set up" for Engram: its own store, or the team folder a repository
#: commits (``team.dir``'s default). An editor serves a folder only when one is there,
#: and never creates them on its own (docs/lsp.md "Which folders are served").
SET_UP_MARKERS = (ENGRAM_DIR, ".engram-team")
_GITIGNORE_TEXT = (
    "# Engram's local store: never commit it (share memories with `engram export`).\n*\n"
)


class WorkspaceError(ValueError):
    """A path or workspace cannot be used; the message is one line for the user."""


#: files of ``.engram/`` a repository may commit: its settings, and the ``.gitignore``
#: Engram writes (so a clone that carries it carries nothing of anyone's store)
COMMITTABLE_ENGRAM_FILES = frozenset({f"{ENGRAM_DIR}/config.toml", f"{ENGRAM_DIR}/.gitignore"})


def committed_engram_data(root: Path) -> tuple[str, ...]:
    """Files of Engram's own data in ``root/.engram`` that git tracks (sorted, relative).

    ``.engram/`` holds one person's stores (memories, their audit trail, the digest hooks
    read, the graph, code chunks), and Engram's ``.gitignore`` keeps them out of git. A
    repository that commits them anyway (``git add -f .engram``) hands every clone a store
    someone else wrote, whose memories would speak as the cloning user's own: "verified",
    "user_taught", Critical in context packs and agent hooks (docs/security.md, "A store that
    came with the clone"). Cheap when nothing is tracked there, since hooks ask on every call:
    git's index (versions 2 and 3 keep every path whole) is searched for ``.engram/`` first,
    and ``git ls-files`` runs only when it is there or the index is compressed (version 4).
    Answers are cached per index state (its size and modification time), in the process
    and, for a large index, in the user's cache directory (hooks are a process per call).

    ``.engram`` may itself be a link the repository commits, to a folder of its own that
    holds a store (``notes/memories.lance`` …): git's index then has ``.engram`` and
    ``notes/…``, never ``.engram/…``, and that store was read as the user's (the lead's
    walk, stop 28). The link counts as committed data, and so does what git tracks under
    the folder it resolves to (named ``.engram/…`` like the rest, so the files Engram lets a
    repository commit are told apart the same way).
    """
    index = _git_index(root)
    if index is None:
        return ()
    try:
        info = index.stat()
    except OSError:
        return ()
    linked = _linked_store_folder(root)
    if info.st_size < _REMEMBERED_INDEX_BYTES:
        return _committed_engram_data(str(root), str(index), info.st_size, info.st_mtime_ns, linked)
    # a large index (58k files: 15.7 MB, 45-100 ms to read and search) is read once per
    # change of it; the answer is kept in the user's cache, where a repository cannot write
    import hashlib
    import json

    cache_home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    key = hashlib.sha256(str(root).encode("utf-8", "surrogateescape")).hexdigest()[:32]
    remembered = Path(cache_home) / "engram" / "committed-data" / f"{key}.json"
    stamp = [str(root), info.st_size, info.st_mtime_ns, linked]
    try:
        kept = json.loads(remembered.read_text(encoding="utf-8"))
        if kept.get("index") == stamp and isinstance(kept.get("found"), list):
            return tuple(str(name) for name in kept["found"])
    except (OSError, ValueError, AttributeError):
        pass
    found = _committed_engram_data(str(root), str(index), info.st_size, info.st_mtime_ns, linked)
    try:
        remembered.parent.mkdir(parents=True, exist_ok=True)
        remembered.write_text(json.dumps({"index": stamp, "found": list(found)}), "utf-8")
    except OSError:
        pass  # no cache: the next call reads the index again
    return found


#: below this an index is read on every call (under a millisecond); above, the answer is
#: remembered per index state in the user's cache
_REMEMBERED_INDEX_BYTES = 1 << 20


def _git_index(root: Path) -> Path | None:
    """``root``'s git index when ``root`` is a checkout's top (a ``.git`` folder, or the
    ``gitdir:`` file of a linked worktree); ``None`` otherwise (not a repository)."""
    dot_git = root / ".git"
    if dot_git.is_dir():
        return dot_git / "index"
    try:
        line = read_regular(dot_git, 4096).decode("utf-8", errors="replace").strip()
    except OSError:
        return None
    if not line.startswith("gitdir:"):
        return None
    git_dir = Path(line.removeprefix("gitdir:").strip())
    return (git_dir if git_dir.is_absolute() else root / git_dir) / "index"


def _linked_store_folder(root: Path) -> str | None:
    """Where ``root/.engram`` leads when it is a link to a folder inside ``root`` (relative,
    POSIX); ``None`` when it is no link or leads outside (writers refuse the latter:
    :func:`links_out_of_engram_dir`). One ``lstat`` when it is no link (hooks call this)."""
    link = root / ENGRAM_DIR
    if not link.is_symlink():
        return None
    real = os.path.realpath(link)
    prefix = str(root) + os.sep
    if not real.startswith(prefix):
        return None
    return Path(real).relative_to(root).as_posix()


@functools.lru_cache(maxsize=32)
def _committed_engram_data(
    root: str, index: str, size: int, mtime_ns: int, linked: str | None
) -> tuple[str, ...]:  # size, mtime_ns: the cache key
    try:
        data = read_regular(index)  # an archive's .git/index may be a FIFO: never blocks
    except OSError:
        return ()
    version = int.from_bytes(data[4:8], "big") if data[:4] == b"DIRC" else 0
    # v2/v3 keep each path whole, NUL-terminated: ".engram/x" or, for a committed link,
    # ".engram" itself; anything else cannot be tracked there
    needles = [f"{ENGRAM_DIR}/".encode(), f"{ENGRAM_DIR}\0".encode()]
    if linked is not None:
        needles.append(f"{linked}/".encode())
    if version in (2, 3) and not any(needle in data for needle in needles):
        return ()
    if unsafe_git_file(root) is not None:  # git would wait on it: the index's names are all
        return tuple(_indexed_engram_names(data, needles))
    import subprocess

    paths = [ENGRAM_DIR] if linked is None else [ENGRAM_DIR, linked]
    try:
        out = subprocess.run(
            ["git", *SAFE_GIT_CONFIG, "-C", root, "ls-files", "-z", "--cached", "--", *paths],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ()
    names = out.stdout.decode("utf-8", errors="replace").split("\0")
    if linked is not None:  # the folder's files as the store's: notes/config.toml is allowed
        names = [
            f"{ENGRAM_DIR}/{n[len(linked) + 1 :]}" if n.startswith(f"{linked}/") else n
            for n in names
        ]
    return tuple(sorted(n for n in names if n and n not in COMMITTABLE_ENGRAM_FILES))


def _indexed_engram_names(data: bytes, needles: list[bytes]) -> list[str]:
    """The NUL-ended names in git's index that start with one of ``needles`` (what
    ``git ls-files`` would say of ``.engram``, read from the bytes), less the files a
    repository may commit: for a workspace git must not be run in
    (:func:`engram.gitroot.unsafe_git_file`). A name that merely ends in ``.engram/…`` counts
    too: such a workspace's store is refused rather than read as the person's."""
    names: set[str] = set()
    for needle in needles:
        start = data.find(needle)
        while start >= 0:
            end = data.find(b"\0", start)
            name = data[start : end if end >= 0 else len(data)].decode("utf-8", "replace")
            if name not in COMMITTABLE_ENGRAM_FILES:
                names.add(name)
            start = data.find(needle, start + 1)
    return sorted(names)


#: longer paths are refused before touching the file system (PATH_MAX on Linux)
MAX_PATH_CHARS = 4096


#: the most Engram reads of a repository's settings or manifest file (``pyproject.toml``,
#: ``.engram/config.toml``, ``.mcp.json``, ``package.json``, a plugin named in settings):
#: hundreds of times any real one
MAX_SETTINGS_FILE_BYTES = 4 * 1024 * 1024


class NotReadable(OSError):
    """A file Engram will not read: not a regular file, or over the reader's limit. An
    ``OSError``, so every reader's "cannot read it" path names it: its ``str`` names the
    file and why, its ``strerror`` says why (``not a regular file``)."""

    def __init__(self, path: str | os.PathLike[str], reason: str) -> None:
        super().__init__(f"{_shown(path)} {reason}")
        self.strerror = reason


def read_regular(path: str | os.PathLike[str], limit: int | None = None) -> bytes:
    """The bytes of a regular file, refused (:class:`NotReadable`) before any read when it
    is anything else, or once it proves longer than ``limit`` bytes.

    A repository decides what its paths are: a committed link ``.mcp.json -> /dev/zero``
    made ``engram mcp status`` read until memory ran out, and a FIFO named
    ``pyproject.toml`` (an archive can carry one) blocked every command on its first read
    (stop 31). The file is opened without blocking (a FIFO opens at once) and its type
    checked on the open descriptor. Links are followed: callers confine the path first."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):  # what a plain read says of a folder
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise NotReadable(path, "is not a regular file")
        if limit is not None and info.st_size > limit:
            raise NotReadable(path, f"is larger than {limit:,} bytes")
        data = _read_all(fd) if limit is None else os.read(fd, limit + 1)
        if limit is not None and len(data) > limit:  # it grew while read
            raise NotReadable(path, f"is larger than {limit:,} bytes")
        return data
    finally:
        os.close(fd)


def _shown(path: object) -> str:
    """A path for an error line: never the whole of a hostile 10 MB argument."""
    text = str(path)
    return text if len(text) <= 120 else text[:117] + "..."


def confine(root: Path, path: str | os.PathLike[str]) -> Path:
    """``path`` (relative to ``root``, or absolute) as a real path inside ``root``.

    The one confinement check: symlinks are resolved first, so a link that points outside
    (``src/settings.py -> ~/.aws/credentials``) is refused like ``../../x``. Raises
    :class:`WorkspaceError` with one short line. ``root`` must already be resolved.
    """
    text = os.fspath(path)
    if "\0" in text:
        raise WorkspaceError("a path contains a NUL byte")
    if len(text) > MAX_PATH_CHARS:
        raise WorkspaceError(f"a path is too long ({len(text)} characters)")
    raw = Path(text).expanduser()
    candidate = raw if raw.is_absolute() else root / raw
    try:
        resolved = candidate.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop, a name too long
        raise WorkspaceError(f"{_shown(path)} cannot be resolved: {exc}") from exc
    if resolved != root and root not in resolved.parents:
        raise WorkspaceError(f"{_shown(path)} is outside the workspace {root}")
    return resolved


def links_out_of_engram_dir(root: Path) -> list[str]:
    """Links in ``root/.engram`` that resolve outside ``root`` (workspace-relative names).

    ``.engram`` itself, its entries and the entries of its folders (``logs/``, ``agents/``,
    ``observer/``, the stores' ``*.lance/``): where Engram creates or appends to files by
    name. Deeper names are per session or generated, and a linked folder on the way to them
    is caught as an entry; a scan per call stays a few ``scandir`` (hooks call it).
    """
    base = root / ENGRAM_DIR
    prefix = str(root) + os.sep

    def outside(path: str) -> bool:
        real = os.path.realpath(path)
        return real != str(root) and not real.startswith(prefix)

    if base.is_symlink() and outside(str(base)):
        return [ENGRAM_DIR]
    found: list[str] = []
    folders = [str(base)]
    while folders:
        folder = folders.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:  # absent (nothing to check yet) or not a folder
            continue
        for entry in entries:
            if entry.is_symlink():
                if outside(entry.path):
                    found.append(Path(entry.path).relative_to(root).as_posix())
            elif folder == str(base) and entry.is_dir():
                folders.append(entry.path)
    return sorted(found)


class Workspace:
    """A project root (resolved). A plain immutable value, not an ``attrs`` class: the agent
    hooks (a fresh process per tool call) open one, and ``attrs`` costs them milliseconds."""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: Path) -> None:
        object.__setattr__(self, "root", root)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Workspace is immutable: cannot set {name}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"Workspace is immutable: cannot delete {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Workspace) and other.root == self.root

    def __hash__(self) -> int:
        return hash((Workspace, self.root))

    def __repr__(self) -> str:
        return f"Workspace(root={self.root!r})"

    def __reduce__(self) -> tuple[type[Workspace], tuple[Path]]:
        return (Workspace, (self.root,))

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

    @property
    def is_set_up(self) -> bool:
        """Whether someone set Engram up here: ``.engram/`` or ``.engram-team/`` exists
        (:data:`SET_UP_MARKERS`). The editors' rule: a folder without either is not served
        and gets nothing written until the user asks (``engram index`` there, VS Code's
        *Set Up This Folder*, Neovim's ``:EngramSetup``)."""
        return any(os.path.lexists(self.root / name) for name in SET_UP_MARKERS)

    def ensure_engram_dir(self) -> Path:
        """Create ``.engram/`` with its own ``.gitignore`` so the store is never committed.

        Every writer of Engram's files asks for the folder here, so this is where a
        repository's links are refused: a clone can commit ``.engram/report.html ->
        ~/.bashrc`` (``git add -f``) and ``engram report`` overwrote the link's target.
        ``.engram`` itself, its entries and those of ``logs/`` may not be links that resolve
        outside the workspace (:func:`links_out_of_engram_dir`; one line, nothing written).
        """
        path = self.engram_dir
        found = links_out_of_engram_dir(self.root)
        if found:
            raise WorkspaceError(
                f"{found[0]} is a link to {_shown(os.path.realpath(self.root / found[0]))}, "
                "outside the workspace: Engram never writes through it; delete it"
                + (f" (and {len(found) - 1} more)" if len(found) > 1 else "")
            )
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

    def check_engram_data_is_own(self) -> None:
        """Refuse (:class:`WorkspaceError`, one line) to read a ``.engram/`` store that the
        repository commits: it came with the clone (:func:`committed_engram_data`). Every
        store of memories, their audit trail, the digest and code chunks asks here before
        it opens; the person is told how to start their own."""
        found = committed_engram_data(self.root)
        if found:
            raise WorkspaceError(
                f"this repository commits Engram's data ({found[0]}"
                + (f" and {len(found) - 1} more" if len(found) > 1 else "")
                + "): a store that came with a clone speaks for someone else, so Engram does "
                "not read it. In a clone, delete them; your own store committed by mistake: "
                "git rm -r --cached .engram (then git add .engram/config.toml if it has one)"
            )

    def resolve(self, path: str | os.PathLike[str]) -> Path:
        """An absolute path inside the workspace, or :class:`WorkspaceError`.

        Relative paths are taken from the root. Symlinks are resolved before the check,
        so a link that points outside is refused too.
        """
        return confine(self.root, path)

    def read_bytes(self, path: str | os.PathLike[str]) -> bytes:
        """The bytes of a file inside the workspace; a link pointing out is refused.

        Raises :class:`WorkspaceError` for a path outside, ``OSError`` when unreadable or
        not a regular file (:func:`read_regular`).
        """
        return read_regular(self.resolve(path))

    def bulk_reader(self) -> BulkReader:
        """A reader for one pass over many listed files (an index run); see :class:`BulkReader`."""
        return BulkReader(self)

    def read_text(self, path: str | os.PathLike[str]) -> str:
        """:meth:`read_bytes` decoded as UTF-8 (undecodable bytes replaced)."""
        return self.read_bytes(path).decode("utf-8", errors="replace")

    def relative(self, path: str | os.PathLike[str]) -> str:
        """The POSIX path relative to the root, as memories and the graph store it."""
        resolved = self.resolve(path)
        rel = resolved.relative_to(self.root).as_posix()
        return rel or "."

    def uri_to_path(self, uri: str) -> Path:
        """A ``file://`` URI as a path inside the workspace."""
        path = uri_to_path(uri) if uri.startswith("file:") else Path(uri)
        if path is None:
            raise WorkspaceError(f"{uri} is not a file URI")
        return self.resolve(path)


def uri_to_path(uri: str) -> Path | None:
    """A ``file://`` URI as a path (``None`` for other schemes): ``pygls.uris.to_fs_path``,
    which knows Windows drive letters (``file:///C:/…``) and percent-encoding."""
    from pygls.uris import to_fs_path

    if not uri.startswith("file:"):
        return None
    path = to_fs_path(uri)
    return Path(path) if path else None


def _read_all(fd: int) -> bytes:
    """Everything ``fd`` reads: one ``os.read`` of its size and a byte more (which tells the
    end), then on until the end for a file that grew. ``os.fdopen(fd).read()`` builds two
    file objects and reads twice per file: about half the CPU of reading the 67k files of
    a cold index at 58k files (docs/codegraph.md, "a fourth pass")."""
    size = os.fstat(fd).st_size
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    parts = [data]
    while chunk := os.read(fd, 1 << 16):
        parts.append(chunk)
    return b"".join(parts)


class BulkReader:
    """:meth:`Workspace.read_bytes` for one pass over many files, confining each folder once.

    Resolving every path's symlinks was 5 % of a cold index (docs/codegraph.md, "At 50,000
    files"): a folder's real location is checked by :func:`confine` the first time one of
    its files is read, and the file itself is opened with ``O_NOFOLLOW``, so a file that is
    a link (or anything unusual: a folder outside, ``..``) goes through the full
    :meth:`Workspace.read_bytes` and gets exactly its answer. Keep one only for one pass: a
    folder replaced by a link later is seen by the next reader.
    """

    def __init__(self, workspace: Workspace) -> None:
        self._workspace = workspace
        #: folder (as listed) -> its real path, or None when only the full check may read it
        self._folders: dict[str, str | None] = {}

    def read_bytes(self, rel: str) -> bytes:
        folder, _, name = rel.rpartition("/")
        real = self._folder(folder)
        if real is None or name in ("", ".", "..") or "\0" in name:
            return self._workspace.read_bytes(rel)
        try:
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
            fd = os.open(f"{real}/{name}", flags)
        except OSError:  # a link (ELOOP), gone, unreadable: the full answer
            return self._workspace.read_bytes(rel)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):  # a FIFO, a folder: the full answer
                return self._workspace.read_bytes(rel)
            return _read_all(fd)
        except OSError:  # a folder (EISDIR), unreadable: the full answer
            return self._workspace.read_bytes(rel)
        finally:
            os.close(fd)

    def _folder(self, folder: str) -> str | None:
        """:meth:`_real_folder`'s answer for ``folder``, worked out once per pass."""
        real = self._folders.get(folder, "")
        if real == "":
            real = self._folders[folder] = self._real_folder(folder)
        return real

    def _real_folder(self, folder: str) -> str | None:
        """The folder's real path inside the root, or None (then each file gets the full check).

        A folder that is not itself a link, in a parent whose real path is known, is that
        path plus its name: one ``lstat`` instead of :func:`confine` resolving every part of
        the path again (23k folders at 58k files: docs/codegraph.md, "At 50,000 files").
        Anything else (a link, a missing folder, ``..``) takes :func:`confine`'s answer.
        """
        if folder.startswith("/") or "\0" in folder or len(folder) > MAX_PATH_CHARS:
            return None
        parent, _, name = folder.rpartition("/")
        if folder and name not in ("", ".", ".."):
            real_parent = self._folder(parent)
            if real_parent is not None:
                real = os.path.join(real_parent, name)
                try:
                    if not stat.S_ISLNK(os.lstat(real).st_mode):
                        return real
                except OSError:
                    pass
        try:
            return str(confine(self._workspace.root, folder or "."))
        except WorkspaceError:
            return None
