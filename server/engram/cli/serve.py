"""``engram serve``: start the language server with as little imported as possible.

Editors time ``initialize`` from the moment they spawn the process, so this path imports
neither the other commands nor their rendering (``engram.cli.commands``), only what
checking the arguments needs; ``engram.lsp`` brings pygls and lsprotocol. The command
lines editors use (``engram serve``, ``--stdio``, ``--clientProcessId=PID``,
``--log-level LEVEL``, ``--workspace DIR``) are read by :func:`quick_args` without
argparse or ``engram.cli.main``; any other goes through the full parser.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from engram.errors import InvalidInput

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

_TCP = re.compile(r"[^:\s]*:\d{1,5}")

#: ``--log-level`` values (``engram.cli.main``'s parser offers the same choices)
LOG_LEVEL_CHOICES = ("debug", "info", "warning", "error")
#: options taking a value that ``quick_args`` reads -> the argument name they set
_VALUED = {
    "--log-level": "log_level",
    "--workspace": "workspace",
    "-w": "workspace",
    "--clientProcessId": "",
}


def quick_args(argv: Sequence[str]) -> dict[str, str] | None:
    """``engram serve``'s arguments read without argparse, or ``None`` when the command
    line is anything but a plain editor's one (then the full parser reads it, and says
    what is wrong). Returns the ``workspace`` and ``log_level`` given."""
    if list(argv[:1]) != ["serve"]:
        return None
    try:
        for arg in argv:
            arg.encode("utf-8")
    except UnicodeEncodeError:  # the full parser's one-line error
        return None
    given: dict[str, str] = {}
    rest = list(argv[1:])
    while rest:
        arg = rest.pop(0)
        if arg in ("--stdio", "--verbose", "-V"):
            continue
        name, eq, value = arg.partition("=")
        if name not in _VALUED:
            return None
        if not eq:
            if not rest or rest[0].startswith("-"):
                return None
            value = rest.pop(0)
        if not value or (name == "--log-level" and value not in LOG_LEVEL_CHOICES):
            return None
        if _VALUED[name]:
            given[_VALUED[name]] = value
    return given


def serve_entry(argv: Sequence[str]) -> int | None:
    """``engram serve`` from the console script without ``engram.cli.main`` (argparse, the
    command tables); or ``None`` when the command line needs the full parser. Failures,
    an interrupt and a closed stdout are handled by ``engram.cli.entry`` as for every
    command (importing ``engram.cli.main`` here would be an import cycle)."""
    given = quick_args(argv)
    if given is None:
        return None
    return serve(given.get("workspace"), None, given.get("log_level"))


def serve(workspace: str | None, tcp: str | None, log_level: str | None) -> int:
    if tcp is not None and not _TCP.fullmatch(tcp):
        raise InvalidInput(f"--tcp must be HOST:PORT, got {tcp!r}")
    import gc

    from engram.cli.attrs_code import attrs_code_cache

    # lsprotocol's 600 attrs classes: their methods' code comes from the user's cache
    # (compiling it was a third of the time to initialize, engram.cli.attrs_code)
    with attrs_code_cache():
        import lsprotocol.types  # noqa: F401 - imported here to be frozen below
        import pygls.lsp.server  # noqa: F401

        import engram.lsp.features  # noqa: F401 - the server's own classes, cached too

    # pygls and lsprotocol leave some 50,000 objects that live as long as the process;
    # frozen, they no longer count towards a full collection, which Engram's own start-up
    # would otherwise set off before initialize (30-50 ms; a bare pygls server makes none)
    gc.freeze()
    from engram.lsp import run_server

    # --stdio is the default transport; it is accepted because LSP clients append it
    run_server(workspace, tcp, log_level)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    workspace = getattr(args, "workspace", None)
    return serve(str(workspace) if workspace else None, args.tcp, getattr(args, "log_level", None))
