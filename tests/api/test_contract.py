"""The three front ends expose the declared use cases, with the declared names and limits.

Each surface is read back from what it really builds (the CLI's argparse parser, the
language server's command registry, the MCP server's tool schemas) and compared with the
declarations in ``engram.api``; then out-of-range values go through each real surface and
must be refused with the same message.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Any

import pytest

from engram.api import USE_CASES, Surface, UseCase, on
from engram.api.declare import Kind, Param, check_text, excerpt
from engram.cli.declared import USECASE_KEY, flags_of
from engram.cli.main import build_parser
from engram.errors import InvalidInput
from engram.lsp.commands import register_commands
from engram.lsp.registry import CommandError, CommandRegistry
from engram.mcp_server.server import HUB_TOOLS, input_schema

#: The CLI's own commands: operations on the process or files, not declared use cases.
CLI_ONLY = {
    *("index", "observe", "hook", "digest", "mcp", "serve", "mcp-serve", "export", "import"),
    "setup",  # writes an agent's own config files (issue 16), not a use case on memories
    # the workspace engine's own life (docs/engine.md): they talk to the engine process,
    # never run on an Engine, so no other surface could offer them
    *("engine", "status", "stop"),
    # approves the workspace's settings by their hash (docs/security.md): a person's
    # decision at a terminal; an agent over MCP or an editor command must never make it
    "trust",
    # prints a shell's completion script generated from the parser itself (shtab): it is
    # about the command line, so no editor or agent surface has anything to complete
    "completion",
}


def cli_commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def lsp_registry() -> CommandRegistry:
    registry = CommandRegistry()
    register_commands(registry)
    return registry


def test_every_surface_offers_exactly_the_declared_use_cases() -> None:
    cli = cli_commands()
    declared_cli = {u.cli for u in on(Surface.CLI)}
    assert set(cli) == declared_cli | CLI_ONLY
    for name in declared_cli:
        assert cli[name].get_default(USECASE_KEY) is not None, name
    registry = lsp_registry()
    assert set(registry.names()) == {u.lsp for u in on(Surface.LSP)}
    from engram.mcp_server.server import build_server

    server = build_server()
    tools = asyncio.run(_list_tools(server))
    assert set(tools) == {u.mcp for u in on(Surface.MCP)} | set(HUB_TOOLS)


async def _list_tools(server: Any) -> dict[str, dict[str, Any]]:
    """The tools/list answer of the real MCP server, through an in-memory client."""
    from mcp.client.session import ClientSession
    from mcp.shared.memory import create_client_server_memory_streams

    async with create_client_server_memory_streams() as (client_streams, server_streams):
        import anyio

        async with anyio.create_task_group() as tg:
            tg.start_soon(
                lambda: server.run(
                    server_streams[0], server_streams[1], server.create_initialization_options()
                )
            )
            async with ClientSession(*client_streams) as session:
                await session.initialize()
                listed = await session.list_tools()
            tg.cancel_scope.cancel()
    return {t.name: t.input_schema for t in listed.tools}


def _cli_action(parser: argparse.ArgumentParser, param: Param) -> argparse.Action | None:
    for action in parser._actions:
        if action.dest == param.name:
            return action
    return None


@pytest.mark.parametrize("usecase", USE_CASES, ids=lambda u: u.name)
def test_limits_and_defaults_match_on_every_surface(usecase: UseCase[Any, Any]) -> None:
    if Surface.CLI in usecase.surfaces:
        parser = cli_commands()[usecase.cli]
        for param in usecase.params(Surface.CLI):
            action = _cli_action(parser, param)
            assert action is not None, f"{usecase.name}.{param.name} missing on the CLI"
            if not param.spec.positional and param.kind is not Kind.BOOL:
                assert set(action.option_strings) == set(flags_of(param))
                assert action.required == param.required
    if Surface.MCP in usecase.surfaces:
        schema = input_schema(usecase)
        props = schema["properties"]
        for param in usecase.params(Surface.MCP):
            prop = props[param.name]
            if param.spec.ge is not None:
                assert prop["minimum"] == param.spec.ge
            if param.spec.le is not None:
                assert prop["maximum"] == param.spec.le
            if param.choices:
                enum = prop.get("enum") or prop["items"]["enum"]
                assert enum == list(param.choices)
        assert set(schema.get("required", [])) == {
            p.name for p in usecase.params(Surface.MCP) if p.required
        }


def _over_limit(usecase: UseCase[Any, Any]) -> list[tuple[Param, object]]:
    bad: list[tuple[Param, object]] = []
    for param in usecase.params():
        if not any(param.offered_on(s) for s in usecase.surfaces):
            continue  # set only through a spelling (``--line``), checked there
        if param.kind is Kind.INT and param.spec.le is not None:
            bad.append((param, int(param.spec.le) + 1))
        elif param.kind is Kind.INT and param.spec.ge is not None:
            bad.append((param, int(param.spec.ge) - 1))
    return bad


CASES = [(u, p, v) for u in USE_CASES for p, v in _over_limit(u)]


def _required(usecase: UseCase[Any, Any], surface: Surface) -> dict[str, object]:
    values: dict[str, object] = {}
    for param in usecase.params(surface):
        if param.required:
            values[param.name] = {"event": {}} if param.kind is Kind.OBJECT else "x"
            if param.kind is Kind.ENUM:
                values[param.name] = param.choices[0]
    for spelling in usecase.spellings_on(surface):
        if spelling.required:
            values[spelling.name] = "x.py"
    return values


@pytest.mark.parametrize(
    ("usecase", "param", "value"), CASES, ids=lambda x: getattr(x, "name", str(x))
)
def test_out_of_range_is_refused_alike_everywhere(
    usecase: UseCase[Any, Any], param: Param, value: object
) -> None:
    messages: dict[str, str] = {}
    if Surface.LSP in usecase.surfaces and param.offered_on(Surface.LSP):
        registry = lsp_registry()
        spec = registry.get(usecase.lsp)
        assert spec is not None
        with pytest.raises(CommandError) as err:
            registry.structure(spec, [{**_required(usecase, Surface.LSP), param.name: value}])
        messages["lsp"] = err.value.message.split(": ", 1)[1]
    if Surface.MCP in usecase.surfaces and param.offered_on(Surface.MCP):
        with pytest.raises(InvalidInput) as mcp_err:
            usecase.parse({**_required(usecase, Surface.MCP), param.name: value}, Surface.MCP)
        messages["mcp"] = str(mcp_err.value)
    if Surface.CLI in usecase.surfaces and param.offered_on(Surface.CLI):
        from engram.cli.declared import cli_spelling, raw_arguments

        parser = cli_commands()[usecase.cli]
        flag = flags_of(param)[0]
        argv = [flag, str(value)]
        argv += [str(given) for given in _required(usecase, Surface.CLI).values()]
        args = parser.parse_args(argv)
        with pytest.raises(InvalidInput) as cli_err:
            usecase.parse(raw_arguments(usecase, args), Surface.CLI)
        messages["cli"] = cli_spelling(usecase, str(cli_err.value)).replace(flag, param.name)
    assert len(set(messages.values())) == 1, messages
    assert f"got {value}" in next(iter(messages.values()))


def test_text_checks_are_one_line_with_a_short_excerpt() -> None:
    with pytest.raises(InvalidInput, match="NUL byte"):
        check_text("a\x00b", "text")
    with pytest.raises(InvalidInput, match="not valid UTF-8"):
        check_text("bad \udcff byte", "text")
    with pytest.raises(InvalidInput) as long:
        check_text("x" * 5000, "symbol", 500)
    assert len(str(long.value)) < 120 and "\n" not in str(long.value)
    assert len(excerpt("y" * 1000)) <= 42


@pytest.mark.parametrize("surface", [Surface.LSP, Surface.MCP])
def test_strings_never_pass_as_lists_nor_lists_as_strings(surface: Surface) -> None:
    from engram.api.memories import REMEMBER, SEARCH

    with pytest.raises(InvalidInput, match="tags: expected a list"):
        REMEMBER.parse({"text": "x", "tags": "abc"}, surface)
    with pytest.raises(InvalidInput, match="text: expected a string"):
        REMEMBER.parse({"text": ["a", "b"]}, surface)
    # one memory type where a list is expected is an explicit, declared convenience
    assert SEARCH.parse({"query": "q", "types": "gotcha"}, surface).types is not None
    with pytest.raises(InvalidInput, match="k: expected an integer"):
        SEARCH.parse({"query": "q", "k": "5"}, surface)
    with pytest.raises(InvalidInput, match="k: expected an integer"):
        SEARCH.parse({"query": "q", "k": True}, surface)
