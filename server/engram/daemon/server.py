"""``engram engine``: the one process that holds a workspace's engine (docs/engine.md).

Start-up order keeps front ends waiting as little as possible: take the life lock
(``<key>.lock``; a second engine for the same key exits at once), bind the socket (``0600``;
loopback with a token where there are no Unix sockets), answer hellos, and only then open
the :class:`~engram.app.Engine` and warm it (store, model) in a worker thread; requests that
arrive meanwhile wait for it. Every request runs in a worker thread; the event loop only
reads and writes frames, sends heartbeats for requests in flight and tells subscribed
front ends when memories changed (the engine's write listener).

It exits when told to (``stop``, SIGTERM), and when no front end has been connected for
``idle_seconds`` (``ENGRAM_ENGINE_IDLE_SECONDS``, default 600). A repository's own settings
apply only as far as the user approved them (``engram.config``); the engine re-reads them
when a settings file or the user's approvals change, so ``engram trust`` takes effect
without a restart.

Long on purpose: the engine process is one event loop and its connection state machine
(hello, requests in worker threads, heartbeats, subscriptions, idle exit); split, its
invariants would span files (docs/engine.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import functools
import hmac
import logging
import logging.handlers
import os
import queue
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import attrs

from engram import __version__
from engram.daemon import handlers, streams
from engram.daemon.address import Address, peer_uid, write_private
from engram.daemon.wire import (
    BUILD,
    DENIED,
    HEARTBEAT_SECONDS,
    INTERNAL,
    MAX_FRAME,
    PROTOCOL,
    PROTOCOL_MISMATCH,
    USER,
    Json,
    WireError,
    decode,
    encode,
)
from engram.errors import USER_ERRORS

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.app.engine import Deferred
    from engram.model import Memory

log = logging.getLogger(__name__)

IDLE_ENV = "ENGRAM_ENGINE_IDLE_SECONDS"
DEFAULT_IDLE_SECONDS = 600.0
#: Worker threads for requests (writes serialise on the store's lock anyway).
WORKERS = 8
#: How long a stopping engine lets requests in flight finish.
DRAIN_SECONDS = 10.0
#: How often the engine looks for writes made by processes that worked in-process.
FOREIGN_POLL_SECONDS = 2.0


def idle_seconds_from_env() -> float:
    raw = os.environ.get(IDLE_ENV, "").strip()
    try:
        value = float(raw) if raw else DEFAULT_IDLE_SECONDS
    except ValueError:
        log.warning("%s=%r is not a number; using %g", IDLE_ENV, raw, DEFAULT_IDLE_SECONDS)
        return DEFAULT_IDLE_SECONDS
    return max(0.5, value)


@attrs.define
class ClientInfo:
    """A connected front end, as ``engram status`` lists it."""

    id: int
    kind: str
    pid: int
    since: float
    subscribe: bool
    writer: asyncio.StreamWriter
    in_flight: set[int] = attrs.field(factory=set)
    requests: int = 0

    def to_dict(self, now: float) -> Json:
        return {
            "id": self.id,
            "kind": self.kind,
            "pid": self.pid,
            "connected_seconds": round(now - self.since, 1),
            "requests": self.requests,
            "subscribed": self.subscribe,
        }


def memory_bytes() -> tuple[int | None, int | None]:
    """(resident, peak resident) bytes of this process (Linux ``/proc``; else peak only)."""
    rss = peak = None
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) * 1024
                elif line.startswith("VmHWM:"):
                    peak = int(line.split()[1]) * 1024
    except OSError:
        import resource

        peak = int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
        if sys.platform != "darwin":
            peak *= 1024
    return rss, peak


class _ConfigWatch:
    """Stat fingerprints of every file the engine's settings come from."""

    def __init__(self, root: Path) -> None:
        config_home = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
        user = Path(config_home) / "engram"
        self.paths = [
            root / "pyproject.toml",
            root / ".engram" / "config.toml",
            user / "config.toml",
            user / "approvals.json",
        ]
        self.last = self.fingerprint()

    def fingerprint(self) -> tuple[tuple[int, int] | None, ...]:
        out: list[tuple[int, int] | None] = []
        for path in self.paths:
            try:
                info = path.stat()
                out.append((info.st_mtime_ns, info.st_size))
            except OSError:
                out.append(None)
        return tuple(out)

    def changed(self) -> bool:
        now = self.fingerprint()
        if now == self.last:
            return False
        self.last = now
        return True


