"""``engram serve``: start the language server with as little imported as possible.

Editors time ``initialize`` from the moment they spawn the process, so this path imports
neither the other commands nor their rendering (``engram.cli.commands``), only what
checking the arguments needs; ``engram.lsp`` brings pygls and lsprotocol.
"""

from __future__ import annotations

import argparse
import re

from engram.errors import InvalidInput

_TCP = re.compile(r"[^:\s]*:\d{1,5}")


def cmd_serve(args: argparse.Namespace) -> int:
    tcp = args.tcp
    if tcp is not None and not _TCP.fullmatch(tcp):
        raise InvalidInput(f"--tcp must be HOST:PORT, got {tcp!r}")
    from engram.lsp import run_server

    workspace = getattr(args, "workspace", None)
    # --stdio is the default transport; it is accepted because LSP clients append it
    run_server(str(workspace) if workspace else None, tcp, getattr(args, "log_level", None))
    return 0
