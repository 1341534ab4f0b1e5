"""Work-done progress (``$/progress``): begin, report, end, and the client's cancel."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from typing import TYPE_CHECKING

from lsprotocol import types

if TYPE_CHECKING:
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)

#: Seconds between two reports of one task (the last one always goes out).
PROGRESS_INTERVAL = 0.2


async def begin(ls: EngramLanguageServer, title: str) -> str | None:
    """A cancellable progress token, or ``None`` when the client shows no progress."""
    caps = ls.client_capabilities.window
    if caps is None or not caps.work_done_progress:
        return None
    token = f"engram-{uuid.uuid4().hex[:8]}"
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), timeout=5.0)
    except Exception as exc:
        log.debug("progress not created: %s", exc)
        return None
    ls.work_done_progress.begin(
        token, types.WorkDoneProgressBegin(title=title, cancellable=True, percentage=0)
    )
    return token


def report(
    ls: EngramLanguageServer, token: str | None, message: str, pct: int | None = None
) -> None:
    if token is None:
        return
    ls.work_done_progress.report(
        token, types.WorkDoneProgressReport(message=message, percentage=pct, cancellable=True)
    )


def end(ls: EngramLanguageServer, token: str | None, message: str) -> None:
    if token is None:
        return
    with contextlib.suppress(Exception):
        ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=message))
    ls.work_done_progress.tokens.pop(token, None)


def cancelled(ls: EngramLanguageServer, token: str | None) -> bool:
    if token is None:
        return False
    future = ls.work_done_progress.tokens.get(token)
    return future is not None and future.cancelled()
