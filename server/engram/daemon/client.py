"""Reach the engine of a workspace, starting it when nobody has (docs/engine.md, "Start-up").

Standard library only (``filelock`` is imported on the slow path that starts an engine), so
a forwarding CLI pays a few milliseconds before its request is on the wire.

:func:`connect` is the one way in. It connects and says hello; when no engine answers it
takes the start lock (``<key>.start``), checks again (another front end may just have
started one), spawns ``python -m engram engine`` in its own session, and waits until the
engine accepts connections. An engine of an older build is asked to stop and replaced; a
newer one is left alone and the front end works in-process. Every failure is an
:class:`EngineUnavailable` whose message says why, for ``--verbose`` and the logs.

A :class:`Connection` answers one caller at a time by reading its own replies, or, after
:meth:`Connection.listen`, any number of threads (a reader thread routes replies by id and
hands events to a callback). Waiting for a reply is bounded by silence, not by duration:
the engine sends heartbeats while it works, so a long ``index`` is fine and a dead or
frozen engine is noticed within :data:`QUIET_SECONDS`.
"""

from __future__ import annotations

import _thread
import contextlib
import itertools
import os
import socket
import time

from engram.daemon.address import Address, NoRuntimeDir
from engram.daemon.wire import (
    PROTOCOL,
    PROTOCOL_MISMATCH,
    USER,
    FrameReader,
    Json,
    WireError,
    encode,
    newer,
)

#: ``typing`` costs a forwarding CLI milliseconds; mypy reads the names anyway
TYPE_CHECKING = False
if TYPE_CHECKING:  # nor does it need these: imported where used (``threading`` too)
    import subprocess
    from collections.abc import Callable, Mapping
    from concurrent.futures import Future

#: ``ENGRAM_ENGINE=off`` keeps every front end in-process (tests, debugging).
POLICY_ENV = "ENGRAM_ENGINE"
#: The value the engine process sets for itself: commands it runs never forward.
INSIDE_ENGINE = "inside-engine"
CONNECT_SECONDS = 2.0
HELLO_SECONDS = 10.0
#: How long a front end waits without any frame (reply, heartbeat) before it gives up
#: (``ENGRAM_ENGINE_TIMEOUT`` overrides it).
QUIET_SECONDS = 20.0
TIMEOUT_ENV = "ENGRAM_ENGINE_TIMEOUT"
#: How long a started engine may take to accept connections.
START_SECONDS = 60.0
#: The id of the request sent with the hello (``Connection.open(first=...)``).
FIRST_ID = 1


class EngineUnavailable(ConnectionError):
    """No engine can serve this request; ``str(exc)`` says why (for ``--verbose``)."""


