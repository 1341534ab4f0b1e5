"""What an approval of a workspace MCP server looked at: the files it runs.

A cloned repository's ``.mcp.json`` names a program and its arguments; the approval's
configuration hash (:attr:`~engram.mcphub.sources.ServerSpec.config_hash`) covers that
command line, and :func:`files_digest` covers the workspace files the server runs, so a
pull that changes its code asks for a new look (docs/security.md, "Workspace trust"; stop
30 pinned the files the command line names, stop 31 what they load from their folder).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
from collections.abc import Sequence
from pathlib import Path

from engram.gitroot import SAFE_GIT_CONFIG, unsafe_git_file
from engram.mcphub.sources import ServerSpec, UnresolvedVariable, expand

#: Engram's own data in a workspace: never code a server runs, and it changes all the time
_NOT_RUN = (".git", ".engram", ".engram-team")
#: skipped outside git too, where nothing says what is the person's own: caches that change
#: with every run, and installed packages (a pull in git brings what it tracks there)
_NOT_WALKED = frozenset({*_NOT_RUN, "__pycache__", "node_modules", ".venv", "venv"})


def files_run(spec: ServerSpec, workspace_root: Path) -> list[Path]:
    """The workspace's files a stdio server runs (:func:`_pinned`)."""
    return list(_pinned(spec, workspace_root))


def _pinned(spec: ServerSpec, workspace_root: Path) -> dict[Path, str]:
    """The workspace's files a stdio server runs, each with git's object id of it ("" for
    a file read from disk): each file its command line names (the
    command itself, each argument or the value of ``--opt=value``, the module of ``-m
    pkg.mod``, resolved from the server's working directory, kept when a regular file inside
    the workspace), and every file the repository tracks in the folder of each (for ``-m``,
    in the working directory), at any depth.

    The configuration's hash covers the command line, not what it runs: a server approved as
    ``python3 srv.py`` ran whatever a later pull put in ``srv.py`` (stop 30), and, until
    stop 31, whatever it put in the ``helper.py`` that ``srv.py`` imports. What a script
    loads without naming a path comes from its own folder (Python puts the script's folder
    first on ``sys.path``, ``-m`` the working directory; Node resolves ``./helper`` from
    the script's folder; a committed ``__pycache__/*.pyc`` is code too), so those folders
    are what the approval looked at (docs/security.md)."""
    if spec.transport != "stdio" or spec.scope != "workspace":
        return {}
    root = workspace_root.resolve()

    def ex(text: str) -> str:
        return expand(text, environ=os.environ, workspace_root=root, home=Path.home())

    try:
        cwd = Path(ex(spec.cwd)) if spec.cwd else root
        words = [ex(w) for w in [spec.command or "", *spec.args]]
        env = {key: ex(value) for key, value in spec.env.items()}
    except UnresolvedVariable:
        return {}
    if not cwd.is_absolute():
        cwd = root / cwd
    names: list[str] = []
    folders: list[Path] = []
    importable: list[Path] = []
    for key, value in env.items():
        # what the server's environment names runs too (stop 33): ``python3 -m srv`` with
        # ``PYTHONPATH=src`` runs ``src/srv.py``, which no argument names, and
        # ``NODE_OPTIONS=--require ./hook.js`` a file of the workspace; each entry of a
        # search path, and each word of a value, counts as an argument does
        for entry in value.split(os.pathsep) if key in _SEARCH_PATHS else value.split():
            names.append(entry.partition("=")[2] if entry.startswith("-") else entry)
            if key == "PYTHONPATH" and entry:
                importable.append(cwd / entry)  # the working directory's rule for ``-m``
    for before, word in zip(["", *words], words, strict=False):
        if before == "-m" and re.fullmatch(r"[\w.]+", word):
            module = word.replace(".", "/")
            names += [f"{module}.py", f"{module}/__main__.py", f"{module}/__init__.py"]
            importable.append(cwd)
        names.append(word.partition("=")[2] if word.startswith("-") else word)
    names += _npx_package(words, cwd)
    found: list[Path] = []
    for name in names:
        if not name or "\0" in name or len(name) > 4096:
            continue
        try:
            real = (cwd / name).resolve()
            if not real.is_relative_to(root):
                continue
            if real.is_file() and real not in found:
                found.append(real)
                folders.append(real.parent)
            elif real.is_dir() and real != root and real != cwd.resolve():
                # a folder named as the program: ``python3 tools/srv`` runs its
                # ``__main__.py``, ``node tools/srv`` its ``index.js``, ``uvx --from
                # ./tools/pkg``, ``npx`` a committed package: all of it is what runs
                folders.append(real)
        except (OSError, ValueError, RuntimeError):
            continue
    pinned = dict.fromkeys(found, "")  # named: their bytes are read
    for path, oid in [*_tracked_under(root, folders).items(), *_importable_from(root, importable)]:
        pinned.setdefault(path, oid)
    return pinned


