"""Entry point of the ``engram`` console script.

The parser is built (the declared use cases from ``engram.api``, which agent hooks and
``serve`` skip: see :data:`LIGHT_COMMANDS`), argv parsed, and then the chosen command's
module is imported. Every failure a user can cause ends as ONE line on
stderr and a non-zero exit code; a bug ends as one line too, with a hint to set
``ENGRAM_DEBUG=1`` for the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Sequence

from engram.cli.parser import (
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    OneLineParser,
)

#: Shells ``engram completion`` writes a script for (shtab generates each from the parser).
COMPLETION_SHELLS = ("bash", "zsh", "fish")


def _workspace_parent() -> OneLineParser:
    parent = OneLineParser(add_help=False)
    parent.add_argument(
        "--workspace",
        "-w",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the workspace (default: the git root enclosing the current directory)",
    )
    parent.add_argument(
        "--verbose",
        "-V",
        action="store_true",
        default=argparse.SUPPRESS,
        help="say where the command ran (the workspace's engine, or in-process and why)",
    )
    return parent


#: Commands answered without the use-case declarations (their import costs a hook call
#: ~0.1 s): agent hooks run once per tool call, the editor waits on ``serve``; the engine
#: commands (docs/engine.md) are not use cases.
LIGHT_COMMANDS = frozenset({"hook", "serve", "engine", "status", "stop"})


def build_parser(with_usecases: bool = True) -> OneLineParser:
    """The ``engram`` parser: the declared use cases (``engram.api``) and the CLI's own."""
    ws = _workspace_parent()
    parser = OneLineParser(
        prog="engram",
        description=(
            "Engram: code memory for editors and agents. Remember what was learned about a "
            "codebase and get it back where it matters."
        ),
        epilog="Run 'engram COMMAND --help' for a command's options. Docs: docs/cli.md",
    )
    parser.add_argument("--workspace", "-w", metavar="DIR", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--verbose", "-V", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)

    def add(name: str, help_text: str) -> OneLineParser:
        return sub.add_parser(name, help=help_text, description=help_text, parents=[ws])

    if with_usecases:
        from engram.cli.declared import add_parsers

        add_parsers(sub, [ws])

    p = add("index", "index the workspace: code graph, git history, memory embeddings")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-embed",
        action="store_true",
        help=(
            "load no embedding model: code chunks and memories are stored without vectors "
            "until the next full index (fast, small)"
        ),
    )

    p = add("observe", "feed observer events (JSON or JSON lines) from stdin")
    p.add_argument(
        "--format",
        choices=["engram", "claude-code"],
        default="engram",
        help="engram events, or a Claude Code hook payload as the hook receives it",
    )
    p.add_argument(
        "--drain-inbox",
        action="store_true",
        help="also replay the hook payloads queued for this session (.engram/agents/inbox)",
    )

    p = add("hook", "answer an agent hook (payload on stdin); always exits 0")
    p.add_argument("agent", metavar="AGENT", help="claude-code or codex")

    p = add("digest", "the SQLite digest agent hooks read from")
    p.add_argument("--rebuild", action="store_true", help="rewrite it from the store")

    sub.add_parser(
        "mcp",
        help="the lazy MCP hub: refresh | list | search | call | status | trust",
        add_help=False,
        prefix_chars="\x00",  # hand every argument, --help included, to engram.cli.mcp
    ).add_argument("mcp_args", nargs=argparse.REMAINDER)

    p = add(
        "setup",
        "write Engram into a coding agent's config (hooks, MCP, LSP) with this engram's path",
    )
    p.add_argument(
        "agent",
        metavar="AGENT",
        choices=["claude-code", "codex", "opencode", "crush", "copilot"],
        help="claude-code, codex, opencode, crush or copilot",
    )
    p.add_argument(
        "--print", action="store_true", help="print the merged files instead of writing them"
    )
    p.add_argument(
        "--plugin",
        action="store_true",
        help="claude-code: the Engram plugin is installed; only record the command it runs",
    )
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("serve", "run the language server (stdio, or TCP with --tcp)")
    transport = p.add_mutually_exclusive_group()
    transport.add_argument("--tcp", metavar="HOST:PORT", help="listen on TCP instead of stdio")
    # vscode-languageclient appends --stdio (and node clients --clientProcessId=PID) to the
    # server command: accepting them is what lets a real VS Code start the server.
    transport.add_argument(
        "--stdio", action="store_true", help="speak LSP on stdin/stdout (the default)"
    )
    p.add_argument("--clientProcessId", metavar="PID", help=argparse.SUPPRESS)
    p.add_argument(
        "--log-level",
        metavar="LEVEL",
        choices=["debug", "info", "warning", "error"],
        default=None,
        help="server log on stderr: debug, info, warning (default) or error; "
        "ENGRAM_LOG_LEVEL sets it too",
    )

    add("mcp-serve", "run Engram as an MCP server on stdio (for agents)")

    p = add(
        "trust",
        "show, approve or revoke the workspace settings that run code or send data",
    )
    p.add_argument("--yes", "-y", action="store_true", help="approve what is shown, no prompt")
    p.add_argument("--hash", metavar="H", help="approve only if the content's hash starts with H")
    p.add_argument("--revoke", action="store_true", help="withdraw this workspace's approval")
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("export", "export all memories (JSON or Markdown) to FILE or stdout")
    p.add_argument("file", metavar="FILE", nargs="?")
    p.add_argument("--format", choices=["json", "md"], default=None, help="default: json")

    p = add("import", "import an export, or CLAUDE.md / AGENTS.md / .cursorrules rules")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("status", "the workspace's engine: pid, uptime, memory, connected front ends")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    add("stop", "stop the workspace's engine (front ends start a new one when needed)")
    p = sub.add_parser(
        "completion",
        help="print a shell completion script (bash, zsh or fish)",
        description=(
            "Print a completion script for SHELL, generated from this parser by shtab. "
            "bash: `source <(engram completion bash)` in ~/.bashrc; zsh: "
            '`engram completion zsh > "${fpath[1]}/_engram"`; fish: `engram completion fish '
            "> ~/.config/fish/completions/engram.fish` (docs/cli.md)."
        ),
    )
    p.add_argument("shell", metavar="SHELL", choices=COMPLETION_SHELLS, help="bash, zsh or fish")
    # the engine process itself, started by front ends (docs/engine.md); not for people
    p = sub.add_parser("engine", parents=[ws])
    p.add_argument("--key", help=argparse.SUPPRESS)
    return parser


