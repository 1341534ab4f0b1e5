"""The workspace a command is about: the git root enclosing a directory.

Standard library only, because a forwarding ``engram`` process (``engram.daemon.forward``)
must know the workspace, and so the engine to call, before it imports anything else.
``engram.workspace`` re-exports :func:`find_workspace_root`.
"""

from __future__ import annotations

import os

#: ``typing`` costs a forwarding CLI milliseconds; mypy reads the names anyway
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

#: The options every git command Engram runs in a workspace starts with. A repository's
#: own ``.git/config`` is untrusted input (docs/security.md, "Git"): its ``core.fsmonitor``
#: names a command git runs whenever it refreshes the index, which ``ls-files --others``
#: (listing the workspace), ``status`` (the team folder's facts) and ``commit`` all do. A
#: ``git clone`` cannot carry that setting, but a workspace unpacked from an archive with
#: its ``.git``, or an embedded bare repository opened as a folder, can: ``engram index``
#: (and so opening such a folder in an editor) ran it. Command-line ``-c`` wins over every
#: config file.
#:
#: The same archive's config and hooks reach two more (stop 30): ``log.showSignature``
#: makes every ``git log`` (history mining, the team folder's facts) run ``gpg.program`` on
#: each commit carrying a signature header, which anyone can write into a commit; and
#: ``status`` writes git's index when timestamps changed (every file of an unpacked
#: archive), which runs the ``post-index-change`` hook of ``.git/hooks`` or
#: ``core.hooksPath``. ``--no-optional-locks`` keeps ``status`` from writing the index (the
#: switch editors use for their background ``status``); commands that must write it
#: (``share --commit``'s ``add``) still do.
SAFE_GIT_CONFIG: tuple[str, ...] = (
    "--no-optional-locks",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "log.showSignature=false",
)


def filters_off(config_names: str) -> tuple[str, ...]:
    """``-c`` options that turn off every filter driver named in ``config_names`` (the
    output of ``git config --name-only --get-regexp ^filter\\.``).

    ``status`` compares a file whose timestamps changed through its clean filter
    (``.gitattributes``: ``*.json filter=x``), a command the repository's ``.git/config``
    names (``filter.x.clean``): the team folder's facts ran it on ``engram sync``, ``engram
    index`` and an editor's start, in a workspace unpacked with its ``.git`` (stop 29).
    There is no switch for all filters, so each one named is emptied (git runs nothing for
    an empty command) and made optional (a required filter with no command fails)."""
    names = sorted(
        {line.rsplit(".", 1)[0][len("filter.") :] for line in config_names.splitlines()
         if line.startswith("filter.") and line.count(".") >= 2}
    )  # fmt: skip
    options: list[str] = []
    for name in names:
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
            options += ["-c", f"filter.{name}.{key}={value}"]
    return tuple(options)


#: the files of the working tree git reads for the commands Engram runs (ignore rules for
#: ``ls-files --others`` and ``status``, attributes for ``status``, ``log``'s mailmap), at the
#: top and in the team folder, the folders whose ``status`` Engram asks for
_TREE_FILES = (".gitignore", ".gitattributes", ".mailmap")
_TREE_FOLDERS = ("", ".engram-team")
#: the repository's settings that name a file git opens (``git config`` keys, lower case):
#: ``diff.orderFile`` is read by every ``git log --name-status`` (history mining)
_CONFIG_FILE_KEYS = (
    r"^(include\.path|includeif\..*\.path|core\.excludesfile|core\.attributesfile|mailmap\.file"
    r"|diff\.orderfile)$"
)
#: a key of a git config file that may be one of ``_CONFIG_FILE_KEYS`` (``path = …``
#: under ``[include]``, ``file = …`` under ``[mailmap]``, …), at a line's start or after its
#: section's header (``[include] path = …`` is one line to git): only then is ``git config``
#: asked. A file longer than :data:`_CONFIG_LOOKED_AT` is always asked about (git reads all).
_NAMES_A_FILE = r"(?im)(^|\])\s*(path|excludesfile|attributesfile|file|orderfile)\s*="
_CONFIG_LOOKED_AT = 65536
#: the most entries of a git folder looked at (a repository of unpacked objects has
#: thousands; a link to ``/`` would be the whole disk): past it the rest is not checked
_MAX_SCANNED = 200_000


