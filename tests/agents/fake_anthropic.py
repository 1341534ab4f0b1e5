"""A loopback stand-in for the Anthropic Messages API, so a real Claude Code runs offline.

Claude Code sends its model calls to ``$ANTHROPIC_BASE_URL/v1/messages`` (streamed as
server-sent events when the body says ``"stream": true``). This server answers them from a
script: the main conversation (the request that offers Claude Code's ``Edit`` tool) gets the
scripted turns in order, one per request; anything else Claude Code asks on the side (a
title, a quota probe, ``count_tokens``) gets a short plain answer. Every request body is kept
with the times it arrived and was answered, so a test can read what reached the model's
context and when (docs/agents.md, "A live Claude Code session").

Test support only: it never leaves the loopback interface and knows nothing of Engram.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

log = logging.getLogger(__name__)

MODEL = "claude-sonnet-4-5-20250929"


@attrs.frozen
class ToolCall:
    """A scripted assistant turn that calls one tool."""

    name: str
    input: dict[str, Any]


@attrs.frozen
class Text:
    """A scripted assistant turn that answers in text and ends the turn."""

    text: str


Turn = ToolCall | Text


@attrs.define
class Recorded:
    """One request as it reached the server: the body, and when it came and was answered."""

    path: str
    body: dict[str, Any]
    received: float
    answered: float = 0.0
    main: bool = False


def _offers_tool(body: dict[str, Any], name: str) -> bool:
    tools = body.get("tools")
    return isinstance(tools, list) and any(
        isinstance(t, dict) and t.get("name") == name for t in tools
    )


def _events(message_id: str, turn: Turn, index: int) -> Iterator[tuple[str, dict[str, Any]]]:
    """The SSE events of one assistant message, as the Messages API streams them."""
    usage = {"input_tokens": 100, "output_tokens": 0}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    if isinstance(turn, ToolCall):
        block: dict[str, Any] = {
            "type": "tool_use",
            "id": f"toolu_{index:02d}_{turn.name.lower()}",
            "name": turn.name,
            "input": {},
        }
        delta: dict[str, Any] = {"type": "input_json_delta", "partial_json": json.dumps(turn.input)}
        stop = "tool_use"
    else:
        block = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": turn.text}
        stop = "end_turn"
    yield "content_block_start", {"type": "content_block_start", "index": 0, "content_block": block}
    yield "content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def _message(message_id: str, turn: Turn, index: int) -> dict[str, Any]:
    """The same message, whole (a request without ``stream``)."""
    if isinstance(turn, ToolCall):
        content: list[dict[str, Any]] = [
            {
                "type": "tool_use",
                "id": f"toolu_{index:02d}_{turn.name.lower()}",
                "name": turn.name,
                "input": turn.input,
            }
        ]
        stop = "tool_use"
    else:
        content = [{"type": "text", "text": turn.text}]
        stop = "end_turn"
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


class FakeAnthropic:
    """The server: ``with FakeAnthropic(turns) as api:`` then point ``ANTHROPIC_BASE_URL`` at
    ``api.url``; ``api.requests`` holds what came in."""

    def __init__(self, turns: Sequence[Turn], main_tool: str = "Edit") -> None:
        self._turns = list(turns)
        self._main_tool = main_tool
        self._lock = threading.Lock()
        self._served = 0
        self.requests: list[Recorded] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def main_requests(self) -> list[Recorded]:
        """The requests of the scripted conversation, in order."""
        return [r for r in self.requests if r.main]

    def __enter__(self) -> FakeAnthropic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def _next_turn(self, body: dict[str, Any]) -> tuple[Turn, int, bool]:
        with self._lock:
            if _offers_tool(body, self._main_tool) and self._served < len(self._turns):
                index = self._served
                self._served += 1
                return self._turns[index], index, True
            return Text("OK"), 99, False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                log.debug("fake-anthropic: " + format, *args)

            def _json(self, status: int, value: dict[str, Any]) -> None:
                data = json.dumps(value).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_HEAD(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def do_GET(self) -> None:
                server.requests.append(Recorded(self.path, {}, time.monotonic(), time.monotonic()))
                self._json(200, {"data": [], "has_more": False})

            def do_POST(self) -> None:
                received = time.monotonic()
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                record = Recorded(self.path, body if isinstance(body, dict) else {}, received)
                server.requests.append(record)
                path = self.path.split("?", 1)[0]
                if path.endswith("/count_tokens"):
                    self._json(200, {"input_tokens": 1000})
                elif path.endswith("/v1/messages"):
                    turn, index, record.main = server._next_turn(record.body)
                    message_id = f"msg_{len(server.requests):03d}"
                    if record.body.get("stream"):
                        self._stream(message_id, turn, index)
                    else:
                        self._json(200, _message(message_id, turn, index))
                else:
                    self._json(200, {})
                record.answered = time.monotonic()

            def _stream(self, message_id: str, turn: Turn, index: int) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, data in _events(message_id, turn, index):
                    self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                    self.wfile.flush()
                self.close_connection = True

        return Handler


def request_text(record: Recorded) -> str:
    """All the text a request put in front of the model: system prompt and every message."""
    parts: list[str] = []
    system = record.body.get("system")
    if isinstance(system, str):
        parts.append(system)
    elif isinstance(system, list):
        parts.extend(str(b.get("text", "")) for b in system if isinstance(b, dict))
    for message in record.body.get("messages") or []:
        parts.append(message_text(message))
    return "\n".join(parts)


def message_text(message: dict[str, Any]) -> str:
    """The text of one message, tool results included."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    out: list[str] = []
    for block in content or []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(str(block.get("text", "")))
        elif block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, str):
                out.append(inner)
            elif isinstance(inner, list):
                out.extend(str(b.get("text", "")) for b in inner if isinstance(b, dict))
    return "\n".join(out)
