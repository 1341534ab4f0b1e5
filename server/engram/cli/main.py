"""Entry point of the ``engram`` console script.

The parser lists every command from tables (:data:`OWN_COMMANDS` and the generated
``engram.cli.declared_table``) and builds only the parser argparse picks, so a command
line imports the ``engram.api`` module of its own use case and nothing of the others
(docs/cli.md, "Start-up"); then the chosen command's module is imported. Every failure a
user can cause ends as ONE line on stderr and a non-zero exit code; a bug ends as one line
too, with a hint to set ``ENGRAM_DEBUG=1`` for the traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import sys

from engram.cli.parser import (
    EXIT_BUSY,
    EXIT_ERROR,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    OneLineParser,
    Subcommands,
)

#: ``typing`` is not otherwise imported on the way to ``engram --help``; mypy reads it anyway
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

#: Shells ``engram completion`` writes a script for (shtab generates each from the parser).
COMPLETION_SHELLS = ("bash", "zsh", "fish")


def _workspace_options(parser: OneLineParser) -> None:
    """``--workspace`` and ``--verbose``, which every command takes after its name too."""
    parser.add_argument(
        "--workspace",
        "-w",
        metavar="DIR",
        default=argparse.SUPPRESS,
        help="the workspace (default: the git root enclosing the current directory)",
    )
    parser.add_argument(
        "--verbose",
        "-V",
        action="store_true",
        default=argparse.SUPPRESS,
        help="say where the command ran (the workspace's engine, or in-process and why)",
    )


#: ``argparse`` dest of the ``engram.api`` module that declares a command's use case.
USECASE_MODULE_KEY = "_usecase_module"


def _declared(usecase: str, module: str, p: OneLineParser) -> None:
    from engram.api import by_name
    from engram.cli.declared import add_arguments

    _workspace_options(p)
    add_arguments(p, by_name(usecase, module))  # imports engram.api.<module> only
    p.set_defaults(**{USECASE_MODULE_KEY: module})


def _index(p: OneLineParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.add_argument(
        "--no-embed",
        action="store_true",
        help=(
            "load no embedding model: code chunks and memories are stored without vectors "
            "until the next full index (fast, small)"
        ),
    )
    p.add_argument(
        "--no-wait",
        action="store_true",
        help=(
            f"when another index of this workspace is running, exit {EXIT_BUSY} at once "
            "instead of waiting for it"
        ),
    )


def _observe(p: OneLineParser) -> None:
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


def _hook(p: OneLineParser) -> None:
    p.add_argument("agent", metavar="AGENT", help="claude-code or codex")


def _digest(p: OneLineParser) -> None:
    p.add_argument("--rebuild", action="store_true", help="rewrite it from the store")


def _mcp(p: OneLineParser) -> None:
    p.add_argument("mcp_args", nargs=argparse.REMAINDER)


def _setup(p: OneLineParser) -> None:
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


def _serve(p: OneLineParser) -> None:
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


def _no_arguments(p: OneLineParser) -> None:
    return None


def _trust(p: OneLineParser) -> None:
    p.add_argument("--yes", "-y", action="store_true", help="approve what is shown, no prompt")
    p.add_argument("--hash", metavar="H", help="approve only if the content's hash starts with H")
    p.add_argument("--revoke", action="store_true", help="withdraw this workspace's approval")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _export(p: OneLineParser) -> None:
    p.add_argument("file", metavar="FILE", nargs="?")
    p.add_argument("--format", choices=["json", "md"], default=None, help="default: json")


def _import(p: OneLineParser) -> None:
    p.add_argument("file", metavar="FILE")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _status(p: OneLineParser) -> None:
    p.add_argument("--json", action="store_true", help="print one JSON document")


def _completion(p: OneLineParser) -> None:
    p.add_argument("shell", metavar="SHELL", choices=COMPLETION_SHELLS, help="bash, zsh or fish")


def _engine(p: OneLineParser) -> None:
    _workspace_options(p)
    p.add_argument("--key", help=argparse.SUPPRESS)


#: The CLI's own commands (after the declared ones): name, one-line help, arguments.
OWN_COMMANDS: tuple[tuple[str, str, Callable[[OneLineParser], None]], ...] = (
    ("index", "index the workspace: code graph, git history, memory embeddings", _index),
    ("observe", "feed observer events (JSON or JSON lines) from stdin", _observe),
    ("hook", "answer an agent hook (payload on stdin); always exits 0", _hook),
    ("digest", "the SQLite digest agent hooks read from", _digest),
)
#: Own commands listed after ``mcp`` (which takes its arguments raw, see below).
OWN_COMMANDS_AFTER_MCP: tuple[tuple[str, str, Callable[[OneLineParser], None]], ...] = (
    (
        "setup",
        "write Engram into a coding agent's config (hooks, MCP, LSP) with this engram's path",
        _setup,
    ),
    ("serve", "run the language server (stdio, or TCP with --tcp)", _serve),
    ("mcp-serve", "run Engram as an MCP server on stdio (for agents)", _no_arguments),
    (
        "trust",
        "show, approve or revoke the workspace settings that run code or send data",
        _trust,
    ),
    ("export", "export all memories (JSON or Markdown) to FILE or stdout", _export),
    ("import", "import an export, or CLAUDE.md / AGENTS.md / .cursorrules rules", _import),
    ("status", "the workspace's engine: pid, uptime, memory, connected front ends", _status),
    (
        "stop",
        "stop the workspace's engine (front ends start a new one when needed)",
        _no_arguments,
    ),
)
COMPLETION_HELP = (
    "Print a completion script for SHELL, generated from this parser by shtab. "
    "bash: `source <(engram completion bash)` in ~/.bashrc; zsh: "
    '`engram completion zsh > "${fpath[1]}/_engram"`; fish: `engram completion fish '
    "> ~/.config/fish/completions/engram.fish` (docs/cli.md)."
)


def _with_workspace(build: Callable[[OneLineParser], None]) -> Callable[[OneLineParser], None]:
    def both(p: OneLineParser) -> None:
        _workspace_options(p)
        build(p)

    return both


def build_parser(*, lazy: bool = False) -> OneLineParser:
    """The ``engram`` parser: the declared use cases (``engram.api``) and the CLI's own.

    ``lazy``: a command's parser is built only when argparse picks that command, and a
    declared one imports only the ``engram.api`` module that declares it; the commands and
    their one-line help come from :mod:`engram.cli.declared_table` (generated from the
    declarations). Otherwise every parser is built (completion scripts, docs, tests).
    """
    from engram.cli.declared_table import DECLARED

    parser = OneLineParser(
        prog="engram",
        description=(
            "Engram: code memory for editors and agents. Remember what was learned about a "
            "codebase and get it back where it matters."
        ),
        # not a path: a pipx user has no docs/ beside the command (walk31)
        epilog=(
            "Run 'engram COMMAND --help' for a command's options. The guides (docs/cli.md, "
            "docs/install.md …) are in the Engram repository it was installed from."
        ),
    )
    parser.add_argument("--workspace", "-w", metavar="DIR", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--verbose", "-V", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=OneLineParser, action=Subcommands
    )
    assert isinstance(sub, Subcommands)
    for name, usecase, module, summary in DECLARED:
        declared = functools.partial(_declared, usecase, module)
        sub.add_deferred(name, declared, help=summary, description=summary)
    for name, text, build in OWN_COMMANDS:
        sub.add_deferred(name, _with_workspace(build), help=text, description=text)
    sub.add_deferred(
        "mcp",
        _mcp,
        help="the lazy MCP hub: refresh | list | search | call | status | trust",
        add_help=False,
        prefix_chars="\x00",  # hand every argument, --help included, to engram.cli.mcp
    )
    for name, text, build in OWN_COMMANDS_AFTER_MCP:
        sub.add_deferred(name, _with_workspace(build), help=text, description=text)
    sub.add_deferred(
        "completion",
        _completion,
        help="print a shell completion script (bash, zsh or fish)",
        description=COMPLETION_HELP,
    )
    # the engine process itself, started by front ends (docs/engine.md); not for people
    sub.add_deferred("engine", _engine)
    if not lazy:
        sub.build_all()
    return parser


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

    from engram.quoting import replace_controls

    # an error may quote what a repository wrote (an MCP server's arguments, a file name)
    text = replace_controls(" ".join(str(message).split()), "?")
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
    parser = build_parser(lazy=True)
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

        # every command's parser, so each command's options complete too
        sys.stdout.write(shtab.complete(build_parser(), shell=args.shell))
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
        return report_failure(exc)


def report_failure(exc: Exception) -> int:
    """One line on stderr for a failure, and the exit status it means."""
    from engram.errors import USER_ERRORS, disk_trouble

    if _debug():
        import traceback

        traceback.print_exc()
    if isinstance(exc, USER_ERRORS):
        return _fail(str(exc))
    trouble = disk_trouble(exc)
    if trouble is not None:  # SQLite's "database or disk is full" was an internal error
        return _fail(f"{trouble} ({' '.join(str(exc).split())[:200]})")
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
