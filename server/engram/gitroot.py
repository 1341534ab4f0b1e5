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


__all__ = ["SAFE_GIT_CONFIG", "find_workspace_root", "workspace_root"]
