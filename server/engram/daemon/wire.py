"""The engine protocol: newline-delimited JSON over a local stream (docs/engine.md, "Protocol").

Standard library only. One JSON object per line, UTF-8. A connection starts with ``hello``
(the client's protocol number and Engram version, its kind and pid, and on loopback the
engine's token); the engine answers with its own, and a mismatch is refused: a front end
never speaks to an engine of another build (it replaces an older one, see
``engram.daemon.client``). The ``stop`` request is the same in every version, so any
front end can retire any engine.

Frames:

* request ``{"id": 3, "op": "cli", ...}``: ids are the client's, unique per connection;
* reply ``{"id": 3, "ok": true, "result": ...}`` or ``{"id": 3, "ok": false,
  "error": {"kind": "user" | "internal" | "protocol" | "denied" | "busy", "message": "..."}}``;
* heartbeat ``{"beat": [3]}``: sent about every :data:`HEARTBEAT_SECONDS` while requests are
  in flight, so a client tells a slow answer from a dead engine without a long timeout;
* stream ``{"stream": 3, "stderr": "..."}``: what a forwarded command (``cli`` request with
  ``"stream_stderr": true``) writes to stderr, sent as it is written and before the reply,
  so progress lines of a long ``index`` reach the caller while it runs; for an ``lsp``
  ``index`` request with ``"stream_stderr": true``, its progress notes (JSON text: whom it
  waits for, how far it got; ``engram.lsp.served.IndexNotes``);
* event ``{"event": "changed", "files": [...], "ids": [...]}``: memories changed (to clients
  that subscribed in their hello), so every window refreshes at once.
"""

from __future__ import annotations

import json

from engram import __version__

#: ``typing`` costs a forwarding CLI milliseconds; mypy reads the names anyway
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Mapping
    from typing import Final

#: Bump on any incompatible change of frames or ops; an engine of another protocol is
#: replaced (when older) or left alone (when newer), never spoken to.
PROTOCOL: Final = 1
#: The build a front end must find: same protocol, same Engram version.
BUILD: Final = f"{PROTOCOL}/{__version__}"
#: The largest frame either side accepts (a whole export fits; a runaway peer does not).
MAX_FRAME: Final = 256 * 1024 * 1024
HEARTBEAT_SECONDS: Final = 1.0

#: Error kinds in replies.
USER, INTERNAL, PROTOCOL_MISMATCH, DENIED, BUSY = "user", "internal", "protocol", "denied", "busy"

Json = dict[str, object]


class WireError(ConnectionError):
    """The peer closed the connection, sent garbage, or went quiet for too long."""


def encode(message: Mapping[str, object]) -> bytes:
    """One frame: compact JSON and a newline (JSON never contains a raw newline)."""
    return (json.dumps(message, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def decode(line: bytes) -> Json:
    try:
        message = json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise WireError(f"not a protocol frame: {exc}") from exc
    if not isinstance(message, dict):
        raise WireError("not a protocol frame: expected a JSON object")
    return message


def version_key(version: str) -> tuple[int, ...]:
    """``0.10.2`` -> (0, 10, 2): which of two builds is newer (non-numbers count as 0)."""
    parts: list[int] = []
    for piece in version.split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def newer(protocol: int, version: str, than_protocol: int, than_version: str) -> bool:
    """Whether build (protocol, version) is newer than the other one."""
    return (protocol, version_key(version)) > (than_protocol, version_key(than_version))


class FrameReader:
    """Reads frames from a blocking socket, each within a deadline."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = bytearray()

    def read(self, timeout: float | None) -> Json:
        """The next frame; :class:`WireError` when the peer closed or stayed silent."""
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return decode(line)
            if len(self._buffer) > MAX_FRAME:
                raise WireError("frame too large")
            self._sock.settimeout(timeout)
            try:
                chunk = self._sock.recv(1 << 16)
            except TimeoutError as exc:
                raise WireError(f"no answer from the engine within {timeout:g}s") from exc
            except OSError as exc:
                raise WireError(f"connection to the engine lost: {exc}") from exc
            if not chunk:
                raise WireError("the engine closed the connection")
            self._buffer.extend(chunk)


__all__ = [
    "BUILD",
    "BUSY",
    "DENIED",
    "HEARTBEAT_SECONDS",
    "INTERNAL",
    "MAX_FRAME",
    "PROTOCOL",
    "PROTOCOL_MISMATCH",
    "USER",
    "FrameReader",
    "Json",
    "WireError",
    "decode",
    "encode",
    "newer",
    "version_key",
]