class _DataDirWatch:
    """Which ``.engram/`` directory (device and inode) the engine's open files live in.

    A reset (``rm -rf .engram``) under a running engine would otherwise leave it reading
    and writing files no other process sees: every forwarded command would answer from the
    removed store, in-process readers from the new empty one. A request that finds another
    directory, or none, first gets a freshly opened engine (which makes a new one), like a
    settings change does (docs/engine.md)."""

    def __init__(self, root: Path) -> None:
        self.path = root / ".engram"
        self._lock = threading.Lock()
        self.last: tuple[int, int] | None = None

    def identity(self) -> tuple[int, int] | None:
        try:
            info = self.path.stat()
        except OSError:
            return None
        return (info.st_dev, info.st_ino)

    def settle(self) -> None:
        """The engine is open: its directory is the one there now."""
        with self._lock:
            self.last = self.identity()

    def follow(self, slot: EngineSlot) -> None:
        """Reopen the engine when its directory was removed or replaced since it opened."""
        if not slot.ready.is_set() or slot.current() is None:
            return
        with self._lock:
            if self.last is not None and self.identity() == self.last:
                return
            log.info("%s was removed or replaced: reopening the engine", self.path)
            slot.replace()
            self.last = self.identity()


#: The niceness of the deferred-work thread: requests come first.
DEFERRED_NICE = 19


def _yield_cpu() -> None:
    """Lower this thread's CPU priority (Linux: a thread is a task with its own nice value).

    The NLI model runs on the calling thread (``intra_op_num_threads = 1``), so at nice 19
    a contradiction check after a write takes only the CPU that requests leave: measured
    on the loaded 2-core machine, a check at normal priority added 100-150 ms to every
    ``search`` and ``remember`` it overlapped (docs/engine.md, "Writes"). Elsewhere,
    nothing changes.
    """
    setpriority = getattr(os, "setpriority", None)
    if setpriority is None or not sys.platform.startswith("linux"):
        return
    try:
        setpriority(os.PRIO_PROCESS, threading.get_native_id(), DEFERRED_NICE)
    except OSError as exc:
        log.debug("could not lower the deferred thread's priority: %s", exc)