def _npx_package(words: Sequence[str], cwd: Path) -> list[str]:
    """For ``npx [options] NAME``: the workspace's ``node_modules/NAME`` (and its ``.bin``
    entry), which npx runs instead of the registry's package when the folder has one. A
    repository that commits it makes a pull's change to it the server's code (stop 32)."""
    if not words or Path(words[0]).name not in ("npx", "npx.cmd"):
        return []
    name = next((w for w in words[1:] if not w.startswith("-")), "")
    if name.startswith("@"):  # a scope: @org/pkg@1.2 is @org/pkg
        scope, _, rest = name.partition("/")
        name = f"{scope}/{rest.partition('@')[0]}" if rest else ""
    else:
        name = name.partition("@")[0]
    if not re.fullmatch(r"(@[\w.-]+/)?[\w.-]+", name or "-"):
        return []
    return [f"node_modules/{name}", f"node_modules/.bin/{name.rpartition('/')[2]}"]


#: environment variables whose value is a list of folders a program loads code from
_SEARCH_PATHS = frozenset({"PYTHONPATH", "NODE_PATH"})

#: what ``import name`` loads from a folder on ``sys.path`` besides packages
_MODULE_SUFFIXES = (".py", ".pyc", ".pyw", ".so", ".pyd")


def _importable_from(root: Path, folders: Sequence[Path]) -> list[tuple[Path, str]]:
    """What ``import`` can load from ``folders`` as the first entry of ``sys.path`` (``-m``
    puts the working directory there): its modules and its packages (folders holding an
    ``__init__``), which shadow installed ones of the same name, so a pull that adds a
    ``json.py`` beside a ``python -m server`` runs it. Other files of the folder are not."""
    found: list[tuple[Path, str]] = []
    for base in filter(None, map(_real, folders)):
        files = _tracked_under(root, [base])
        packages = {
            path.parent.relative_to(base).parts[0]
            for path in files
            if path.is_relative_to(base)
            and len(path.relative_to(base).parts) == 2
            and path.stem == "__init__"
        }
        for path, oid in files.items():
            parts = path.relative_to(base).parts if path.is_relative_to(base) else ()
            if (len(parts) == 1 and path.suffix in _MODULE_SUFFIXES) or (
                len(parts) > 1 and parts[0] in packages
            ):
                found.append((path, oid))
    return found


def _real(folder: Path) -> Path | None:
    """``folder`` with its links resolved; ``None`` for a loop or a name too long."""
    try:
        return folder.resolve()
    except (OSError, RuntimeError):
        return None


def _tracked_under(root: Path, folders: Sequence[Path]) -> dict[Path, str]:
    """The files inside ``root`` under ``folders`` that git tracks, each with the object id
    git's index holds for it, or of its bytes when the working tree changed it
    (:func:`_git_tracked`; outside git: every regular file there, read from disk),
    Engram's own data and git's excepted. Untracked files are the person's own (a pull
    brings tracked ones), and their caches change with every run. Git's ids spare reading
    every byte of a large folder (27,674 files of babel's root: 16.7 s read and hashed at
    load 12; scripts/bench/mcp_pinned_files.py); a pull or a checkout rewrites them."""
    inside: list[str] = []
    for where in filter(None, map(_real, folders)):
        if where.is_relative_to(root) and where.is_dir():
            inside.append(where.relative_to(root).as_posix())
    if not inside:
        return {}
    listed = _git_tracked(root, sorted(set(inside)))
    if listed is None:
        listed = {}
        for rel_folder in sorted(set(inside)):
            for dirpath, dirnames, filenames in os.walk(root / rel_folder):
                dirnames[:] = [d for d in dirnames if d not in _NOT_WALKED]
                for name in filenames:
                    listed[os.path.relpath(os.path.join(dirpath, name), root)] = ("", "")
    kept: dict[Path, str] = {}
    for rel, (mode, oid) in sorted(listed.items()):
        if rel.split("/", 1)[0] in _NOT_RUN or mode == "160000":  # a submodule: no file
            continue
        if mode and mode != "120000":  # git tracks nothing through a link: only a link moves
            kept[root / rel] = oid
            continue
        try:
            real = (root / rel).resolve()
            if real.is_relative_to(root) and real.is_file():
                kept[real] = ""  # a link, or outside git: its target's bytes are read
        except (OSError, ValueError, RuntimeError):
            continue
    return kept