class EngineError(Exception):
    """The engine answered with an error; ``kind`` is ``user`` for a user's mistake."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind

    @property
    def is_user_error(self) -> bool:
        return self.kind == USER


class _Mismatch(EngineUnavailable):
    def __init__(self, message: str, protocol: int, version: str) -> None:
        super().__init__(message)
        self.protocol = protocol
        self.version = version


def quiet_seconds() -> float:
    """How long silence from the engine is tolerated (see :data:`QUIET_SECONDS`)."""
    try:
        return max(0.2, float(os.environ.get(TIMEOUT_ENV, "") or QUIET_SECONDS))
    except ValueError:
        return QUIET_SECONDS


class _Newer(EngineUnavailable):
    """A newer engine serves the workspace: never replaced by an older front end."""


def engine_enabled(environ: Mapping[str, str] | None = None) -> bool:
    env = os.environ if environ is None else environ
    value = env.get(POLICY_ENV, "auto").strip().lower()
    return value not in ("off", "0", "no", "false", INSIDE_ENGINE)


def _open_socket(address: Address) -> tuple[socket.socket, str | None]:
    """A connected socket to the engine (and the token a loopback engine wants)."""
    if address.unix:
        path = address.file(".sock")
        try:
            info = os.stat(path)
        except OSError:
            raise EngineUnavailable("no engine is running") from None
        owner = getattr(os, "getuid", None)
        if owner is not None and info.st_uid != owner():
            raise EngineUnavailable(f"{path} belongs to another user; not connecting")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        target: object = path
        token = None
    else:
        found = address.read_port()
        if found is None:
            raise EngineUnavailable("no engine is running")
        port, token = found
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        target = ("127.0.0.1", port)
    sock.settimeout(CONNECT_SECONDS)
    try:
        sock.connect(target)  # type: ignore[arg-type]
    except OSError as exc:
        sock.close()
        raise EngineUnavailable(f"no engine is running ({exc.strerror or exc})") from exc
    return sock, token


class Connection:
    """One connection to an engine, after a successful hello."""

    def __init__(
        self,
        sock: socket.socket,
        address: Address,
        info: Json,
        reader: FrameReader | None = None,
    ) -> None:
        self.sock = sock
        self.address = address
        #: the engine's hello: pid, protocol, version, workspace, client_id
        self.info = info
        #: the reader that read the hello keeps what came after it (a pipelined reply)
        self._reader = reader or FrameReader(sock)
        self._ids = itertools.count(1)
        # ``_thread``'s lock is ``threading.Lock`` without importing ``threading``
        self._send_lock = _thread.allocate_lock()
        self._pending: dict[int, Future[object]] = {}
        self._streams: dict[int, Callable[[str], None]] = {}  # on_stderr while listening
        self._pending_lock = _thread.allocate_lock()
        self._listening = False
        self._closed = False
        self._last_frame = time.monotonic()
        self.on_event: Callable[[Json], None] | None = None
        self.on_close: Callable[[], None] | None = None

    @property
    def pid(self) -> int:
        value = self.info.get("pid")
        return int(value) if isinstance(value, int) else 0

    @classmethod
    def open(
        cls,
        address: Address,
        kind: str,
        *,
        subscribe: bool = False,
        version: str | None = None,
        first: tuple[str, Mapping[str, object]] | None = None,
    ) -> Connection:
        """Connect and say hello; :class:`EngineUnavailable` when that is not possible.

        ``first``: a request (op, params) sent in the same write as the hello, so a
        one-shot caller (a forwarded CLI command) waits for one exchange, not two; its
        reply is :meth:`reply` to :data:`FIRST_ID`. An engine that refuses the hello
        closes the connection without reading it, so a refused request never runs.
        """
        from engram import __version__

        sock, token = _open_socket(address)
        hello: Json = {
            "id": 0,
            "op": "hello",
            "protocol": PROTOCOL,
            "version": version or __version__,
            "client": {"kind": kind, "pid": os.getpid()},
            "subscribe": subscribe,
        }
        if token is not None:
            hello["token"] = token
        data = encode(hello)
        if first is not None:
            data += encode({"id": FIRST_ID, "op": first[0], **first[1]})
        try:
            sock.sendall(data)
            reader = FrameReader(sock)
            reply = reader.read(min(HELLO_SECONDS, quiet_seconds()))
        except (WireError, OSError) as exc:
            sock.close()
            raise EngineUnavailable(f"the engine did not answer hello ({exc})") from exc
        if not reply.get("ok"):
            sock.close()
            error = reply.get("error")
            detail = error if isinstance(error, dict) else {}
            message = str(detail.get("message") or "refused")
            if detail.get("kind") == PROTOCOL_MISMATCH:
                protocol = detail.get("protocol")
                raise _Mismatch(
                    message,
                    protocol if isinstance(protocol, int) else 0,
                    str(detail.get("version") or "0"),
                )
            raise EngineUnavailable(f"the engine refused the connection: {message}")
        result = reply.get("result")
        connection = cls(sock, address, result if isinstance(result, dict) else {}, reader)
        if first is not None:
            next(connection._ids)  # FIRST_ID is taken
        return connection

    # ------------------------------------------------------------------ requests

    def call(
        self,
        op: str,
        params: Mapping[str, object] | None = None,
        on_stderr: Callable[[str], None] | None = None,
    ) -> object:
        """Send one request and wait for its reply (heartbeats keep the wait alive).

        ``on_stderr`` receives the ``{"stream": id, "stderr": text}`` frames of this request
        as they come (a forwarded command's progress and notes; an ``lsp`` index's notes).
        Raises :class:`EngineError` when the engine answered with an error and
        :class:`WireError` when the connection broke or went silent.
        """
        request_id = next(self._ids)
        frame: Json = {"id": request_id, "op": op, **(params or {})}
        if not self._listening:
            self._send(frame)
            return self.reply(request_id, on_stderr)
        from concurrent.futures import Future

        future: Future[object] = Future()
        with self._pending_lock:
            if self._closed:
                raise WireError("the connection to the engine is closed")
            self._pending[request_id] = future
            if on_stderr is not None:
                self._streams[request_id] = on_stderr
        self._send(frame)
        sent = time.monotonic()
        while True:
            try:
                return future.result(timeout=1.0)
            except TimeoutError:
                quiet = quiet_seconds()
                if time.monotonic() - max(self._last_frame, sent) > quiet:
                    self.close()
                    raise WireError(f"the engine sent nothing for {quiet:g}s") from None

    def reply(self, request_id: int, on_stderr: Callable[[str], None] | None = None) -> object:
        """Wait for the reply to a request already sent (not while listening): see
        :meth:`call`; ``FIRST_ID`` for the request :meth:`open` sent with the hello."""
        while True:
            message = self._reader.read(quiet_seconds())
            if "event" in message:
                self._dispatch_event(message)
                continue
            if message.get("stream") == request_id and "id" not in message:
                text = message.get("stderr")
                if on_stderr is not None and isinstance(text, str):
                    on_stderr(text)
                continue
            if message.get("id") == request_id:
                return _unwrap(message)

    def _send(self, frame: Json) -> None:
        data = encode(frame)
        with self._send_lock:
            try:
                self.sock.sendall(data)
            except OSError as exc:
                raise WireError(f"connection to the engine lost: {exc}") from exc

    def _dispatch_event(self, message: Json) -> None:
        handler = self.on_event
        if handler is not None:
            try:
                handler(message)
            except Exception:  # a front end's bug must not kill the reader
                import logging

                logging.getLogger(__name__).exception("engine event handler failed")

    def listen(self, on_event: Callable[[Json], None] | None = None) -> None:
        """Route replies from a reader thread, so several threads may call at once."""
        import threading

        self.on_event = on_event
        self._listening = True
        thread = threading.Thread(target=self._read_loop, name="engram-engine-reader", daemon=True)
        thread.start()

    def _read_loop(self) -> None:
        try:
            while True:
                message = self._reader.read(None)
                self._last_frame = time.monotonic()
                if "event" in message:
                    self._dispatch_event(message)
                    continue
                if "beat" in message:
                    continue
                if "stream" in message and "id" not in message:  # a request's progress
                    stream, text = message.get("stream"), message.get("stderr")
                    handler = self._streams.get(stream) if isinstance(stream, int) else None
                    if handler is not None and isinstance(text, str):
                        with contextlib.suppress(Exception):  # never kills the reader
                            handler(text)
                    continue
                request_id = message.get("id")
                if not isinstance(request_id, int):
                    continue
                with self._pending_lock:
                    future = self._pending.pop(request_id, None)
                    self._streams.pop(request_id, None)
                if future is None:
                    continue
                try:
                    future.set_result(_unwrap(message))
                except EngineError as exc:
                    future.set_exception(exc)
        except (WireError, OSError):
            pass
        finally:
            self.close()

    def close(self) -> None:
        with self._pending_lock:
            if self._closed:
                return
            self._closed = True
            pending = list(self._pending.values())
            self._pending.clear()
            self._streams.clear()
        for future in pending:
            if not future.done():
                future.set_exception(WireError("the connection to the engine was lost"))
        with contextlib.suppress(OSError):
            self.sock.close()
        handler = self.on_close
        if handler is not None:
            with contextlib.suppress(Exception):
                handler()

    @property
    def closed(self) -> bool:
        return self._closed


def _unwrap(message: Json) -> object:
    if message.get("ok"):
        return message.get("result")
    error = message.get("error")
    detail = error if isinstance(error, dict) else {}
    raise EngineError(str(detail.get("kind") or "internal"), str(detail.get("message") or "failed"))


# --------------------------------------------------------------------------- start-up


def stop_engine(address: Address, reason: str, wait: float = 10.0) -> int | None:
    """Ask the engine at ``address`` to stop (any version understands it); its pid or None."""
    try:
        sock, token = _open_socket(address)
    except EngineUnavailable:
        return None
    pid: int | None = None
    try:
        frame: Json = {"id": 1, "op": "stop", "reason": reason}
        if token is not None:
            frame["token"] = token
        sock.sendall(encode(frame))
        reply = FrameReader(sock).read(HELLO_SECONDS)
        result = reply.get("result")
        if isinstance(result, dict) and isinstance(result.get("pid"), int):
            pid = int(result["pid"])
    except (WireError, OSError):
        pass
    finally:
        sock.close()
    if pid is not None:
        wait_for_exit(pid, wait)
    return pid


def stopping_engine(address: Address) -> int | None:
    """The pid of an engine that is stopping: it no longer answers, but it still holds its
    life lock (``<key>.lock``, an OS lock that goes with the process) and its pid file
    says ``stopping``. None when no such process is left (docs/engine.md "Faults")."""
    from filelock import FileLock, Timeout

    record = address.read_pid()
    pid = record.get("pid") if record is not None else None
    if record is None or not isinstance(pid, int) or not record.get("stopping"):
        return None
    life = FileLock(str(address.file(".lock")), mode=0o600)
    try:
        life.acquire(timeout=0)
    except Timeout:
        return pid  # the lock is held: that engine is still going away
    except OSError:
        return pid if pid_alive(pid) else None
    life.release()
    return None


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    # a zombie (our own child that exited) is not alive
    with contextlib.suppress(OSError), open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        if fh.read().split(") ", 1)[-1].startswith("Z"):
            return False
    return True


def wait_for_exit(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            return True
        time.sleep(0.05)
    return not pid_alive(pid)


def _spawn(root: str, address: Address, environ: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """``python -m engram engine`` in its own session: it outlives the front end."""
    import subprocess

    from engram.interpreter import python_argv

    command = [*python_argv(), "-m", "engram", "engine", "--workspace", root]
    command += ["--key", address.key]
    posix = os.name == "posix"
    flags = (
        0
        if posix
        else (
            getattr(subprocess, "DETACHED_PROCESS", 0)
            | getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)
        )
    )
    child = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(environ),
        close_fds=True,
        start_new_session=posix,
        creationflags=flags,
    )
    # reap it when it exits, so a long-lived front end never keeps a zombie
    import threading

    threading.Thread(target=child.wait, name="engram-engine-reaper", daemon=True).start()
    return child


def connect(
    root: str | os.PathLike[str],
    kind: str,
    *,
    start: bool = True,
    subscribe: bool = False,
    environ: Mapping[str, str] | None = None,
    note: Callable[[str], None] | None = None,
    first: tuple[str, Mapping[str, object]] | None = None,
) -> Connection:
    """A connection to the workspace's engine, started (race-free) when needed.

    ``first``: a request sent with the hello (:meth:`Connection.open`); the connection
    returned is the one that carried it (a refused hello never ran it).
    """
    env = dict(os.environ if environ is None else environ)
    if not engine_enabled(env):
        raise EngineUnavailable(f"{POLICY_ENV}={env.get(POLICY_ENV)}")
    root = os.path.realpath(root)
    try:
        address = Address.for_workspace(root, env)
    except NoRuntimeDir as exc:
        raise EngineUnavailable(str(exc)) from exc
    try:
        return _hello_or_replace(address, kind, subscribe, note, first)
    except (_Mismatch, _Newer):
        raise
    except EngineUnavailable:
        if not start:
            raise
    return _start(root, address, kind, subscribe, env, note, first)


def _hello_or_replace(
    address: Address,
    kind: str,
    subscribe: bool,
    note: Callable[[str], None] | None,
    first: tuple[str, Mapping[str, object]] | None = None,
) -> Connection:
    try:
        return Connection.open(address, kind, subscribe=subscribe, first=first)
    except _Mismatch as mismatch:
        from engram import __version__

        if newer(mismatch.protocol, mismatch.version, PROTOCOL, __version__):
            raise _Newer(
                f"a newer engine ({mismatch.version}, protocol {mismatch.protocol}) serves this "
                f"workspace and this front end is {__version__}: restart it"
            ) from None
        if note is not None:
            note(
                f"replacing an engine of version {mismatch.version} (protocol {mismatch.protocol})"
            )
        stop_engine(address, f"replaced by {__version__}")
        raise EngineUnavailable("replaced an older engine") from None


def _start(
    root: str,
    address: Address,
    kind: str,
    subscribe: bool,
    env: Mapping[str, str],
    note: Callable[[str], None] | None,
    first: tuple[str, Mapping[str, object]] | None = None,
) -> Connection:
    from filelock import FileLock, Timeout

    lock = FileLock(address.file(".start"), mode=0o600)
    try:
        lock.acquire(timeout=START_SECONDS)
    except Timeout as exc:
        raise EngineUnavailable("another front end has been starting the engine too long") from exc
    try:
        with contextlib.suppress(EngineUnavailable):
            # someone was faster
            return Connection.open(address, kind, subscribe=subscribe, first=first)
        if note is not None:
            note(f"starting the engine for {root}")
        child = _spawn(root, address, env)
        deadline = time.monotonic() + START_SECONDS
        delay = 0.02
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                return Connection.open(address, kind, subscribe=subscribe, first=first)
            except _Mismatch:
                raise
            except EngineUnavailable as exc:
                last = exc
            code = child.poll()
            if code is not None:
                log = os.path.join(root, ".engram", "logs", "engine.log")
                raise EngineUnavailable(f"the engine exited with status {code} (see {log})")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.2)
        raise EngineUnavailable(f"the engine did not start within {START_SECONDS:g}s ({last})")
    finally:
        lock.release()


__all__ = [
    "FIRST_ID",
    "POLICY_ENV",
    "QUIET_SECONDS",
    "Connection",
    "EngineError",
    "EngineUnavailable",
    "connect",
    "engine_enabled",
    "pid_alive",
    "stop_engine",
    "stopping_engine",
    "wait_for_exit",
]
