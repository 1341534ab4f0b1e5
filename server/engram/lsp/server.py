"""The pygls server object: the typed session, the command registry and the plumbing.

Only what every feature shares lives here (running background coroutines, calling back
onto the event loop from a worker thread, logging to the client). The server's state is
one :class:`~engram.lsp.session.Session`; the operations on it live in one module per
concern (``tracking``: documents and anchors; ``publishing``: diagnostics out;
``background``: indexing and the embedding child; ``linking``: the workspace engine;
``startup``: a folder's start; ``context``: what commands may use); the LSP methods are
modules under ``handlers/``, registered from the one list in ``features.py``. This module
imports none of them (import-linter keeps it so: docs/architecture.md).

Start-up order (fast ``initialize``): pygls answers ``initialize`` as soon as it is up;
``initialized`` starts a background task per workspace folder that reads the editor's
settings, reaches the workspace engine (or opens one in-process) and, when a code graph
already exists, brings it up to date, all under a cancellable work-done progress. Until a
folder is ready, hover and diagnostics answer with what is known (nothing, or the
digest), and commands wait for the engine instead of failing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVarTuple

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from engram import __version__
from engram.lsp.observe import EditorEventFeed
from engram.lsp.registry import CommandRegistry
from engram.lsp.session import DocumentState, Session

if TYPE_CHECKING:
    from pygls.server import ServerErrors

log = logging.getLogger(__name__)

Ts = TypeVarTuple("Ts")


class EngramLanguageServer(LanguageServer):
    """pygls server plus Engram's session (``self.session``)."""

    def __init__(self) -> None:
        super().__init__(
            "engram",
            __version__,
            text_document_sync_kind=types.TextDocumentSyncKind.Incremental,
        )
        self.session = Session()
        self.registry = CommandRegistry()
        #: editor events to the observer, one session per server process
        self.editor_events = EditorEventFeed()
        self.tasks: set[asyncio.Future[object]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        if self._loop is None:
            self._loop = asyncio.get_running_loop()
        return self._loop

    def spawn(self, coro: Awaitable[object], what: str) -> None:
        """Run a background coroutine; its failure is logged, never lost or fatal."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)

        def done(fut: asyncio.Future[object]) -> None:
            self.tasks.discard(fut)
            if not fut.cancelled() and fut.exception() is not None:
                log.error("%s failed: %s", what, fut.exception(), exc_info=fut.exception())

        task.add_done_callback(done)

    def threadsafe(self, fn: Callable[[*Ts], object], *args: *Ts) -> None:
        """Call ``fn(*args)`` on the event loop (from a worker thread)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(fn, *args)

    def observe_editor(self, doc: DocumentState, action: str) -> None:
        """Tell the observer what the editor did with ``doc`` (queued, never blocking)."""
        try:
            self.editor_events.emit(doc.folder, action, doc.rel)
        except Exception as exc:  # bookkeeping must never fail a request
            log.debug("editor event %s not queued: %s", action, exc)

    def log_to_client(self, level: int, message: str) -> None:
        kind = (
            types.MessageType.Error
            if level >= logging.ERROR
            else types.MessageType.Warning
            if level >= logging.WARNING
            else types.MessageType.Info
        )
        with contextlib.suppress(Exception):
            self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """Out-of-band failures go to the log, not to a pop-up per keystroke."""
        log.error("server error (%s): %s", getattr(source, "__name__", source), error)


class ClientLogHandler(logging.Handler):
    """Forward warnings and errors to ``window/logMessage`` (from any thread)."""

    def __init__(self, server: EngramLanguageServer) -> None:
        super().__init__(logging.WARNING)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = self.format(record)
        except Exception:
            return
        self.server.threadsafe(self.server.log_to_client, record.levelno, message)