def _command_of(argv: Sequence[str]) -> str | None:
    """The subcommand named in ``argv`` (skipping ``--workspace DIR``), if any."""
    items = iter(argv)
    for item in items:
        if item in ("--workspace", "-w"):
            next(items, None)
        elif not item.startswith("-"):
            return item
    return None


def _debug() -> bool:
    return os.environ.get("ENGRAM_DEBUG", "") not in ("", "0", "false", "no")


#: Longest error line; the cause in parentheses is shortened first, the rest kept.
MAX_ERROR_CHARS = 320
MAX_CAUSE_CHARS = 140


def one_line_error(message: str) -> str:
    """A library's error as one readable line: no Rust source paths, no wrapper noise.

    LanceDB wraps its Rust errors as ``LanceError(IO): Generic N/A error: Wrapped error:
    Not found: …, /home/build/.cargo/registry/…/src/io.rs:123:45``; the user needs the
    first sentence and what to do, which the store's message puts after the cause.
    """
    import re

    text = " ".join(str(message).split())
    text = re.sub(r",?\s*(?:at\s+)?(?:[A-Za-z]:)?[\\/][^\s,;()]*\.rs:\d+(?::\d+)?", "", text)
    noise = r"(?:Generic N/A error|Wrapped error|LanceError\(\w+\)|lance error):\s*"
    text = re.sub(noise, "", text)
    text = re.sub(r"\b([A-Z][\w ]{1,30}): (?:\1: )+", r"\1: ", text)
    if len(text) > MAX_ERROR_CHARS:
        open_at, close_at = text.find(" ("), text.rfind(")")
        if 0 <= open_at < close_at and close_at - open_at > MAX_CAUSE_CHARS:
            cause = text[open_at + 2 : close_at]
            text = f"{text[: open_at + 2]}{cause[: MAX_CAUSE_CHARS - 1]}…{text[close_at:]}"
        if len(text) > MAX_ERROR_CHARS:
            text = text[: MAX_ERROR_CHARS - 1] + "…"
    return text or "failed"


