"""The one LLM client (engram.llm, docs/security.md "The LLM endpoint"): a real HTTP server on
loopback receives what Engram sends, through the observer's rewording and the contradiction
judge alike.

Issue 13: the contradiction judge had its own client that sent memory text unredacted and
took the key's variable from ``config.api_key_env`` without the fixed default."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest
from tests.security.conftest import PROMOTING_EVENTS, Recorder

from engram import __version__
from engram.app.engine import Engine
from engram.app.remember import remember_many
from engram.approvals import ApprovalStore
from engram.config import LlmConfig, load_settings
from engram.lifecycle.contradictions import ContradictionJudges, find_contradictions
from engram.llm import LlmClient, LlmError
from engram.model import Memory, MemoryType
from engram.observer import Observer
from engram.observer.llm import rewrite_contents
from engram.workspace import Workspace
from engram.workspace_trust import approve

#: secrets as they sit in text stored before a rule existed (or pasted into a session)
OPENAI = "sk-proj-Zq8xT4vN2mK7pL9rW3yB6cD1fH5jQ0sU"
JSON_KEY = '{"api_key": "a8f5f167f44f4964e6c998dee827110c"}'
PASSWORD = "--password hunter3xyzzy"


@attrs.define
class Endpoint:
    url: str
    requests: list[dict[str, Any]]
    #: what the model answers: "bools" (one true per item) or "notes" (one string per item)
    answer: str = "bools"


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint("", [])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            state.requests.append(
                {"path": self.path, "headers": dict(self.headers), "body": body}
            )  # fmt: skip
            user = body["messages"][1]["content"]
            n = sum(1 for line in user.splitlines() if line[:1].isdigit())
            items = [True] * n if state.answer == "bools" else [f"Reworded {i}." for i in range(n)]
            data = json.dumps({"choices": [{"message": {"content": json.dumps(items)}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *_args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()


def _sent(endpoint: Endpoint) -> str:
    return json.dumps([r["body"] for r in endpoint.requests])


OLD = "`Response.history` retains the redirects"
NEW = "`Response.history` now discards the redirects"
GOTCHA = MemoryType.GOTCHA


def test_no_secret_in_a_memory_reaches_the_endpoint(endpoint: Endpoint) -> None:
    client = LlmClient.from_config(LlmConfig(base_url=endpoint.url, model="m"), environ={})
    assert client is not None
    old = Memory(f"{OLD}; token {OPENAI}, config {JSON_KEY}", type=MemoryType.GOTCHA)
    new = Memory(f"{NEW}; run it with {PASSWORD}", type=MemoryType.GOTCHA)
    (found,) = find_contradictions(new, [(old, None)], judges=ContradictionJudges(llm=client))
    assert found.kind == "llm"
    endpoint.answer = "notes"
    assert rewrite_contents(client, [f"deploy with {OPENAI}", JSON_KEY]) is not None
    sent = _sent(endpoint)
    assert len(endpoint.requests) == 2
    for secret in (OPENAI, "a8f5f167f44f4964e6c998dee827110c", "hunter3xyzzy"):
        assert secret not in sent
    assert "[REDACTED:" in sent and "retains the redirects" in sent


def test_key_is_read_from_the_fixed_variable_unless_the_users_settings_name_one() -> None:
    config = LlmConfig(base_url="http://127.0.0.1:9/v1", model="m")
    env = {"ENGRAM_LLM_API_KEY": "fixed", "MY_KEY": "mine", "GITHUB_TOKEN": "ghp_x"}
    assert (c := LlmClient.from_config(config, environ=env)) and c.key == "fixed"
    own = attrs.evolve(config, api_key_env="MY_KEY")  # only a user's own file can say this
    assert (c := LlmClient.from_config(own, environ=env)) and c.key == "mine"
    assert "fixed" not in repr(c) and "mine" not in repr(c)
    assert LlmClient.from_config(LlmConfig(base_url="file:///etc/passwd", model="m")) is None
    assert LlmClient.from_config(LlmConfig()) is None


def test_failures_are_one_line_and_no_verdict(endpoint: Endpoint) -> None:
    closed = LlmClient.from_config(
        LlmConfig(base_url="http://127.0.0.1:9/v1", model="m"), timeout=2
    )
    assert closed is not None
    with pytest.raises(LlmError) as refused:
        closed.ask_list("judge", ["a"])
    assert "cannot reach the LLM endpoint 127.0.0.1:9" in str(refused.value)
    assert "\n" not in str(refused.value)
    old, new = Memory(OLD, type=MemoryType.GOTCHA), Memory(NEW, type=MemoryType.GOTCHA)
    assert find_contradictions(new, [(old, None)], judges=ContradictionJudges(llm=closed)) == []
    endpoint.answer = "notes"  # strings where booleans were asked: no verdict
    client = LlmClient.from_config(LlmConfig(base_url=endpoint.url, model="m"))
    assert client is not None
    assert find_contradictions(new, [(old, None)], judges=ContradictionJudges(llm=client)) == []


def _open_engine(ws: Workspace) -> Engine:
    return Engine.open(ws, {"embed": {"model": "none"}, "contradictions": {"nli": False}})


def test_an_untrusted_repository_cannot_pick_the_judges_endpoint_or_key(
    hostile_repo: Workspace,
    recorder: Recorder,
    user_config: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The repository's pyproject names the recorder as endpoint and GITHUB_TOKEN as key."""
    engine = _open_engine(hostile_repo)
    try:
        assert engine.contradiction_judges.llm is None
        remember_many(engine, [Memory(OLD, type=GOTCHA), Memory(NEW, type=GOTCHA)])
    finally:
        engine.close()
    assert recorder.requests == []

    approve(hostile_repo.root, load_settings(hostile_repo).trust, ApprovalStore(user_config))
    monkeypatch.setenv("ENGRAM_LLM_API_KEY", "the-users-own-key")
    engine = _open_engine(hostile_repo)
    try:
        judge = engine.contradiction_judges.llm
        assert judge is not None and judge.base_url == recorder.url
        remember_many(engine, [Memory(OLD, type=GOTCHA), Memory(NEW, type=GOTCHA)])
    finally:
        engine.close()
    assert recorder.requests, "the approved endpoint judged the open pair"
    assert {r["authorization"] for r in recorder.requests} == {"Bearer the-users-own-key"}
    assert all("ghp_victims" not in json.dumps(r) for r in recorder.requests)


