"""A front end's declared use cases, run in the workspace's warm engine (docs/engine.md).

The MCP server and the language server's ``workspace/executeCommand`` send a use case by
its declared name with the raw arguments they received (``call`` requests, answered by
``engram.daemon.handlers.run_call``): the engine checks them with the same declaration,
runs them on its warm engine and renders the result, exactly as the front end would have
done in-process, so neither front end opens LanceDB or loads the model for it. Who acts
travels with the request (``agent:mcp``, ``agent:lsp:<client>``; docs/trust.md "Agents are
not people").

:class:`EngineCalls` answers ``None`` when the engine cannot be reached (turned off, no
private runtime directory, it would not start, or it went away twice): the caller then
runs the use case in-process, as the CLI does (``engram.daemon.forward``). A user's
mistake the engine reports comes back as :class:`~engram.errors.InvalidInput` with the
engine's one-line message, so the front end shows what it would have shown in-process.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.errors import EngramError, InvalidInput

if TYPE_CHECKING:
    from engram.daemon.client import Connection
    from engram.jsontypes import JsonObject

log = logging.getLogger(__name__)

#: After the engine could not be reached, how long a front end works in-process before it
#: tries again (a start attempt costs up to the engine's start timeout).
RETRY_SECONDS = 60.0


def _strings(raw: object) -> list[str]:
    return [str(x) for x in raw] if isinstance(raw, list) else []


@attrs.frozen
class CallReply:
    """What the engine answered for one use case (``run_call``'s reply, typed)."""

    json: JsonObject
    text: str
    notes: list[str]
    exit: int
    #: ids of the memories the result wrote (``[]``: refresh everything; ``None``: nothing)
    touched: list[str] | None
    shown: list[str]
    learned: list[str]
    corrected: tuple[str, str] | None
    #: the engine process that ran it
    pid: int

    @classmethod
    def from_result(cls, result: object, pid: int) -> CallReply:
        if not isinstance(result, dict):
            raise EngramError("the engine answered a use case with nonsense")
        data = result.get("json")
        touched = result.get("touched")
        corrected = result.get("corrected")
        exit_code = result.get("exit")
        return cls(
            json=data if isinstance(data, dict) else {},
            text=str(result.get("text") or ""),
            notes=_strings(result.get("notes")),
            exit=exit_code if isinstance(exit_code, int) else 0,
            touched=None if touched is None else _strings(touched),
            shown=_strings(result.get("shown")),
            learned=_strings(result.get("learned")),
            corrected=(
                (str(corrected[0]), str(corrected[1]))
                if isinstance(corrected, list) and len(corrected) == 2
                else None
            ),
            pid=pid,
        )


def call_request(
    usecase: str, surface: str, args: Mapping[str, object], actor: str | None = None
) -> dict[str, object]:
    """The ``call`` request's parameters (``engram.daemon.handlers.run_call``)."""
    request: dict[str, object] = {"usecase": usecase, "surface": surface, "args": dict(args)}
    if actor:
        request["actor"] = actor
    return request


def send(connection: Connection, request: Mapping[str, object]) -> CallReply:
    """One ``call`` on ``connection``; a user's mistake raises ``InvalidInput``, a lost
    connection ``WireError``."""
    from engram.daemon.client import EngineError

    try:
        result = connection.call("call", request)
    except EngineError as exc:
        if exc.is_user_error:
            raise InvalidInput(str(exc)) from None
        raise EngramError(f"the engine failed: {exc}") from None
    return CallReply.from_result(result, connection.pid)


class EngineCalls:
    """One front end's connection for declared use cases, opened (and the engine started)
    on the first call, shared by the threads that run calls, closed with the front end."""

    def __init__(
        self,
        root: str | Path,
        kind: str,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.root = Path(root)
        self.kind = kind
        self._clock = clock
        self._lock = threading.Lock()
        self._connection: Connection | None = None
        self._retry_at = 0.0
        #: why the last call ran in-process (for logs and ``--verbose``-like notes)
        self.unavailable: str | None = None

    def _connect(self) -> Connection | None:
        from engram.daemon.client import EngineUnavailable, connect

        with self._lock:
            if self._connection is not None and not self._connection.closed:
                return self._connection
            if self._clock() < self._retry_at:
                return None
            try:
                connection = connect(self.root, self.kind)
            except EngineUnavailable as exc:
                self.unavailable = str(exc)
                self._retry_at = self._clock() + RETRY_SECONDS
                log.info("no workspace engine for %s (%s): in-process", self.root, exc)
                return None
            connection.listen()  # several threads may call at once
            self._connection = connection
            self.unavailable = None
            return connection

    def call(
        self, usecase: str, surface: str, args: Mapping[str, object], actor: str | None = None
    ) -> CallReply | None:
        """Run ``usecase`` in the engine; ``None``: run it in-process (see the module doc)."""
        from engram.daemon.wire import WireError

        request = call_request(usecase, surface, args, actor)
        for attempt in (1, 2):
            connection = self._connect()
            if connection is None:
                return None
            try:
                return send(connection, request)
            except WireError as exc:  # one reconnect (it starts a new engine), then in-process
                log.warning(
                    "the engine went away (%s)%s", exc, "; once more" if attempt == 1 else ""
                )
                connection.close()
        self.unavailable = "the engine failed twice"
        return None

    @property
    def pid(self) -> int | None:
        connection = self._connection
        return connection.pid if connection is not None and not connection.closed else None

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


__all__ = ["RETRY_SECONDS", "CallReply", "EngineCalls", "call_request", "send"]
