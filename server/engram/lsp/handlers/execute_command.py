"""workspace/executeCommand: every registry command, validated, errors as JSON-RPC errors."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException

from engram.lsp.context import ServerContext
from engram.lsp.feature import Feature
from engram.lsp.registry import CommandError

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer


def register(server: EngramLanguageServer) -> None:
    for name in server.registry.names():
        _register_one(server, name)


def _register_one(server: EngramLanguageServer, name: str) -> None:
    # ``ls: Any``: pygls resolves a command handler's annotations at call time, and the
    # server class is only imported for type checking here
    async def run(ls: Any, *args: Any) -> Any:
        ctx = ServerContext(ls)
        ctx.observe_command(name, list(args))
        try:
            return await ls.registry.execute(ctx, name, list(args))
        except CommandError as exc:
            raise JsonRpcException(message=exc.message, code=exc.code) from exc

    run.__name__ = "command_" + name.replace(".", "_")
    server.command(name)(run)


FEATURE = Feature("commands", register)