def _git_tracked(root: Path, folders: Sequence[str]) -> dict[str, tuple[str, str]] | None:
    """``git ls-files --stage`` of ``folders`` (paths relative to ``root``): each path's
    mode and object id; of a file the working tree may have changed (``git diff-files``,
    by its stat data), the id of what it holds now (:func:`_blob_id`); ``None`` outside git.

    The index's id says nothing of a change made in the working tree alone (a patch
    applied with ``git apply``, a stash popped, an agent's edit): the changed ``helper.py``
    beside an approved server ran under the old approval (stop 32). The id of its bytes is
    the index's own when nothing changed (a file merely touched keeps its approval)."""
    # side by side: diff-files compares stat data only (its lstat of babel's 27,674 files
    # ~1 s at load 15; ls-files -m also re-reads what it doubts, 3-4x that), and a file
    # it doubts is read, never skipped
    if unsafe_git_file(str(root)) is not None:  # git would wait on it: read every byte
        return None
    both = _git(root, [["ls-files", "-z", "--stage", "--", *folders],
                       ["diff-files", "--name-only", "-z", "--", *folders]])  # fmt: skip
    if both is None:
        return None
    staged, modified = both
    changed = set(modified)
    listed: dict[str, tuple[str, str]] = {}
    for entry in staged:
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if path and len(fields) == 3:  # "mode oid stage"; a conflict lists each stage
            mode, oid = fields[0], fields[1]
            before = listed.get(path)
            listed[path] = (mode, oid if before is None else before[1] + "," + oid)
    for path in changed.intersection(listed):
        mode, oid = listed[path]
        if mode not in ("120000", "160000"):  # a link's target is read, a submodule skipped
            listed[path] = (mode, _blob_id(root / path, "sha256" if len(oid) == 64 else "sha1"))
    return listed


def _blob_id(path: Path, algorithm: str) -> str:
    """The object id git gives the bytes of ``path`` (``git hash-object``, without its
    filters), read in pieces; a FIFO or a device is never read."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return f"unreadable: {exc.strerror}"
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        digest = hashlib.new(algorithm, f"blob {info.st_size}\0".encode())
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _git(root: Path, commands: Sequence[Sequence[str]]) -> list[list[str]] | None:
    """Git commands run at once in ``root``, each one's ``-z`` output as its entries;
    ``None`` when one fails (outside git)."""
    started: list[subprocess.Popen[bytes]] = []
    try:
        for args in commands:
            started.append(
                subprocess.Popen(
                    ["git", *SAFE_GIT_CONFIG, "-C", str(root), *args],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                )
            )
        outputs = [proc.communicate(timeout=60)[0] for proc in started]
    except (OSError, subprocess.TimeoutExpired):
        return None
    finally:
        for proc in started:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if any(proc.returncode != 0 for proc in started):
        return None
    return [[e for e in out.decode("utf-8", "surrogateescape").split("\0") if e] for out in outputs]


def files_digest(spec: ServerSpec, workspace_root: Path) -> str:
    """SHA-256 over the path and content of each file of :func:`files_run` (the bytes of a
    file the command line names; git's object id of a tracked file beside it); ``""`` when
    the command line names none (an approval made before stop 30 still holds for those)."""
    files = _pinned(spec, workspace_root)
    if not files:
        return ""
    root = workspace_root.resolve()
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(str(path.relative_to(root)).encode("utf-8", "surrogateescape") + b"\0")
        oid = files[path]
        digest.update(f"git {oid}".encode() if oid else _file_sha256(path))
    return digest.hexdigest()


def _file_sha256(path: Path) -> bytes:
    """SHA-256 of every byte of a regular file, read in pieces (a bundled server may be
    large: until stop 31 only its first 16 MB counted, so a change past them kept the
    approval); a FIFO or a device is never read (it could block or never end)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return hashlib.sha256(f"unreadable: {exc.strerror}".encode()).digest()
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return hashlib.sha256(b"not a regular file").digest()
        return hashlib.file_digest(handle, "sha256").digest()


__all__ = ["files_digest", "files_run"]
