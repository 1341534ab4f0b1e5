"""Issue 13, robust inputs: hostile values through every front end's argument path, for every
declared use case (the declarations are iterated, never listed here).

For each use case and each surface it is on, every parameter that surface offers gets a NUL
byte, text that is not UTF-8, a 10 MB string, a string where a list belongs, a value of the
wrong type and (for memory ids) a path-like id. Each must be refused by the declarations
(``engram.api.declare``) with one short line naming the parameter, before anything runs:

* CLI: the real argparse parser, then the declaration (what ``engram <command>`` does);
  argparse's own usage error (exit 2) counts as a clear refusal. A NUL byte cannot be in argv.
* LSP: the real command registry's ``structure`` (what ``workspace/executeCommand`` does):
  ``InvalidParams``.
* MCP: the real MCP server through an in-memory client session: a tool error, no result.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
from pathlib import Path
from typing import Any

import pytest

from engram.api import USE_CASES, Surface, UseCase
from engram.api.declare import Kind, Param
from engram.cli.declared import flags_of, raw_arguments
from engram.cli.main import build_parser
from engram.errors import InvalidInput
from engram.lsp.commands import register_commands
from engram.lsp.registry import INVALID_PARAMS, CommandError, CommandRegistry
from engram.workspace import Workspace

HUGE = "x" * 10_000_000
#: An error line longer than this echoes its input.
MAX_MESSAGE = 300
#: Parameters that name stored memories must be checked as memory ids.
ID_NAMES = {"id", "ids", "supersedes"}


def _valid(param: Param) -> object:
    """A value the declaration accepts (to fill required parameters)."""
    if param.kind is Kind.ENUM:
        return param.choices[0]
    if param.kind is Kind.OBJECT:
        return {"hook_event_name": "Stop"}
    if param.kind is Kind.INT:
        return int(param.spec.ge or 1)
    if param.spec.memory_id:
        return "m-0000000001"
    return "app.py" if param.spec.path else "x"


def _hostile(param: Param, surface: Surface) -> dict[str, object]:
    kind = param.kind
    listed = kind in (Kind.TEXT_LIST, Kind.ENUM_LIST)
    cases: dict[str, object] = {"10 MB string": HUGE}
    if kind in (Kind.TEXT, Kind.ENUM):
        cases["NUL byte"] = "a\x00b"
        cases["not UTF-8"] = "caf\udce9"
    if listed:
        cases["NUL byte"] = ["a\x00b"]
        cases["not UTF-8"] = ["caf\udce9"]
        cases["10 MB item"] = [HUGE]
        if not param.spec.one_or_many:
            cases["string for a list"] = "a,b"
    if kind is Kind.OBJECT:
        cases["10 MB object"] = {f"k{i}": "x" * 900_000 for i in range(12)}
        cases["NUL byte"] = {"a": "b\x00"}
    if param.spec.memory_id:
        cases["path-like id"] = ["../../pwn_escape"] if listed else "../../pwn_escape"
    if surface is Surface.CLI:
        cases.pop("NUL byte", None)  # argv cannot hold one: the OS refuses to exec
        cases.pop("string for a list", None)  # a CLI list is a repeated flag
        if kind in (Kind.INT, Kind.FLOAT, Kind.ENUM):
            cases["wrong type"] = "many"
        if kind is Kind.BOOL or kind is Kind.OBJECT:
            cases = {}  # a switch takes no value; no CLI command takes an object
        return cases
    wrong: dict[Kind, object] = {
        Kind.TEXT: ["a", "b"],
        Kind.INT: "5",
        Kind.FLOAT: "0.5",
        Kind.BOOL: "true",
        Kind.ENUM: 5,
        Kind.TEXT_LIST: {"a": 1},
        Kind.ENUM_LIST: 5,
        Kind.OBJECT: "x",
    }
    cases["wrong type"] = wrong[kind]
    return cases


def _problem(param: Param, label: str, message: str) -> str | None:
    """Why a refusal is not a clear one (None when it is)."""
    if "\n" in message:
        return f"{param.name} / {label}: more than one line: {message[:200]!r}"
    if len(message) > MAX_MESSAGE:
        return f"{param.name} / {label}: {len(message)} chars, echoes its input"
    if "x" * 50 in message:
        return f"{param.name} / {label}: quotes more than a short excerpt"
    names = {param.name, *param.spec.aliases, *flags_of(param), param.spec.metavar or ""}
    names |= {n.replace("_", "-") for n in names}
    if not any(n and n in message for n in names):
        return f"{param.name} / {label}: does not name the argument: {message!r}"
    return None


def _cases(usecase: UseCase[Any, Any], surface: Surface) -> list[tuple[Param, str, object]]:
    return [
        (param, label, value)
        for param in usecase.params(surface)
        for label, value in _hostile(param, surface).items()
    ]


def _required(usecase: UseCase[Any, Any], surface: Surface) -> dict[str, object]:
    values = {p.name: _valid(p) for p in usecase.params(surface) if p.required}
    values |= {s.name: "app.py" for s in usecase.spellings_on(surface) if s.required}
    return values


SURFACE_CASES = [(u, s) for u in USE_CASES for s in Surface if s in u.surfaces]


def _id(value: object) -> str:
    return getattr(value, "name", str(value))


def test_every_memory_id_parameter_is_declared_as_one() -> None:
    for usecase in USE_CASES:
        for param in usecase.params():
            assert param.spec.memory_id == (param.name in ID_NAMES), (usecase.name, param.name)


@pytest.mark.parametrize(("usecase", "surface"), SURFACE_CASES, ids=_id)
def test_hostile_values_are_refused_in_one_short_line(
    usecase: UseCase[Any, Any], surface: Surface, tmp_workspace: Workspace
) -> None:
    cases = _cases(usecase, surface)
    if surface is Surface.CLI:
        problems = _through_cli(usecase, cases)
    elif surface is Surface.LSP:
        problems = _through_lsp(usecase, cases)
    else:
        problems = asyncio.run(_through_mcp(usecase, cases, tmp_workspace.root))
    assert problems == []


def _through_cli(usecase: UseCase[Any, Any], cases: list[tuple[Param, str, object]]) -> list[str]:
    parser = _cli_parsers()[usecase.cli]
    required = _required(usecase, Surface.CLI)
    problems: list[str] = []
    for param, label, value in cases:
        argv: list[str] = []
        given = {**required, param.name: value}
        for p in usecase.params(Surface.CLI):
            if p.name not in given:
                continue
            items = given[p.name] if isinstance(given[p.name], list) else [given[p.name]]
            for item in items:  # type: ignore[union-attr]
                argv += [str(item)] if p.spec.positional else [flags_of(p)[0], str(item)]
        argv += [str(v) for k, v in required.items() if k not in {p.name for p in usecase.params()}]
        stderr = io.StringIO()
        try:
            with contextlib.redirect_stderr(stderr):
                args = parser.parse_args(argv)
            usecase.parse(raw_arguments(usecase, args), Surface.CLI)
        except SystemExit as exit_:
            if exit_.code != 2:
                problems.append(f"{param.name} / {label}: argparse exit {exit_.code}")
            elif len(stderr.getvalue()) > 2 * MAX_MESSAGE + 2000:
                problems.append(f"{param.name} / {label}: the usage error echoes its input")
            continue
        except InvalidInput as exc:
            problem = _problem(param, label, str(exc))
            if problem:
                problems.append(problem)
            continue
        except Exception as exc:  # a crash, not a refusal
            problems.append(f"{param.name} / {label}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        problems.append(f"{param.name} / {label}: accepted")
    return problems


def _cli_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _through_lsp(usecase: UseCase[Any, Any], cases: list[tuple[Param, str, object]]) -> list[str]:
    registry = CommandRegistry()
    register_commands(registry)
    spec = registry.get(usecase.lsp)
    assert spec is not None
    required = _required(usecase, Surface.LSP)
    problems: list[str] = []
    for param, label, value in cases:
        try:
            registry.structure(spec, [{**required, param.name: value}])
        except CommandError as exc:
            if exc.code != INVALID_PARAMS:
                problems.append(f"{param.name} / {label}: error code {exc.code}")
            problem = _problem(param, label, exc.message.split(": ", 1)[-1])
            if problem:
                problems.append(problem)
            continue
        except Exception as exc:
            problems.append(f"{param.name} / {label}: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        problems.append(f"{param.name} / {label}: accepted")
    return problems


async def _through_mcp(
    usecase: UseCase[Any, Any], cases: list[tuple[Param, str, object]], root: Path
) -> list[str]:
    import anyio
    from mcp.client.session import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    from engram.mcp_server.server import build_server

    Workspace.open(root).ensure_engram_dir()  # set up: a folder nobody set up is not served
    server = build_server(str(root))
    required = _required(usecase, Surface.MCP)
    problems: list[str] = []
    streams = create_client_server_memory_streams()
    async with streams as (client_streams, server_streams), anyio.create_task_group() as tg:
        tg.start_soon(
            lambda: server.run(
                server_streams[0], server_streams[1], server.create_initialization_options()
            )
        )
        async with ClientSession(client_streams[0], client_streams[1]) as session:
            await session.initialize()
            for param, label, value in cases:
                result = await session.call_tool(usecase.mcp, {**required, param.name: value})
                text = " ".join(getattr(c, "text", "") for c in result.content)
                if not result.is_error:
                    problems.append(f"{param.name} / {label}: accepted")
                    continue
                problem = _problem(param, label, text)
                if problem:
                    problems.append(problem)
        tg.cancel_scope.cancel()
    return problems