class _Unsafe(Exception):
    pass


def _open_kind(path: str, shown: str) -> int | None:
    """The ``st_mode`` of what ``path`` leads to (links followed), ``None`` when nothing is
    there; raises :class:`_Unsafe` when git's ``open`` of it would block or never end: a
    FIFO, a device (a link to ``/dev/zero`` reads forever)."""
    import stat

    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return None
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device"
        raise _Unsafe(f"{shown} is {kind}, not a regular file")
    return mode  # a socket fails to open at once (git's own fsmonitor daemon keeps one)


def _git_dir(root: str) -> str | None:
    """The folder git keeps ``root``'s repository in: ``.git`` of ``root`` or of the first
    folder above it with one, or where a ``.git`` file's ``gitdir:`` line points."""
    import stat

    candidate = root
    while True:
        dot_git = os.path.join(candidate, ".git")
        mode = _open_kind(dot_git, ".git")
        if mode is not None:
            if stat.S_ISDIR(mode):
                return os.path.realpath(dot_git)
            line = _small_file(dot_git, ".git").strip()
            if not line.startswith("gitdir:"):
                return None
            return os.path.realpath(os.path.join(candidate, line[len("gitdir:") :].strip()))
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def _small_file(path: str, shown: str) -> str:
    """The first 64 KB (:data:`_CONFIG_LOOKED_AT`) of a regular file, opened without
    blocking (git's pointer files, a config)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return ""
    try:
        import stat

        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _Unsafe(f"{shown} is not a regular file")
        return os.read(fd, _CONFIG_LOOKED_AT).decode("utf-8", errors="replace")
    finally:
        os.close(fd)


def _scan(folder: str, root: str, seen: set[str], budget: list[int]) -> None:
    """Raise :class:`_Unsafe` for the first entry under ``folder`` (a git folder) that is
    not a regular file or a folder, links followed (each real folder once)."""
    real = os.path.realpath(folder)
    if real in seen:
        return
    seen.add(real)
    stack = [real]
    while stack and budget[0] > 0:
        try:
            entries = os.scandir(stack.pop())
        except OSError:
            continue
        with entries:
            for entry in entries:
                budget[0] -= 1
                if entry.is_symlink():
                    target = os.path.realpath(entry.path)
                    mode = _open_kind(entry.path, _shown(entry.path, root))
                    if mode is not None and target not in seen and os.path.isdir(target):
                        seen.add(target)
                        stack.append(target)
                elif entry.is_dir(follow_symlinks=False):
                    stack.append(entry.path)
                elif not entry.is_file(follow_symlinks=False):
                    _open_kind(entry.path, _shown(entry.path, root))


def _alternates(objects: str, root: str, seen: set[str], budget: list[int], depth: int = 0) -> None:
    """Scan each object folder ``objects/info/alternates`` names (git reads objects there as
    its own: a FIFO as a commit there held ``git log`` for ever), theirs in turn (as git,
    five deep); a relative one is relative to ``objects``."""
    listed = os.path.join(objects, "info", "alternates")
    for line in _small_file(listed, _shown(listed, root)).splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith('"') and line.endswith('"'):  # C-quoted (rare): its plain name
            line = line[1:-1]
        folder = os.path.join(objects, line)
        _scan(folder, root, seen, budget)
        if depth < 5:
            _alternates(folder, root, seen, budget, depth + 1)


def _shown(path: str, root: str) -> str:
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


def unsafe_git_file(root: str) -> str | None:
    """Why git must not be run in the workspace ``root``, or ``None``.

    git opens its files with a plain ``open``: a FIFO where it expects one waits for a
    writer forever, a link to ``/dev/zero`` reads forever, and GitPython reads ``HEAD``
    and ``config`` in Python with no timeout at all. An archive can carry such a file as
    ``.git/HEAD``, ``.git/index``, ``.git/config``, a ref, ``packed-refs``, an object (in
    the git folder or one ``objects/info/alternates`` names), or as a ``.gitignore`` /
    ``.gitattributes`` / ``.mailmap`` git reads while listing: until
    stop 32 ``engram index`` waited 60 s per git call for an index, and ``remember``, the
    engine and so an editor's start, forever for ``HEAD`` or ``config``
    (docs/security.md, "Git"). This looks at every entry of the git folder (scandir types:
    a few milliseconds for a packed repository), the working tree's files git reads for
    Engram's commands, and each file the repository's config names for git to open
    (``include.path``, ``core.excludesFile``, ``core.attributesFile``, ``mailmap.file``,
    ``diff.orderFile``)."""
    try:
        git_dir = _git_dir(root)
        if git_dir is None:
            return None
        seen: set[str] = set()
        budget = [_MAX_SCANNED]
        _scan(git_dir, root, seen, budget)
        common = _small_file(os.path.join(git_dir, "commondir"), "commondir").strip()
        if common:
            _scan(os.path.join(git_dir, common), root, seen, budget)
        for folder in dict.fromkeys([git_dir, os.path.join(git_dir, common or ".")]):
            _alternates(os.path.join(folder, "objects"), root, seen, budget)
        for folder in _TREE_FOLDERS:
            for name in _TREE_FILES:
                rel = f"{folder}/{name}" if folder else name
                _open_kind(os.path.join(root, rel), rel)
        # a linked worktree's settings are its common folder's config (and its own
        # config.worktree): git_dir/config alone is no file there
        configs = [os.path.join(git_dir, common or ".", "config"), os.path.join(git_dir, "config")]
        _named_files(root, [*configs, os.path.join(git_dir, "config.worktree")])
    except _Unsafe as exc:
        return f"git is not run in this workspace: {exc} (an unpacked archive?)"
    return None


def _named_files(root: str, configs: list[str]) -> None:
    """Check each file the repository's ``configs`` name for git to read (includes
    followed, each file once), asking ``git config`` without includes."""
    import re  # not at the top: a forwarding CLI imports this module first

    pending = configs[::-1]  # popped from the end: in the order given
    done: set[str] = set()
    while pending and len(done) < 50:
        config = os.path.realpath(pending.pop())
        if config in done:
            continue
        done.add(config)
        if _open_kind(config, _shown(config, root)) is None:
            continue
        text = _small_file(config, _shown(config, root))
        whole = len(text.encode("utf-8", errors="replace")) < _CONFIG_LOOKED_AT
        if whole and not re.search(_NAMES_A_FILE, text):
            continue  # names no file: no ``git config`` process (the usual case)
        import subprocess

        try:
            out = subprocess.run(
                ["git", "config", "--file", config, "--no-includes", "-z", "--get-regexp",
                 _CONFIG_FILE_KEYS],
                capture_output=True, timeout=10, check=False, cwd="/",
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            continue
        for item in out.stdout.decode("utf-8", errors="replace").split("\0"):
            key, _, value = item.partition("\n")
            if not value:
                continue
            path = os.path.expanduser(value)
            if key.endswith(".path"):  # relative to the file that includes it
                path = os.path.join(os.path.dirname(config), path)
                pending.append(path)
            else:  # relative to the working tree
                path = os.path.join(root, path)
            _open_kind(path, f"{value} (named by {key} in {_shown(config, root)})")


def find_workspace_root(start: Path) -> Path:
    """The enclosing git root of ``start``, or ``start`` itself outside git."""
    from pathlib import Path

    return Path(workspace_root(os.fspath(start)))


def workspace_root(start: str) -> str:
    """:func:`find_workspace_root` on strings (``pathlib`` costs a forwarding CLI
    ``urllib.parse`` and ``ipaddress``; ``subprocess`` is imported only outside a checkout
    with a ``.git`` of its own)."""
    start = os.path.realpath(start)
    probe = start if os.path.isdir(start) else os.path.dirname(start)
    candidate = probe
    while True:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    import subprocess

    try:
        out = subprocess.run(
            ["git", *SAFE_GIT_CONFIG, "-C", probe, "rev-parse", "--show-toplevel"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
        if out.returncode == 0 and out.stdout.strip():
            return os.path.realpath(out.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return probe


__all__ = ["SAFE_GIT_CONFIG", "find_workspace_root", "unsafe_git_file", "workspace_root"]
