"""A thin ``engram`` command: hand the command line to the workspace's engine.

Standard library only (docs/engine.md, "The CLI"). ``engram.cli.main`` calls
:func:`forward` before it builds its parser; when the command is one the engine runs and
an engine answers (or can be started), the engine runs the command with the CLI's own
code and this process only prints what it got back. Otherwise :func:`forward` returns
``None`` and the command runs in-process as before; ``--verbose`` says why.

What changes on the way: the workspace becomes an absolute ``--workspace`` (the engine's
working directory is not the caller's), file arguments read relative to the caller's
directory (``export FILE``, ``import FILE``) become absolute, and stdin is sent along for
the commands that read it (``remember -``, ``observe``). If the engine vanishes while it
runs the command, the next one is started once and asked again; after that the command
runs in-process (a ``remember`` asked twice merges into one memory).
"""

from __future__ import annotations

import os
import sys

#: ``typing`` costs a forwarding CLI milliseconds; mypy reads the names anyway
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import IO

#: Commands the engine runs for a thin CLI (every one that reads or writes the store).
#: Not here: ``hook`` (answers from the digest, no engine), ``serve``/``mcp-serve`` (front
#: ends of their own), ``mcp`` (the hub's own processes), ``engine``/``status``/``stop``.
FORWARDED = frozenset(
    {
        "remember",
        "search",
        "list",
        "show",
        "forget",
        "restore",
        "edit",
        "log",
        "confirm",
        "flag",
        "pin",
        "context",
        "index",
        "impact",
        "observe",
        "doctor",
        "stats",
        "export",
        "import",
        "report",
        "digest",
        "share",
        "sync",
        "consolidate",
        "prune",
        "review",
        "recipes",
        "reindex",
        "open",
        "session-summary",
    }
)
#: Commands whose positional FILE is read or written relative to the caller's directory.
CWD_FILE_COMMANDS = frozenset({"export", "import", "report"})
VERBOSE_FLAGS = frozenset({"--verbose", "-V"})


def split_command(argv: Sequence[str]) -> tuple[int, str | None, str | None]:
    """(index of the command, the command, the --workspace value) of an argv."""
    workspace: str | None = None
    command_at, command = -1, None
    items = list(argv)
    i = 0
    while i < len(items):
        item = items[i]
        if item == "--":
            break
        if item in ("--workspace", "-w"):
            workspace = items[i + 1] if i + 1 < len(items) else None
            i += 2
            continue
        if item.startswith("--workspace="):
            workspace = item.split("=", 1)[1]
        elif command is None and not item.startswith("-"):
            command_at, command = i, item
        i += 1
    return command_at, command, workspace


def _flags(argv: Sequence[str]) -> list[str]:
    out: list[str] = []
    for item in argv:
        if item == "--":
            break
        out.append(item)
    return out


def _root(workspace: str | None) -> str:
    if workspace is not None:
        return os.path.realpath(os.path.expanduser(workspace))
    from engram.gitroot import workspace_root

    return workspace_root(os.getcwd())


#: Options of the forwarded commands that take a value (so the value is not FILE).
_VALUE_OPTIONS = frozenset({"--format", "--module", "-m"})


def _rewrite(argv: Sequence[str], command: str, root: str) -> list[str]:
    """The argv the engine runs: an absolute workspace, caller-relative files absolute."""
    out: list[str] = []
    items = list(argv)
    dashdash = seen_command = file_done = False
    i = 0
    while i < len(items):
        item = items[i]
        if not dashdash:
            if item in ("--workspace", "-w"):
                i += 2
                continue
            if item.startswith("--workspace="):
                i += 1
                continue
            if item == "--":
                dashdash = True
                out.append(item)
                i += 1
                continue
            if not seen_command and not item.startswith("-"):
                seen_command = True
                out += [item, "--workspace", root]
                i += 1
                continue
        if (
            seen_command
            and command in CWD_FILE_COMMANDS
            and not file_done
            and (dashdash or not item.startswith("-"))
            and not (i > 0 and items[i - 1] in _VALUE_OPTIONS)
        ):
            file_done = True
            if item != "-":
                item = os.path.abspath(os.path.expanduser(item))
        out.append(item)
        i += 1
    return out


