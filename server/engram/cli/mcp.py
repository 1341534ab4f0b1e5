"""``engram mcp refresh | list | search | call | status | trust`` (SPEC command-line contract).

``engram.cli`` hands the ``mcp`` subcommand here: :func:`configure_parser` adds the
sub-commands to its parser and :func:`run` executes one. Importing this module is cheap
(argparse only); the hub and the ``mcp`` SDK load when a command runs. Failures raise
``EngramError`` subclasses, which the CLI prints as one line with a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject
    from engram.mcphub.hub import McpHub


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the hub's sub-commands to ``parser`` (which already has ``--workspace``)."""
    # the parent's class (the CLI's one-line-error parser) for the sub-commands too
    sub = parser.add_subparsers(
        dest="mcp_command", metavar="COMMAND", required=True, parser_class=type(parser)
    )

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help_text, description=help_text)

    p = add("refresh", "introspect servers whose tools are not cached or whose config changed")
    p.add_argument("names", metavar="NAME", nargs="*", help="only these servers (always re-read)")
    p.add_argument("--force", action="store_true", help="re-introspect every trusted server")
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("list", "list the cached tools of every server (no server is started)")
    p.add_argument("--server", metavar="NAME", help="only this server's tools")
    p.add_argument("--schema", action="store_true", help="include input schemas")
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("search", "find the few tools that fit a task (and the current file / phase)")
    p.add_argument("query", metavar="QUERY", nargs="+")
    p.add_argument("--k", type=int, default=None, help="how many tools (default mcp.search_limit)")
    p.add_argument("--file", metavar="PATH", help="the file being worked on (context)")
    p.add_argument(
        "--phase", metavar="PHASE", help="define|implement|validate|refine|explore|reflect"
    )
    p.add_argument("--json", action="store_true", help="print one JSON document (with schemas)")

    p = add("call", "call one tool, starting its server if needed")
    p.add_argument("tool", metavar="TOOL", help="server__tool (or server/tool, or a unique name)")
    p.add_argument(
        "--args",
        dest="tool_args",
        metavar="JSON",
        default="{}",
        help="arguments as a JSON object, or - to read them from stdin",
    )
    p.add_argument("--file", metavar="PATH", help="the file being worked on (usage context)")
    p.add_argument(
        "--timeout", type=float, default=None, help="seconds (default mcp.call_timeout_seconds)"
    )
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")

    p = add("status", "servers, trust, cache state and live connections")
    p.add_argument("--json", action="store_true", help="print one JSON document")

    p = add("trust", "approve workspace-defined servers' current configuration")
    p.add_argument("names", metavar="NAME", nargs="+")
    p.add_argument("--json", action="store_true", help="print one JSON document")


def run(args: argparse.Namespace) -> int:
    """Run the parsed sub-command; returns the exit status."""
    import asyncio

    from engram.config import load_config
    from engram.mcphub.hub import McpHub
    from engram.workspace import Workspace

    workspace = Workspace.open(getattr(args, "workspace", None))
    config = load_config(workspace)
    with _quiet_sdk_logs():
        return asyncio.run(_run(McpHub(workspace, config), args))


async def _run(hub: McpHub, args: argparse.Namespace) -> int:
    try:
        command = args.mcp_command
        if command == "refresh":
            data = await hub.refresh(args.names or None, force=args.force)
            return _emit(args, data, _render_refresh)
        if command == "list":
            data = await hub.list(args.server, with_schema=args.schema or args.json)
            return _emit(args, data, _render_list)
        if command == "search":
            data = await hub.search(
                " ".join(args.query),
                file=args.file,
                phase=args.phase,
                k=args.k,
                with_schema=args.json,
            )
            return _emit(args, data, _render_search)
        if command == "call":
            arguments = _parse_arguments(args.tool_args)
            result = await hub.call(args.tool, arguments, file=args.file, timeout=args.timeout)
            return _emit_call(args, result)
        if command == "status":
            return _emit(args, await hub.status(), _render_status)
        if command == "trust":
            return _emit(args, await hub.trust(args.names), _render_trust)
        from engram.mcphub.errors import InvalidToolArguments

        raise InvalidToolArguments(f"unknown mcp command {command!r}")
    finally:
        await hub.close()


def _parse_arguments(text: str) -> JsonObject:
    from engram.mcphub.errors import InvalidToolArguments

    if text == "-":
        text = sys.stdin.read()
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidToolArguments(
            f"--args is not valid JSON ({exc.msg} at column {exc.colno})"
        ) from exc
    if not isinstance(value, dict):
        raise InvalidToolArguments('--args must be a JSON object, e.g. \'{"timezone": "UTC"}\'')
    return value


