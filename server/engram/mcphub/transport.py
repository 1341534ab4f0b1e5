"""Open one MCP client session with the official SDK (the only module that imports ``mcp``).

Everything else in the hub talks to a session through :class:`McpSession`, a two-method
protocol, so tests can swap in a fake and the SDK is imported only when a server is
actually contacted (``engram --help`` and LSP ``initialize`` stay fast).

A stdio child gets only an allow-listed environment: the SDK's defaults (``PATH``, ``HOME``,
``USER``, ``SHELL``, ``TERM``, ``LOGNAME``) plus the variables its config names, never the
editor's whole environment with its tokens.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TextIO

from engram.mcphub.sources import ResolvedLaunch, ServerSpec, resolve_launch

if TYPE_CHECKING:
    from mcp.types import PaginatedRequestParams

log = logging.getLogger(__name__)


class McpSession(Protocol):
    """What the pool needs from a connected session (``mcp.ClientSession`` satisfies it).

    Results are ``object``: the pool reads them as JSON (``model_dump`` on the SDK's
    pydantic results, ``pool._dump``) and never relies on their Python type.
    """

    async def list_tools(self, *, params: PaginatedRequestParams | None = None) -> object: ...

    async def call_tool(self, name: str, arguments: dict[str, object] | None = None) -> object: ...


#: Opens a connected, initialised session for a server; used as ``async with opener(spec)``.
SessionOpener = Callable[[ServerSpec], AbstractAsyncContextManager[McpSession]]


def sdk_opener(
    *,
    workspace_root: Path,
    home: Path,
    environ: Mapping[str, str],
    log_dir: Path | None = None,
) -> SessionOpener:
    """The real opener: stdio, streamable HTTP or SSE through the ``mcp`` SDK."""

    @contextlib.asynccontextmanager
    async def open_session(spec: ServerSpec) -> AsyncIterator[McpSession]:
        launch = resolve_launch(spec, environ=environ, workspace_root=workspace_root, home=home)
        with contextlib.ExitStack() as files:
            errlog: TextIO | None = None
            if log_dir is not None and spec.transport == "stdio":
                log_dir.mkdir(parents=True, exist_ok=True)
                errlog = files.enter_context(
                    (log_dir / f"{spec.name}.stderr.log").open("a", encoding="utf-8")
                )
            async with _session(spec, launch, errlog) as session:
                yield session

    return open_session


@contextlib.asynccontextmanager
async def _session(
    spec: ServerSpec, launch: ResolvedLaunch, errlog: TextIO | None
) -> AsyncIterator[McpSession]:
    from mcp import ClientSession
    from mcp.types import Implementation

    from engram import __version__

    info = Implementation(name="engram", version=__version__)
    async with contextlib.AsyncExitStack() as stack:
        if spec.transport == "stdio":
            import sys

            from mcp.client.stdio import StdioServerParameters, stdio_client

            assert launch.command is not None
            params = StdioServerParameters(
                command=launch.command, args=launch.args, env=launch.env, cwd=launch.cwd
            )
            sink: TextIO = errlog if errlog is not None else sys.stderr
            if errlog is None and not _has_fileno(sys.stderr):
                sink = stack.enter_context(open(os.devnull, "w"))  # noqa: SIM115
            read, write = await stack.enter_async_context(stdio_client(params, errlog=sink))
        elif spec.transport == "http":
            from mcp.client.streamable_http import streamable_http_client
            from mcp.shared._httpx_utils import create_mcp_http_client

            assert launch.url is not None
            client = await stack.enter_async_context(
                create_mcp_http_client(headers=launch.headers or None)
            )
            read, write = await stack.enter_async_context(
                streamable_http_client(launch.url, http_client=client)
            )
        else:
            from mcp.client.sse import sse_client

            assert launch.url is not None
            read, write = await stack.enter_async_context(
                sse_client(launch.url, headers=launch.headers or None)
            )
        session = await stack.enter_async_context(ClientSession(read, write, client_info=info))
        await session.initialize()
        yield session


def _has_fileno(stream: object) -> bool:
    fileno = getattr(stream, "fileno", None)
    if not callable(fileno):
        return False
    try:
        fileno()
    except (OSError, ValueError):
        return False
    return True
