"""Per-request standard streams inside the engine process.

The engine runs a forwarded CLI command with the same code a CLI process runs
(``engram.cli.main.main``), in a worker thread, several at a time. Those commands print to
``sys.stdout``/``sys.stderr`` and read ``sys.stdin``, which are process-wide; so the engine
installs :class:`RoutedStream` objects once, and each request thread routes them to its
own buffers with :func:`captured`. Warnings logged in that thread reach the caller's stderr
the way the CLI shows them (``engram: WARNING: …``) through :class:`CapturedLogHandler`.
"""

from __future__ import annotations

import io
import logging
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, BinaryIO, cast

import attrs

if TYPE_CHECKING:
    from _typeshed import ReadableBuffer


@attrs.define
class Captured:
    """What one request wrote, and what it may read."""

    stdin: io.TextIOWrapper
    stdout: io.TextIOWrapper
    stderr: io.TextIOWrapper

    def text(self, stream: io.TextIOWrapper) -> str:
        """What the command wrote to ``stream`` and was not sent on already (streamed)."""
        stream.flush()
        raw = stream.buffer
        if not isinstance(raw, io.BytesIO):
            return ""
        return raw.getvalue().decode("utf-8", errors="replace")


class _Relay(io.RawIOBase):
    """Bytes written to it go straight to ``send`` as text (a streamed stderr)."""

    name = "<stderr>"

    def __init__(self, send: Callable[[str], None]) -> None:
        super().__init__()
        self._send = send

    def writable(self) -> bool:
        return True

    def write(self, data: ReadableBuffer) -> int:
        chunk = bytes(data)
        if chunk:
            self._send(chunk.decode("utf-8", errors="replace"))
        return len(chunk)


class _Local(threading.local):
    captured: Captured | None = None


_LOCAL = _Local()


class RoutedStream(io.TextIOBase):
    """``sys.stdout`` (or ``stderr``/``stdin``) of the engine: the request thread's own
    buffer while it runs a command, else the process's stream (a log file or devnull)."""

    def __init__(self, name: str, fallback: IO[str]) -> None:
        super().__init__()
        self._name = name
        self._fallback = fallback

    def _target(self) -> IO[str]:
        captured = _LOCAL.captured
        if captured is None:
            return self._fallback
        stream: IO[str] = getattr(captured, self._name)
        return stream

    def write(self, text: str) -> int:
        return self._target().write(text)

    def read(self, size: int | None = -1) -> str:
        return self._target().read(-1 if size is None else size)

    def readline(self, size: int | None = -1) -> str:  # type: ignore[override]
        return self._target().readline(-1 if size is None else size)

    def flush(self) -> None:
        self._target().flush()

    def isatty(self) -> bool:
        return False

    def readable(self) -> bool:
        return self._name == "stdin"

    def writable(self) -> bool:
        return self._name != "stdin"

    @property
    def buffer(self) -> BinaryIO:
        return cast("BinaryIO", self._target().buffer)  # type: ignore[attr-defined]

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return "utf-8"

    def fileno(self) -> int:
        return self._fallback.fileno()


def install() -> None:
    """Route the process's standard streams (once, at engine start)."""
    if not isinstance(sys.stdout, RoutedStream):
        sys.stdout = RoutedStream("stdout", sys.stdout)
    if not isinstance(sys.stderr, RoutedStream):
        sys.stderr = RoutedStream("stderr", sys.stderr)
    if not isinstance(sys.stdin, RoutedStream):
        sys.stdin = RoutedStream("stdin", sys.stdin)


def _buffer(data: bytes = b"") -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", newline="")


@contextmanager
def captured(
    stdin: bytes = b"", on_stderr: Callable[[str], None] | None = None
) -> Iterator[Captured]:
    """This thread's standard streams, for the duration of one command.

    ``on_stderr``: where stderr goes as it is written (the caller's terminal or log, through
    the engine's connection: progress lines and notes of a long ``index`` arrive while it
    runs, docs/engine.md "Protocol"); without it stderr is returned with stdout at the end.
    """
    previous = _LOCAL.captured
    stderr = _buffer()
    if on_stderr is not None:  # every write is sent at once: whole strings, whole characters
        stderr = io.TextIOWrapper(_Relay(on_stderr), encoding="utf-8", write_through=True)
    capture = Captured(stdin=_buffer(stdin), stdout=_buffer(), stderr=stderr)
    _LOCAL.captured = capture
    try:
        yield capture
    finally:
        _LOCAL.captured = previous


class CapturedLogHandler(logging.Handler):
    """Warnings of a command running for a front end go to that front end's stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.setFormatter(logging.Formatter("engram: %(levelname)s: %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        capture = _LOCAL.captured
        if capture is None or not record.name.startswith("engram"):
            return
        try:
            capture.stderr.write(self.format(record) + "\n")
        except Exception:
            self.handleError(record)


__all__ = ["Captured", "CapturedLogHandler", "RoutedStream", "captured", "install"]