def _emit(args: argparse.Namespace, data: dict[str, Any], render: Any) -> int:
    """``data`` as JSON or as lines, whose every control character is ``?``: a clone's
    ``.mcp.json`` writes the arguments and URLs shown, and ``engram mcp trust`` printed
    ``ESC]52;c;…`` (a clipboard write) and ``ESC[2K`` + CR (the approval line erased, "ok"
    left on it) to the terminal of the person approving it."""
    from engram.cli.output import terminal_text

    if getattr(args, "json", False):
        sys.stdout.write(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    else:
        for line in render(data):
            sys.stdout.write(terminal_text(line) + "\n")
        for note in data.get("notes", []) or []:
            sys.stderr.write(terminal_text(f"engram: note: {note}") + "\n")
    return 0


def _emit_call(args: argparse.Namespace, result: dict[str, Any]) -> int:
    from engram.cli.output import terminal_text
    from engram.mcphub.results import result_text

    failed = bool(result.get("isError"))
    if args.json:
        sys.stdout.write(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    else:
        text = result_text(result)
        if not text and result.get("structuredContent") is not None:
            text = json.dumps(result["structuredContent"], indent=2, ensure_ascii=False)
        if text:
            sys.stdout.write(terminal_text(text.rstrip("\n")) + "\n")
    if failed:
        first = " ".join(result_text(result).split())[:200] or "no message"
        line = f"engram: error: tool {result.get('tool')} returned an error: {first}"
        sys.stderr.write(terminal_text(line) + "\n")
        return 1
    return 0


def _render_refresh(data: dict[str, Any]) -> Sequence[str]:
    lines = [f"refreshed {name}" for name in data["refreshed"]]
    lines += [f"failed {name}: {error}" for name, error in data["failed"].items()]
    lines += [f"skipped {name}: {why}" for name, why in data["skipped"].items()]
    lines.append(f"{data['tools']} tools from {len(data['servers'])} servers")
    return lines


def _render_list(data: dict[str, Any]) -> Sequence[str]:
    lines = []
    for tool in data["tools"]:
        description = " ".join(tool["description"].split())
        lines.append(f"{tool['name']}\t{description[:100]}")
    if not data["tools"]:
        lines.append("no tools cached (configure servers, then: engram mcp refresh)")
    return lines


def _render_search(data: dict[str, Any]) -> Sequence[str]:
    lines = []
    for tool in data["tools"]:
        description = " ".join(tool["description"].split())
        lines.append(f"{tool['score']:.3f}\t{tool['name']}\t{description[:90]}")
    if not data["tools"]:
        lines.append(f"no matching tool among {data['total_tools']}")
    return lines


def _render_status(data: dict[str, Any]) -> Sequence[str]:
    lines = [f"workspace {data['workspace']}"]
    live = {c["server"]: c for c in data["pool"]["connections"]}
    for server in data["servers"]:
        conn = live.get(server["name"])
        state = server["state"] + (" (connected)" if conn else "")
        lines.append(
            f"{server['name']}\t{state}\t{server['transport']}\t{server['tools']} tools\t"
            f"{server['scope']}: {server['trust']}\t{server['origin']}"
        )
        if not server["trusted"]:  # what `engram mcp trust` would approve, before it does
            lines.append(f"  would start: {server['launch']}")
    if not data["servers"]:
        lines.append(
            "no MCP servers configured (.mcp.json, .vscode/mcp.json, ~/.config/engram/mcp.json …)"
        )
    pool = data["pool"]
    lines.append(f"connections {pool['live']}/{pool['max_connections']}")
    for problem in data["problems"]:
        lines.append(f"problem {problem['file']}: {problem['message']}")
    for shadow in data["shadowed"]:
        lines.append(f"shadowed {shadow['name']} in {shadow['file']}")
    return lines


def _render_trust(data: dict[str, Any]) -> Sequence[str]:
    lines = [f"approved {a['name']} from {a['origin']}: {a['launch']}" for a in data["approved"]]
    lines += [f"{name} is already trusted" for name in data["already_trusted"]]
    if data["approved"]:
        lines.append("next: engram mcp refresh")
    return lines


class _quiet_sdk_logs:
    """The SDK logs every unparsable line from a non-MCP server with a traceback; keep one line."""

    def __enter__(self) -> None:
        import logging

        class OneLine(logging.Filter):
            def filter(self, record: logging.LogRecord) -> bool:
                record.exc_info = None
                record.exc_text = None
                return "Failed to parse" not in record.getMessage()

        self._filter = OneLine()
        self._logger = logging.getLogger("mcp.client.stdio")
        self._logger.addFilter(self._filter)

    def __exit__(self, *exc: object) -> None:
        self._logger.removeFilter(self._filter)
