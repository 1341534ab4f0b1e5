"""The optional LLM judge of contradictions (docs/lifecycle.md), against a fake
OpenAI-compatible server on loopback, through the shared client (engram.llm; its security
rules are tested in tests/security/test_llm_client.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from engram.config import LlmConfig
from engram.lifecycle.contradictions import ContradictionJudges, find_contradictions
from engram.llm import LlmClient
from engram.model import Memory, MemoryType


class _Fake(BaseHTTPRequestHandler):
    answer = "[true]"
    requests: ClassVar[list[dict[str, object]]] = []

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        type(self).requests.append({"path": self.path, "body": body})
        reply = {"choices": [{"message": {"content": type(self).answer}}]}
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def judges() -> Iterator[ContradictionJudges]:
    _Fake.requests = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Fake)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield ContradictionJudges(llm=LlmClient.from_config(LlmConfig(base_url=url, model="t")))
    finally:
        server.shutdown()
        server.server_close()


OLD = Memory("`Response.history` retains the redirects", type=MemoryType.GOTCHA)
NEW = Memory("`Response.history` now discards the redirects", type=MemoryType.GOTCHA)


def test_a_pair_the_rules_leave_open_is_judged_by_the_configured_endpoint(
    judges: ContradictionJudges,
) -> None:
    _Fake.answer = "Here you go: [true]"
    assert find_contradictions(NEW, [(OLD, None)]) == []  # the rules alone: no verdict
    (found,) = find_contradictions(NEW, [(OLD, None)], judges=judges)
    assert found.kind == "llm" and found.memory is OLD
    (request,) = _Fake.requests
    assert request["path"] == "/v1/chat/completions"
    sent = json.dumps(request["body"])
    assert "retains the redirects" in sent and "now discards" in sent


@pytest.mark.parametrize("answer", ["[false]", "not json", "[true, true]", '["yes"]'])
def test_a_no_or_an_unusable_answer_is_never_a_contradiction(
    judges: ContradictionJudges, answer: str
) -> None:
    _Fake.answer = answer
    assert find_contradictions(NEW, [(OLD, None)], judges=judges) == []
