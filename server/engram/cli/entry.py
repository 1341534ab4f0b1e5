"""The ``engram`` console script (and ``python -m engram``): forward first, import later.

A command the workspace's engine runs costs this process a few standard-library imports, a
socket round trip and a print (docs/engine.md, "The CLI"): ``engram.cli.main`` (argparse,
the use-case declarations) is imported only when the command runs here. ``engram hook``
goes straight to :func:`engram.agents.hooks.hook_entry`, and an editor's ``engram serve``
to :func:`engram.cli.serve.serve_entry` (the editor times ``initialize`` from the spawn).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

EXIT_INTERRUPTED = 130


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["hook"]:
        # an agent hook: a fresh process per tool call, answered from the digest alone
        # (docs/agents.md, "Hook latency"): not even the forwarder is imported on its way
        from engram.agents.hooks import hook_entry

        answered = hook_entry(args)
        if answered is not None:
            return answered
    try:
        if args[:1] == ["serve"]:
            # a language server is never forwarded: no argparse, no forwarder on its way
            from engram.cli.serve import serve_entry

            try:
                served = serve_entry(args)
            except Exception as exc:
                from engram.cli.main import report_failure

                return report_failure(exc)
            if served is not None:
                return served
        from engram.daemon.forward import forward

        code = forward(args)
    except KeyboardInterrupt:
        sys.stderr.write("engram: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away: not an error worth a message, nor a failed flush at exit
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    if code is not None:
        return code
    from engram.cli.main import main as run_here

    return run_here(args, try_engine=False)


def entry() -> None:
    raise SystemExit(main())


__all__ = ["entry", "main"]