class DeferredWork:
    """Work a request handed off (``Engine.defer``), run one job at a time after the reply.

    ``remember`` hands the contradiction judges' reading of its new memory here
    (``app.remember.judge_remembered``): the NLI model takes seconds per memory on a
    loaded machine, and the write it judges is already stored and acknowledged
    (docs/engine.md, "Writes"). Each job borrows the engine current when it runs. When the
    engine stops, the job in hand may finish (``DRAIN_SECONDS``) and those still waiting
    are dropped with a log line; a contradiction check stays owed in
    ``.engram/pending_checks.sqlite`` and runs at the next engine start or in-process
    ``engram consolidate`` (``app.remember.resume_checks``).
    """

    def __init__(
        self,
        borrow: Callable[[], contextlib.AbstractContextManager[Engine]],
        *,
        name: str = "engram-deferred",
        nice: bool = True,
    ) -> None:
        self._borrow = borrow
        self._nice = nice
        self._queue: queue.SimpleQueue[Deferred | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def pending(self) -> int:
        """Jobs waiting or running (``engram status``)."""
        with self._lock:
            return self._pending

    def add(self, job: Deferred) -> None:
        with self._lock:
            if self._closed:
                log.info("engine stopping: a deferred job was dropped")
                return
            self._pending += 1
        self._queue.put(job)

    def _run(self) -> None:
        if self._nice:
            _yield_cpu()
        while True:
            job = self._queue.get()
            if job is None:
                return
            try:
                if not self._closed:
                    with self._borrow() as engine:
                        job(engine)
            except Exception:  # the write it follows is stored: never fatal
                log.exception("deferred work failed")
            finally:
                with self._lock:
                    self._pending -= 1

    def close(self) -> None:
        with self._lock:
            self._closed = True
            waiting = self._pending
        self._queue.put(None)
        self._thread.join(timeout=DRAIN_SECONDS)
        if waiting > 1:
            log.info("engine stopping: %d deferred jobs dropped", waiting - 1)


class EngineSlot:
    """The current engine, swapped when settings change; the old one closes when unused."""

    def __init__(self, opener: Callable[[], Engine], warm_code: Callable[[], None]) -> None:
        self._opener = opener
        self._warm_code = warm_code
        self._lock = threading.Lock()
        self._engine: Engine | None = None
        self._users: dict[int, int] = {}
        self._retired: list[Engine] = []
        self._stopped = False
        self.ready = threading.Event()
        self.error: str | None = None
        self.listeners: list[Callable[[Sequence[Memory], Sequence[str]], None]] = []
        self.deferred = DeferredWork(self.borrow)
        #: the store's index upkeep after writes: at normal priority (it holds the store's
        #: locks while it compacts; at nice 19 a request waiting for them would wait for
        #: a thread the machine's load starves) and apart from the judges' queue
        self.upkeep = DeferredWork(self.borrow, name="engram-upkeep", nice=False)

    def open(self) -> Engine:
        engine = self._opener()
        if self._stopped:  # the stop came while it opened
            engine.stopping.set()
        engine.write_listeners.extend(self.listeners)
        engine.defer = self.deferred.add
        engine.upkeep_after_requests(self._upkeep_later)
        return engine

    def _upkeep_later(self, job: Callable[[], None]) -> None:
        """The store's upkeep (``MemoryStore.compact``), run after the request that made
        it due; on the store that asked, whichever engine is current then."""
        self.upkeep.add(lambda _engine: job())

    def start(self) -> None:
        """Open the engine (in a worker thread, at start-up)."""
        try:
            engine = self.open()
        except Exception as exc:
            self.error = (
                f"{type(exc).__name__}: {exc}" if not isinstance(exc, USER_ERRORS) else str(exc)
            )
            log.error("the engine could not open: %s", self.error)
            self.ready.set()
            return
        with self._lock:
            self._engine = engine
        self.ready.set()
        try:  # what the last engine took and could not judge before it stopped
            from engram.app.remember import resume_checks

            resume_checks(engine)
        except Exception as exc:  # bookkeeping: the engine serves without it
            log.warning("could not resume the owed contradiction checks: %s", exc)

    def replace(self) -> None:
        """Settings changed: new requests get a fresh engine, this one retires."""
        fresh = self.open()
        with self._lock:
            old, self._engine = self._engine, fresh
            if old is not None:
                self._retired.append(old)
        self._close_retired()

    def reload_settings(self) -> frozenset[str]:
        """A settings file or the user's approvals changed: apply it as the language server
        does (``config.SECTION_RELOAD``). Sections read per request go to the open engine
        (``Engine.reconfigure``, the store and model stay warm); a change of one baked in
        at open (embed, store) replaces it, the old one closing after its last request.
        Returns the sections that changed."""
        from engram.config import SectionReloadError, load_settings

        if self.ready.is_set() and self.current() is None:
            self.replace()  # it could not open: try again with the new settings
            return frozenset()
        with self.borrow() as engine:
            loaded = load_settings(engine.workspace)
            try:
                changed = engine.reconfigure(loaded.config, loaded.trust)
            except SectionReloadError as exc:
                log.info("settings changed: %s", exc)
                changed = frozenset(exc.sections)
            else:
                log.info(
                    "settings changed: %s taken by the open engine",
                    ", ".join(sorted(changed)) or "nothing",
                )
                return changed
        self.replace()
        return changed

    @contextmanager
    def borrow(self, wait: float = 300.0) -> Iterator[Engine]:
        if not self.ready.wait(wait):
            raise WireError("the engine is still opening")
        with self._lock:
            engine = self._engine
            if engine is None:
                from engram.errors import EngramError

                raise EngramError(self.error or "the engine is not open")
            self._users[id(engine)] = self._users.get(id(engine), 0) + 1
        try:
            yield engine
        finally:
            with self._lock:
                self._users[id(engine)] -= 1
            self._close_retired()

    def _close_retired(self) -> None:
        with self._lock:
            idle = [e for e in self._retired if self._users.get(id(e), 0) == 0]
            self._retired = [e for e in self._retired if e not in idle]
        for engine in idle:
            with contextlib.suppress(Exception):
                engine.close()

    def warm(self) -> None:
        """Open the store and load the model, so the first request is a warm one."""
        try:
            with self.borrow() as engine:
                _ = engine.store
                if engine.digest.is_stale():  # front ends read it before the engine answers
                    from engram.app.indexing import rebuild_digest

                    rebuild_digest(engine)
                _ = engine.embedder
                _ = engine.retriever
            # the code every forwarded command runs, imported once now, not on the first call
            self._warm_code()
        except Exception as exc:  # a request will report it properly
            log.warning("warming the engine failed: %s", exc)

    def current(self) -> Engine | None:
        return self._engine

    def stop_runs(self) -> None:
        """The process is stopping: every engine's long runs end at their next checkpoint
        (``Engine.stopping``; an index keeps what it committed and the next one resumes)."""
        with self._lock:
            self._stopped = True
            engines = [e for e in (self._engine, *self._retired) if e is not None]
        for engine in engines:
            engine.stopping.set()

    def close(self) -> None:
        self.deferred.close()  # the job in hand finishes on an open engine
        self.upkeep.close()
        with self._lock:
            engines = [e for e in (self._engine, *self._retired) if e is not None]
            self._engine = None
            self._retired = []
        for engine in engines:
            with contextlib.suppress(Exception):
                engine.close()


class EngineServer:
    """The engine process for one workspace (see the module docstring)."""

    def __init__(
        self, root: Path, address: Address, idle_seconds: float, front_ends: handlers.FrontEnds
    ) -> None:
        self.root = root
        self.front_ends = front_ends
        self.address = address
        self.idle_seconds = idle_seconds
        self.started = time.time()
        self.started_mono = time.monotonic()
        self.last_activity = time.monotonic()
        self.clients: dict[int, ClientInfo] = {}
        self.requests = 0
        self.in_flight = 0
        self._next_client = 1
        self._token = secrets.token_hex(32) if not address.unix else None
        self._stopping: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._executor = ThreadPoolExecutor(WORKERS, thread_name_prefix="engram-engine")
        self.slot = EngineSlot(self._open_engine, front_ends.warm)
        self.slot.listeners.append(self._on_write)
        self.config_watch = _ConfigWatch(root)
        self.data_watch = _DataDirWatch(root)
        self.stop_reason = ""
        self._digest_marker = ""
        self._tasks: set[asyncio.Future[None]] = set()

    # ------------------------------------------------------------------ engine

    def _open_engine(self) -> Engine:
        from engram.app import Engine

        return Engine.open(self.root)

    def _on_write(self, upserts: Sequence[Memory], deleted: Sequence[str]) -> None:
        """A store write (any worker thread): tell every subscribed front end."""
        files = sorted({f for m in upserts for f in m.files})
        ids = [m.id for m in upserts] + list(deleted)
        with contextlib.suppress(Exception):
            self._digest_marker = self._marker()  # our own write: not an outside one
        event: Json = {"event": "changed", "files": files, "ids": ids, "all": False}
        loop = self._loop
        if loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(self._broadcast, event)

    def _broadcast(self, event: Json) -> None:
        data = encode(event)
        for client in list(self.clients.values()):
            if client.subscribe and not client.writer.is_closing():
                client.writer.write(data)

    # ------------------------------------------------------------------ serving

    async def serve(self) -> str:
        """Listen until stopped; returns why it stopped."""
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                self._loop.add_signal_handler(sig, self.request_stop, f"signal {sig.name}")
        server = await self._listen()
        log.info(
            "engine %s for %s listening (pid %d, idle exit after %gs)",
            BUILD,
            self.root,
            os.getpid(),
            self.idle_seconds,
        )
        opening = self._loop.run_in_executor(self._executor, self._open_and_warm)
        watchdog = asyncio.ensure_future(self._watchdog())
        try:
            await self._stopping.wait()
        finally:
            watchdog.cancel()
            server.close()
            for client in list(self.clients.values()):
                client.writer.close()
            await self._drain()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(opening), timeout=DRAIN_SECONDS)
            await self._loop.run_in_executor(self._executor, self.slot.close)
            self._remove_address()
            self._executor.shutdown(wait=False, cancel_futures=True)
        log.info("engine stopped: %s", self.stop_reason)
        return self.stop_reason

    def _open_and_warm(self) -> None:
        self.slot.start()
        self.data_watch.settle()
        self.slot.warm()
        self._digest_marker = self._marker()

    async def _listen(self) -> asyncio.AbstractServer:
        if self.address.unix:
            path = self.address.socket_path
            with contextlib.suppress(FileNotFoundError):
                path.unlink()  # we hold the life lock: whatever is there is stale
            old_umask = os.umask(0o177)
            try:
                server = await asyncio.start_unix_server(
                    self._connection, path=str(path), limit=MAX_FRAME
                )
            finally:
                os.umask(old_umask)
            os.chmod(path, 0o600)
            return server
        server = await asyncio.start_server(
            self._connection, host="127.0.0.1", port=0, limit=MAX_FRAME
        )
        port = server.sockets[0].getsockname()[1]
        import json

        write_private(
            self.address.port_file,
            json.dumps({"port": port, "token": self._token, "pid": os.getpid()}),
        )
        return server

    def _write_pid_file(self, stopping: str | None = None) -> None:
        with contextlib.suppress(OSError):
            write_pid_file(self.address, self.root, stopping)

    def _remove_address(self) -> None:
        """No front end can reach it any more; the pid file (``stopping``) stays until the
        process's last thread ended (:func:`run_engine`)."""
        for path in (self.address.socket_path, self.address.port_file):
            with contextlib.suppress(OSError):
                path.unlink()

    def request_stop(self, reason: str) -> None:
        if self._stopping is not None and not self._stopping.is_set():
            self.stop_reason = reason
            self._stopping.set()
            # a running index would hold the process (its ~700 MB and its parse workers)
            # until it ended, long after the socket was gone: it stops at its next file
            self.slot.stop_runs()
            self._write_pid_file(stopping=reason)  # `engram status` says "stopping"
            if self.in_flight:
                log.info("engine stopping (%s): cancelling %d requests", reason, self.in_flight)

    async def _drain(self) -> None:
        deadline = time.monotonic() + DRAIN_SECONDS
        while self.in_flight and time.monotonic() < deadline:
            await asyncio.sleep(0.05)

    async def _watchdog(self) -> None:
        """Idle exit; heartbeats; writes made by processes that worked in-process."""
        last_poll = time.monotonic()
        while True:
            await asyncio.sleep(min(HEARTBEAT_SECONDS, self.idle_seconds / 4))
            now = time.monotonic()
            for client in list(self.clients.values()):
                if client.in_flight and not client.writer.is_closing():
                    client.writer.write(encode({"beat": sorted(client.in_flight)}))
            if not self.in_flight and not self.root.is_dir():
                # moved or deleted under it: no front end can name this root any more (a
                # command in the moved folder starts an engine there), and this one kept
                # the old store open until its idle exit, ten minutes later (the walk)
                self.request_stop(f"the workspace {self.root} is gone (moved or deleted)")
                return
            if not self.clients and not self.in_flight:
                if now - self.last_activity >= self.idle_seconds:
                    self.request_stop(f"idle for {self.idle_seconds:g}s")
                    return
            else:
                self.last_activity = now
            if now - last_poll >= FOREIGN_POLL_SECONDS and self.slot.ready.is_set():
                last_poll = now
                await self._check_outside_changes()

    def _marker(self) -> str:
        from engram.store.digest import lance_manifest_marker
        from engram.workspace import Workspace

        return lance_manifest_marker(Workspace(self.root))

    async def _check_outside_changes(self) -> None:
        """Settings changed (``engram trust``) or another process wrote the store."""
        assert self._loop is not None
        if self.config_watch.changed():
            try:
                await self._loop.run_in_executor(self._executor, self.slot.reload_settings)
            except Exception as exc:
                log.error("could not apply the new settings: %s", exc)
        if not any(c.subscribe for c in self.clients.values()):
            return
        marker = await self._loop.run_in_executor(self._executor, self._marker)
        if marker != self._digest_marker:
            self._digest_marker = marker
            # our own writes moved it too; front ends compare what they show, so an
            # extra "maybe everything" costs them one cheap refresh
            self._broadcast({"event": "changed", "files": [], "ids": [], "all": True})

    # ------------------------------------------------------------------ connections

    def _peer_allowed(self, writer: asyncio.StreamWriter) -> bool:
        sock = writer.get_extra_info("socket")
        if sock is None or not self.address.unix:
            return True
        uid = peer_uid(sock)
        getuid = getattr(os, "getuid", None)
        return uid is None or getuid is None or uid == getuid()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.last_activity = time.monotonic()
        client: ClientInfo | None = None
        try:
            if not self._peer_allowed(writer):
                log.warning("refused a connection from another user")
                return
            first = await self._read(reader, timeout=10.0)
            if first is None:
                return
            if not self._token_ok(first):
                writer.write(encode(_error(first.get("id"), DENIED, "bad or missing token")))
                return
            if first.get("op") == "stop":
                writer.write(
                    encode({"id": first.get("id"), "ok": True, "result": self._stop_reply()})
                )
                await writer.drain()
                self.request_stop(str(first.get("reason") or "asked to stop"))
                return
            client = self._hello(first, writer)
            if client is None:
                return
            while True:
                message = await self._read(reader, timeout=None)
                if message is None:
                    return
                self.last_activity = time.monotonic()
                task = asyncio.ensure_future(self._request(client, message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (ConnectionError, asyncio.IncompleteReadError, WireError) as exc:
            log.debug("connection closed: %s", exc)
        finally:
            if client is not None:
                self.clients.pop(client.id, None)
            self.last_activity = time.monotonic()
            with contextlib.suppress(Exception):
                await writer.drain()
            writer.close()

    async def _read(self, reader: asyncio.StreamReader, timeout: float | None) -> Json | None:
        try:
            line = await asyncio.wait_for(reader.readline(), timeout)
        except (TimeoutError, ValueError) as exc:  # ValueError: over the frame limit
            raise WireError(str(exc)) from exc
        if not line:
            return None
        return decode(line)

    def _token_ok(self, first: Json) -> bool:
        if self._token is None:
            return True
        given = first.get("token")
        return isinstance(given, str) and hmac.compare_digest(given, self._token)

    def _hello(self, first: Json, writer: asyncio.StreamWriter) -> ClientInfo | None:
        if first.get("op") != "hello":
            writer.write(encode(_error(first.get("id"), USER, "say hello first")))
            return None
        protocol, version = first.get("protocol"), first.get("version")
        if protocol != PROTOCOL or version != __version__:
            writer.write(
                encode(
                    {
                        "id": first.get("id"),
                        "ok": False,
                        "error": {
                            "kind": PROTOCOL_MISMATCH,
                            "message": (
                                f"this engine is {BUILD}, the front end {protocol}/{version}"
                            ),
                            "protocol": PROTOCOL,
                            "version": __version__,
                        },
                    }
                )
            )
            return None
        raw_client = first.get("client")
        info = raw_client if isinstance(raw_client, dict) else {}
        pid = info.get("pid")
        client = ClientInfo(
            id=self._next_client,
            kind=str(info.get("kind") or "unknown")[:40],
            pid=pid if isinstance(pid, int) else 0,
            since=time.monotonic(),
            subscribe=bool(first.get("subscribe")),
            writer=writer,
        )
        self._next_client += 1
        self.clients[client.id] = client
        writer.write(
            encode(
                {
                    "id": first.get("id"),
                    "ok": True,
                    "result": {
                        "protocol": PROTOCOL,
                        "version": __version__,
                        "pid": os.getpid(),
                        "workspace": str(self.root),
                        "client_id": client.id,
                    },
                }
            )
        )
        return client

    async def _request(self, client: ClientInfo, message: Json) -> None:
        request_id = message.get("id")
        op = message.get("op")
        rid = request_id if isinstance(request_id, int) else -1
        client.in_flight.add(rid)
        client.requests += 1
        self.requests += 1
        self.in_flight += 1
        try:
            reply = await self._answer(op, message, request_id, client)
        finally:
            client.in_flight.discard(rid)
            self.in_flight -= 1
            self.last_activity = time.monotonic()
        if not client.writer.is_closing():
            client.writer.write(encode(reply))
            with contextlib.suppress(ConnectionError):
                await client.writer.drain()

    def _stderr_sender(self, client: ClientInfo, request_id: object) -> Callable[[str], None]:
        """Send a worker thread's stderr text to the client as ``{"stream": id, "stderr"}``
        frames, through the event loop, so they leave before the reply (docs/engine.md)."""
        loop = self._loop
        assert loop is not None

        def write(text: str) -> None:
            if not client.writer.is_closing():
                client.writer.write(encode({"stream": request_id, "stderr": text}))

        def send(text: str) -> None:
            with contextlib.suppress(RuntimeError):  # the loop closed: the caller is gone
                loop.call_soon_threadsafe(write, text)

        return send

    async def _answer(
        self, op: object, message: Json, request_id: object, client: ClientInfo | None = None
    ) -> Json:
        assert self._loop is not None
        try:
            if op == "status":
                return {"id": request_id, "ok": True, "result": self.status()}
            if op == "stop":
                self.request_stop(str(message.get("reason") or "asked to stop"))
                return {"id": request_id, "ok": True, "result": self._stop_reply()}
            if op == "ping":
                return {"id": request_id, "ok": True, "result": {"pid": os.getpid()}}
            handler: Callable[[Engine, Json], dict[str, object]]
            if op == "cli":
                handler = functools.partial(handlers.run_cli, main=self.front_ends.cli_main)
                if message.get("stream_stderr") is True and client is not None:
                    handler = functools.partial(
                        handlers.run_cli,
                        main=self.front_ends.cli_main,
                        on_stderr=self._stderr_sender(client, request_id),
                    )
            elif op == "call":
                handler = handlers.run_call
            elif op == "lsp":
                handler = self.front_ends.lsp_answer
                if message.get("stream_stderr") is True and client is not None:
                    # an index's progress (and whom it waits for) to the editor as it runs
                    handler = functools.partial(
                        self.front_ends.lsp_answer, note=self._stderr_sender(client, request_id)
                    )
            else:
                return _error(request_id, USER, f"unknown request {op!r}")
            result = await self._loop.run_in_executor(self._executor, self._run, handler, message)
            return {"id": request_id, "ok": True, "result": result}
        except USER_ERRORS as exc:
            return _error(request_id, USER, str(exc))
        except Exception as exc:
            log.exception("request %s failed", op)
            return _error(request_id, INTERNAL, f"{type(exc).__name__}: {exc}")

    def _run(self, handler: Callable[[Engine, Json], dict[str, object]], message: Json) -> object:
        self.data_watch.follow(self.slot)
        with self.slot.borrow() as engine:
            return handler(engine, message)

    def _stop_reply(self) -> Json:
        return {"pid": os.getpid(), "workspace": str(self.root)}

    def status(self) -> Json:
        now = time.monotonic()
        rss, peak = memory_bytes()
        engine = self.slot.current()
        state = "ready" if engine is not None else ("failed" if self.slot.error else "opening")
        return {
            "pid": os.getpid(),
            "workspace": str(self.root),
            "protocol": PROTOCOL,
            "version": __version__,
            "started_at": datetime.fromtimestamp(self.started, UTC).isoformat(timespec="seconds"),
            "uptime_seconds": round(now - self.started_mono, 1),
            "rss_bytes": rss,
            "peak_rss_bytes": peak,
            "clients": [c.to_dict(now) for c in self.clients.values()],
            "requests": self.requests,
            "in_flight": self.in_flight,
            "deferred": self.slot.deferred.pending,
            "idle_seconds": self.idle_seconds,
            "state": state,
            "error": self.slot.error,
            "model": engine.loaded_model_id if engine is not None else None,
            "log": str(log_path(self.root)),
            "socket": str(
                self.address.socket_path if self.address.unix else self.address.port_file
            ),
        }


def _error(request_id: object, kind: str, message: str) -> Json:
    return {"id": request_id, "ok": False, "error": {"kind": kind, "message": message}}


def log_path(root: Path) -> Path:
    return root / ".engram" / "logs" / "engine.log"


def _setup_logging(root: Path) -> None:
    """The engine's log: ``.engram/logs/engine.log`` (rotated), stderr and faults too."""
    from engram.workspace import Workspace

    Workspace(root).ensure_engram_dir()
    path = log_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.handlers.RotatingFileHandler(
        path, maxBytes=5 * 1024 * 1024, backupCount=2, encoding="utf-8"
    )
    from engram.redaction import RedactingFormatter

    handler.setFormatter(
        RedactingFormatter("%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
    )
    root_logger = logging.getLogger()
    root_logger.addHandler(handler)
    root_logger.setLevel(logging.DEBUG if os.environ.get("ENGRAM_DEBUG") else logging.INFO)
    for name in ("lancedb", "pylance", "fastembed", "onnxruntime", "httpx", "urllib3"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # stray writes to fd 2 (native libraries) and a fatal error's traceback go to the log
    fault = path.open("a", encoding="utf-8")
    with contextlib.suppress(OSError):
        os.dup2(fault.fileno(), 2)
    faulthandler.enable(file=fault)
    root_logger.addHandler(streams.CapturedLogHandler())


def run_engine(workspace: str, front_ends: handlers.FrontEnds, key: str | None = None) -> int:
    """The body of ``engram engine``: serve one workspace until stopped or idle.

    ``front_ends``: what it runs for the CLI and the language server, given by
    ``engram.cli.engine_commands`` so this package imports no front end (the layers in
    pyproject.toml, docs/architecture.md).
    """
    from filelock import FileLock, Timeout

    from engram.daemon.address import runtime_dir

    root = Path(workspace).expanduser().resolve()
    if not root.is_dir():
        sys.stderr.write(f"engram: error: workspace {root} is not a directory\n")
        return 1
    address = Address.for_workspace(root)
    if key:
        address = Address(runtime_dir(), key, address.unix)
    # commands run here never forward to an engine (this one, or another)
    from engram.daemon.client import INSIDE_ENGINE, POLICY_ENV

    os.environ[POLICY_ENV] = INSIDE_ENGINE
    _setup_logging(root)
    life = FileLock(str(address.directory / f"{address.key}.lock"), mode=0o600)
    try:
        life.acquire(timeout=0)
    except Timeout:
        log.info("another engine already serves %s; exiting", root)
        return 0
    try:
        write_pid_file(address, root)
        streams.install()
        server = EngineServer(root, address, idle_seconds_from_env(), front_ends)
        asyncio.run(server.serve())
    except BaseException:
        life.release()
        raise
    _exit_after_threads(address, DRAIN_SECONDS)


def write_pid_file(address: Address, root: Path, stopping: str | None = None) -> None:
    """The engine's pid file: its pid, workspace and build (``Address.read_pid`` reads it),
    and ``stopping`` (why) once it no longer answers but has not exited yet."""
    import json

    record: dict[str, object] = {"pid": os.getpid(), "workspace": str(root), "build": BUILD}
    if stopping is not None:
        record["stopping"] = stopping
    write_private(address.pid_file, json.dumps(record))


def _exit_after_threads(address: Address, seconds: float) -> NoReturn:
    """End the engine process once its request threads ended (a stopping engine cancelled
    their runs), then remove the pid file and exit at once.

    Until this exit the pid file says ``stopping`` and the life lock is held (the OS drops
    it with the process), so ``engram stop``/``status`` see the engine until it is gone;
    an interpreter's ordinary exit after the pid file went took long enough (its modules'
    teardown) for ``engram stop`` to say "no engine was running" beside a live process.
    A thread still busy after ``seconds`` would keep the process, its memory and its lock
    long after it said it stopped: it exits without it (the stores commit atomically and
    their OS locks go with the process, as after a crash; parse workers end when their
    pipe closes)."""
    deadline = time.monotonic() + seconds
    busy = [t for t in threading.enumerate() if not t.daemon and t is not threading.main_thread()]
    for thread in busy:
        thread.join(max(0.0, deadline - time.monotonic()))
    stuck = [t.name for t in busy if t.is_alive()]
    if stuck:
        log.warning(
            "engine stopping: %d threads still busy after %gs (%s); exiting without them",
            len(stuck), seconds, ", ".join(stuck),
        )  # fmt: skip
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    with contextlib.suppress(OSError):
        address.pid_file.unlink()
    os._exit(0)


__all__ = ["EngineServer", "idle_seconds_from_env", "log_path", "memory_bytes", "run_engine"]
