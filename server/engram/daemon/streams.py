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
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, BinaryIO, cast

import attrs


@attrs.define
class Captured:
    """What one request wrote, and what it may read."""

    stdin: io.TextIOWrapper
    stdout: io.TextIOWrapper
    stderr: io.TextIOWrapper

    def text(self, stream: io.TextIOWrapper) -> str:
        stream.flush()
        raw = stream.buffer
        assert isinstance(raw, io.BytesIO)
        return raw.getvalue().decode("utf-8", errors="replace")


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
def captured(stdin: bytes = b"") -> Iterator[Captured]:
    """This thread's standard streams, for the duration of one command."""
    previous = _LOCAL.captured
    capture = Captured(stdin=_buffer(stdin), stdout=_buffer(), stderr=_buffer())
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
