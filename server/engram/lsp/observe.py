"""Editor events to the observer: open, change, save, close, hover and code-action use.

The observer learns what files are worked on together (co-access), what gets edited and
reverted, and where the user looks at memories (issue 5, item 1a). The language server
sees all of that, but must never pay for it: handlers run on the event loop and a hover
must answer in microseconds. So :meth:`EditorEventFeed.emit` only builds a small dict and
puts it on a bounded queue; one worker thread hands the events to ``engram.app.observe.observe``
(one small file append each) and logs, never raises, when that fails. ``change`` and
``hover`` are debounced per document (at most one per :data:`DEBOUNCE_SECONDS`): typing
is one piece of work, not hundreds of events.

All events of one server process share one session id; :meth:`EditorEventFeed.close`
(at ``shutdown``) ends that session in every folder that saw events, so the observer
finalises it (summary, promotion gate) instead of waiting for the idle sweep.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.lsp.folder import Folder
    from engram.lsp.remote import EngineLink

log = logging.getLogger(__name__)

#: At most one ``change`` / ``hover`` event per document in this many seconds.
DEBOUNCE_SECONDS = 3.0
DEBOUNCED_ACTIONS = frozenset({"change", "hover"})
#: Events waiting for the worker; beyond this they are dropped (the editor never waits).
MAX_QUEUED = 1000
#: Events kept while a folder's engine is still opening.
MAX_WAITING = 200
#: How long shutdown waits for the last events to be written.
CLOSE_TIMEOUT = 5.0


class _Stop:
    """What tells the worker to end (after the events queued before it)."""


_STOP = _Stop()
#: one editor event for one folder's observer
_Event: TypeAlias = tuple["Folder", dict[str, object]]


class EditorEventFeed:
    """Debounced, non-blocking delivery of editor events to each folder's observer."""

    def __init__(
        self,
        *,
        session_id: str | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.session_id = session_id or f"lsp-{uuid.uuid4().hex[:12]}"
        self._clock = clock
        self._wall_clock = wall_clock
        self._queue: queue.Queue[_Event | _Stop] = queue.Queue(maxsize=MAX_QUEUED)
        self._last: dict[tuple[str, str, str], float] = {}
        self._thread: threading.Thread | None = None
        self._thread_lock = threading.Lock()
        self._waiting: list[_Event] = []
        #: folders (by uri) whose observer got at least one event: they get session_end
        self._observed: dict[str, Folder] = {}
        self._closed = False
        self.delivered = 0
        self.dropped = 0

    # ------------------------------------------------------------------ event loop side

    def emit(self, folder: Folder, action: str, rel: str) -> bool:
        """Queue one editor event (cheap; call from the event loop). True when queued."""
        if self._closed:
            return False
        config = folder.config
        if config is not None and not config.observer.enabled:
            return False
        if action in DEBOUNCED_ACTIONS:
            key = (folder.uri, action, rel)
            now = self._clock()
            last = self._last.get(key)
            if last is not None and now - last < DEBOUNCE_SECONDS:
                return False
            self._last[key] = now
        event: dict[str, object] = {
            "kind": "editor",
            "action": action,
            "files": [rel],
            "session_id": self.session_id,
            "ts": self._wall_clock(),
        }
        return self._put((folder, event))

    def forget_document(self, folder: Folder, rel: str) -> None:
        """A closed document's debounce state is not needed any more."""
        for action in DEBOUNCED_ACTIONS:
            self._last.pop((folder.uri, action, rel), None)

    def _put(self, item: _Event) -> bool:
        self._ensure_worker()
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            log.debug("observer queue full: editor event dropped")
            return False
        return True

    def _ensure_worker(self) -> None:
        if self._thread is not None:
            return
        with self._thread_lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="engram-editor-events", daemon=True
                )
                self._thread.start()

    # ------------------------------------------------------------------ worker side

    def _run(self) -> None:
        while True:
            item: _Event | _Stop | None
            try:
                item = self._queue.get(timeout=0.5 if self._waiting else None)
            except queue.Empty:
                item = None
            if self._waiting:
                waiting, self._waiting = self._waiting, []
                for folder, event in waiting:
                    self._deliver(folder, event)
            if isinstance(item, _Stop):
                return
            if item is not None:
                folder, event = item
                self._deliver(folder, event)

    def _deliver(self, folder: Folder, event: dict[str, object]) -> None:
        # leased: a settings change may swap the engine while this thread observes
        with (
            folder.engines.hold("editor event") as engine,
            folder.links.hold("editor event") as link,
        ):
            self._deliver_to(folder, event, engine, link)

    def _deliver_to(
        self,
        folder: Folder,
        event: dict[str, object],
        engine: Engine | None,
        link: EngineLink | None,
    ) -> None:
        if engine is None and link is not None:  # the workspace engine observes
            if folder.config is not None and not folder.config.observer.enabled:
                return
            try:
                link.observe([event])
            except Exception as exc:
                self.dropped += 1
                log.debug("the engine refused an editor event: %s", exc)
                return
            self.delivered += 1
            self._observed.setdefault(folder.uri, folder)
            return
        if engine is None:
            if folder.error is None and len(self._waiting) < MAX_WAITING:
                self._waiting.append((folder, event))  # the engine is still opening
            else:
                self.dropped += 1
            return
        if not engine.config.observer.enabled:
            return
        from engram.app.observe import observe

        try:
            observe(engine, event)
        except Exception as exc:  # the observer is a bystander: never fail the editor
            self.dropped += 1
            log.debug("observer refused an editor event: %s", exc)
            return
        self.delivered += 1
        self._observed.setdefault(folder.uri, folder)

    # ------------------------------------------------------------------ shutdown

    def close(self, timeout: float = CLOSE_TIMEOUT) -> None:
        """Deliver what is queued, end the session in every folder that saw events, stop.

        Blocking (joins the worker): call it from a worker thread, before the engines close.
        """
        if self._closed:
            return
        self._closed = True
        if self._thread is None:
            return
        self._queue.put(_STOP)
        self._thread.join(timeout)
        for folder in list(self._observed.values()):
            with (
                folder.engines.hold("session end") as engine,
                folder.links.hold("session end") as link,
            ):
                self._end_session(engine, link)

    def _end_session(self, engine: Engine | None, link: EngineLink | None) -> None:
        from engram.app.observe import observe

        end: dict[str, object] = {"kind": "session_end", "session_id": self.session_id}
        try:
            if engine is None and link is not None:
                link.observe([end])
            elif engine is not None:
                observe(engine, end)
        except Exception as exc:
            log.debug("could not end the editor session: %s", exc)


__all__ = ["DEBOUNCE_SECONDS", "EditorEventFeed"]