def _fail(message: str, code: int = EXIT_ERROR) -> int:
    sys.stderr.write(f"engram: error: {one_line_error(message)}\n")
    return code


def main(argv: Sequence[str] | None = None, *, try_engine: bool = True) -> int:
    """Run one ``engram`` command; returns (and, as a script, exits with) its status.

    ``try_engine``: first offer the command to the workspace's engine (``engram.cli.entry``
    already did, so it passes False).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    for position, arg in enumerate(argv, 1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:  # Python hands undecodable bytes over as surrogates
            return _fail(f"argument {position} is not valid UTF-8", EXIT_USAGE)
    try:
        # the workspace's engine runs most commands warm (docs/engine.md); this imports
        # only the standard library unless the command is forwarded
        from engram.daemon.forward import forward

        forwarded = forward(argv) if try_engine else None
    except KeyboardInterrupt:
        sys.stderr.write("engram: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    if forwarded is not None:
        return forwarded
    parser = build_parser(with_usecases=_command_of(argv) not in LIGHT_COMMANDS)
    args = parser.parse_args(argv)
    if args.version:
        from engram.version import version_string

        print(f"engram {version_string()}")
        return 0
    if not args.command:
        parser.print_help()
        return EXIT_USAGE
    if args.command == "completion":
        import shtab  # a static script from the parser: nothing runs at completion time

        # the FULL parser, so the subcommands derived from the declarations complete too
        full = parser if _command_of(argv) not in LIGHT_COMMANDS else build_parser(True)
        sys.stdout.write(shtab.complete(full, shell=args.shell))
        return 0
    if args.command == "hook":
        # hooks run once per agent tool call: no engine, no store, just the digest
        from engram.agents.hooks import hook_main

        return hook_main(args.agent, sys.stdin.read(), getattr(args, "workspace", None))
    try:
        if args.command in ("engine", "status", "stop"):
            from engram.cli.engine_commands import run_engine_command

            return run_engine_command(args, main)
        if args.command == "serve":  # the editor is waiting for `initialize`: import little
            from engram.cli.serve import cmd_serve

            return cmd_serve(args)
        from engram.cli.commands import run_command
        from engram.jobs import held_by_this_process

        with held_by_this_process() as ours:  # a background job holds its lock (engram.jobs)
            return run_command(args) if ours else 0
    except KeyboardInterrupt:
        sys.stderr.write("engram: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader (head, less) went away: not an error worth a message
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the flush at exit
        return 0
    except Exception as exc:
        return _report(exc)


def _report(exc: Exception) -> int:
    from engram.errors import USER_ERRORS

    if _debug():
        import traceback

        traceback.print_exc()
    if isinstance(exc, USER_ERRORS):
        return _fail(str(exc))
    if isinstance(exc, PermissionError):
        where = f" {exc.filename}" if exc.filename else ""
        return _fail(f"permission denied:{where}")
    if isinstance(exc, OSError):
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"{exc.strerror or exc}{where}")
    user_error_hint = _store_error_message(exc)
    if user_error_hint:
        return _fail(user_error_hint)
    detail = " ".join(str(exc).split())[:200]
    sys.stderr.write(
        f"engram: internal error: {type(exc).__name__}: {detail} "
        "(run with ENGRAM_DEBUG=1 for the traceback)\n"
    )
    return EXIT_INTERNAL


def _store_error_message(exc: Exception) -> str | None:
    """Errors from the storage libraries that mean "your store is damaged", in one line."""
    module = type(exc).__module__ or ""
    if module.startswith(("lancedb", "pyarrow", "lance")) or "Lance" in type(exc).__name__:
        return (
            "the memory store in .engram/ could not be read "
            f"({type(exc).__name__}); it may be damaged: restore it from an export "
            "or move .engram/memories.lance away and re-import"
        )
    return None


def entry() -> None:
    raise SystemExit(main())


if __name__ == "__main__":
    entry()