def test_the_observer_and_the_judge_send_through_the_one_client(
    endpoint: Endpoint, tmp_workspace: Workspace
) -> None:
    config = LlmConfig(base_url=endpoint.url, model="m")
    engine = Engine.open(
        tmp_workspace,
        {"embed": {"model": "none"}, "contradictions": {"nli": False},
         "llm": {"base_url": endpoint.url, "model": "m"}},
    )  # fmt: skip
    try:
        judge = engine.contradiction_judges.llm
        remember_many(engine, [Memory(OLD, type=GOTCHA), Memory(NEW, type=GOTCHA)])
        endpoint.answer = "notes"
        observer = Observer(
            _Sink(), workspace=tmp_workspace, state_dir=tmp_workspace.root / "obs", llm=config
        )
        for event in PROMOTING_EVENTS:
            observer.observe({"session_id": "s", **event})
    finally:
        engine.close()
    assert isinstance(judge, LlmClient) and isinstance(observer.llm, LlmClient)
    assert judge == observer.llm  # same endpoint, model and key rule
    agents = [r["headers"].get("User-Agent") for r in endpoint.requests]
    prompts = [r["body"]["messages"][0]["content"] for r in endpoint.requests]
    assert len(agents) == 2 and set(agents) == {f"engram/{__version__}"}
    assert "OLD and NEW" in prompts[0] and "Rewrite each numbered note" in prompts[1]


class _Sink:
    """Collects what the observer promotes (it needs no store to ask the LLM)."""

    def __init__(self) -> None:
        self.memories: list[Memory] = []

    def remember_many(self, memories: list[Memory]) -> list[Memory]:
        self.memories.extend(memories)
        return memories

    def list(self, *, type: str, limit: int) -> list[Memory]:
        return [m for m in self.memories if m.type.value == type][:limit]

    def memories_for_file(self, rel: str) -> list[Memory]:
        return [m for m in self.memories if rel in m.related_files]