def _reads_stdin(command: str, argv: Sequence[str], command_at: int) -> bool:
    if command == "observe":
        return True
    rest = list(argv)[command_at + 1 :]
    if command == "edit":  # edit ID --text -
        from itertools import pairwise

        return "--text=-" in rest or any(p == ("--text", "-") for p in pairwise(rest))
    return command == "remember" and "-" in rest


def forward(
    argv: Sequence[str],
    *,
    stdin: IO[bytes] | None = None,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> int | None:
    """Run ``argv`` in the engine; its exit status, or ``None`` to run it in-process."""
    out = stdout or sys.stdout
    err = stderr or sys.stderr
    flags = _flags(argv)
    verbose = any(f in VERBOSE_FLAGS for f in flags)

    def why(message: str) -> None:
        if verbose:
            err.write(f"engram: {message}\n")

    command_at, command, workspace = split_command(argv)
    if command is None or command not in FORWARDED:
        return None  # serve, hook, --help …: nothing more imported on their way
    if "-h" in flags or "--help" in flags:
        return None
    if command == "report" and "--open" in flags:
        why("in-process: report --open opens this terminal's browser")
        return None
    from engram.daemon.client import INSIDE_ENGINE, POLICY_ENV, engine_enabled

    if os.environ.get(POLICY_ENV) == INSIDE_ENGINE:
        return None  # this is the engine running a forwarded command
    if not engine_enabled():
        why("in-process: ENGRAM_ENGINE=off")
        return None
    if workspace is not None and not os.path.isdir(os.path.expanduser(workspace)):
        return None  # the in-process command says what is wrong with it
    root = _root(workspace)
    data = b""
    if _reads_stdin(command, argv, command_at):
        source = stdin if stdin is not None else sys.stdin.buffer
        data = source.read()
    request: dict[str, object] = {
        "argv": _rewrite(argv, command, root),
        "cwd": os.getcwd(),
        "stream_stderr": True,  # progress lines and notes while it runs, not at the end
    }
    if data:
        from binascii import b2a_base64  # what ``base64`` calls, without ``re`` and ``struct``

        request["stdin"] = b2a_base64(data, newline=False).decode("ascii")
    from engram.daemon.client import FIRST_ID, EngineUnavailable, connect
    from engram.daemon.wire import WireError

    def streamed(text: str) -> None:
        err.write(text)
        err.flush()

    for attempt in (1, 2):
        try:
            # the request goes out with the hello: one exchange with the engine, not two
            connection = connect(root, "cli", note=why if verbose else None, first=("cli", request))
        except EngineUnavailable as exc:
            why(f"in-process: {exc}")
            _give_back(data)
            return None
        try:
            result = connection.reply(FIRST_ID, on_stderr=streamed)
        except WireError as exc:
            why(f"the engine went away ({exc})" + ("; once more" if attempt == 1 else ""))
            continue
        except Exception as exc:  # the engine refused it: let the in-process path answer
            why(f"in-process: the engine refused the command ({exc})")
            _give_back(data)
            return None
        finally:
            connection.close()
        if not isinstance(result, dict):
            why("in-process: the engine answered nonsense")
            _give_back(data)
            return None
        why(f"ran in the engine (pid {connection.pid})")
        out.write(str(result.get("stdout") or ""))
        err.write(str(result.get("stderr") or ""))
        out.flush()
        code = result.get("exit")
        return code if isinstance(code, int) else 1
    why("in-process: the engine failed twice")
    _give_back(data)
    return None


def _give_back(data: bytes) -> None:
    """Give back the stdin this module read, so the in-process command can read it."""
    if data:
        import io

        sys.stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    return None


__all__ = ["CWD_FILE_COMMANDS", "FORWARDED", "forward", "split_command"]
