"""`engram mcp-serve` over a real stdio connection with the official SDK client."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from engram.workspace import Workspace

#: what the server keeps of this process's environment: the suite's engine settings too
#: (tests/conftest.py), or each test left a workspace engine running for its 10-minute idle
KEEP = ("PATH", "HOME", "LANG", "TMPDIR", "PYTHONPATH")
ENGINE_SETTINGS = ("ENGRAM_ENGINE", "ENGRAM_RUNTIME_DIR", "ENGRAM_ENGINE_IDLE_SECONDS")


def server_env(home: Path | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in KEEP + ENGINE_SETTINGS}
    env["ENGRAM_EMBED__MODEL"] = "none"
    if home is not None:
        env["HOME"] = str(home)
    return env


def test_the_server_runs_with_the_suites_engine_settings() -> None:
    """walk31 found seven engines left by one run of this file: the helper dropped the
    suite's ENGRAM_ENGINE=off and its runtime directory and idle seconds."""
    env = server_env()
    for name in ENGINE_SETTINGS:
        assert env[name] == os.environ[name], name
    assert env["ENGRAM_ENGINE"] == "off"


@asynccontextmanager
async def session_for(ws: Workspace, home: Path | None = None) -> AsyncIterator[ClientSession]:
    # set up, as the person does once (docs/agents.md: a repository nobody set up is not
    # served); PYTHONPATH too: the server must be the code under test (a worktree's, not
    # the virtualenv's editable install)
    ws.ensure_engram_dir()
    env = server_env(home)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "engram", "mcp-serve", "--workspace", str(ws.root)],
        env=env,
        cwd=str(ws.root),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def _payload(result: Any) -> dict[str, Any]:
    if result.structured_content is not None:
        data = result.structured_content
        return data.get("result", data) if isinstance(data, dict) else {"result": data}
    return json.loads(result.content[0].text)


def _text(result: Any) -> str:
    """A tool result that is text for the agent to read (engram_context), not JSON."""
    assert result.structured_content is None and len(result.content) == 1
    text: str = result.content[0].text
    return text


async def test_tools_are_listed_with_schemas(tmp_workspace: Workspace) -> None:
    async with session_for(tmp_workspace) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
    expected = {
        "engram_search",
        "engram_context",
        "engram_remember",
        "engram_impact",
        "engram_recipes",
        "engram_review",
        "engram_confirm",
        "engram_flag",
        "engram_observe",
        "engram_session_summary",
        "engram_show",
        "engram_log",
        "engram_find_tools",
        "engram_call_tool",
    }
    assert expected <= set(tools)
    remember = tools["engram_remember"].input_schema
    assert remember["required"] == ["text"]
    assert "dead_end" in json.dumps(remember["properties"]["type"])
    assert "before editing" in (tools["engram_context"].description or "").lower()


async def test_remember_search_flag_round_trip(tmp_workspace: Workspace) -> None:
    (tmp_workspace.root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    async with session_for(tmp_workspace) as session:
        made = _payload(
            await session.call_tool(
                "engram_remember",
                {
                    "text": "charge() takes euros but the payment API wants cents",
                    "type": "gotcha",
                    "file": "billing.py",
                    "line": 1,
                },
            )
        )
        memory_id = made["id"]
        found = _payload(await session.call_tool("engram_search", {"query": "payment cents"}))
        # the one JSON rendering of a search, as the CLI's --json and engram.search give it
        assert [r["id"] for r in found["hits"]][:1] == [memory_id]
        assert found["hits"][0]["anchors"][0] == {
            **found["hits"][0]["anchors"][0],
            "file": "billing.py",
            "start_line": 0,
        }
        # relevance first (issue 12 #5): a question nothing matches gets no results
        none = _payload(await session.call_tool("engram_search", {"query": "xylophone quartz"}))
        assert none["hits"] == []
        flagged = _payload(
            await session.call_tool("engram_flag", {"id": memory_id, "kind": "incorrect"})
        )
        assert flagged["id"] == memory_id


async def test_a_pasted_query_is_answered_without_being_echoed_whole(
    tmp_workspace: Workspace,
) -> None:
    """Stop 28's MCP walk: a 100k-character query (an agent pasting a file) came back in a
    103k-character answer, the query repeated whole, past what a tool result may hold."""
    (tmp_workspace.root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    query = "payment cents " + "lorem ipsum dolor " * 6_000  # ~108k characters
    async with session_for(tmp_workspace) as session:
        await session.call_tool(
            "engram_remember",
            {"text": "charge() takes euros but the payment API wants cents", "file": "billing.py"},
        )
        result = await session.call_tool("engram_search", {"query": query})
        found = _payload(result)
    assert not result.is_error
    assert found["query"].startswith("payment cents lorem")
    assert found["query"].endswith(f"({len(query):,} characters)")
    assert len(json.dumps(found)) < 10_000
    assert found["hits"], found  # the query is still searched, only its echo is cut


async def test_context_is_the_rendered_pack_within_budget(tmp_workspace: Workspace) -> None:
    """Issue 12 point 4: the tool result is the pack's text and its ids, not the JSON pack,
    and the budget holds on that text (the old result was the whole JSON: 19,711 characters
    for a pack reported as 1,358 tokens)."""
    from engram.tokens import estimate_tokens

    (tmp_workspace.root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    async with session_for(tmp_workspace) as session:
        ids = []
        for n in range(6):
            made = _payload(
                await session.call_tool(
                    "engram_remember",
                    {
                        "text": f"charge() rule {n}: amounts are cents, never euros; "
                        + "rounding happens once at the edge. " * (n + 1),
                        "type": "gotcha",
                        "file": "billing.py",
                        "line": 1,
                    },
                )
            )
            ids.append(made["id"])
        for budget in (80, 200, 1500):
            result = await session.call_tool(
                "engram_context", {"file": "billing.py", "budget_tokens": budget}
            )
            assert result.structured_content is None
            assert len(result.content) == 1
            text = result.content[0].text
            assert not text.lstrip().startswith("{")
            assert estimate_tokens(text) <= budget, text
            last = text.rstrip("\n").splitlines()[-1]
            assert last.startswith("ids: ")
            shown = last.removeprefix("ids: ").split()
            assert shown and set(shown) <= set(ids)
            if budget == 1500:
                assert set(shown) == set(ids) and "## Critical" in text


async def test_bad_input_and_paths_outside_are_tool_errors(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    async with session_for(tmp_workspace) as session:
        empty = await session.call_tool("engram_remember", {"text": "   "})
        assert empty.is_error
        outside = await session.call_tool(
            "engram_remember", {"text": "x", "file": str(tmp_path / "elsewhere.py")}
        )
        assert outside.is_error
        assert "outside the workspace" in outside.content[0].text
        # anchors are validated like the CLI's (issue 12: docs/trust.md "Anchors")
        (tmp_workspace.root / "jobs.py").write_text("def run():\n    return 1\n")
        nofile = await session.call_tool("engram_remember", {"text": "x", "file": "nosuch.go"})
        assert nofile.is_error and "nosuch.go does not exist" in nofile.content[0].text
        typo = await session.call_tool(
            "engram_remember", {"text": "x", "file": "jobs.py", "symbol": "runn"}
        )
        assert typo.is_error
        assert "no symbol 'runn' in jobs.py; closest: run (line 1)" in typo.content[0].text
        far = await session.call_tool(
            "engram_remember", {"text": "x", "file": "jobs.py", "line": 99999}
        )
        assert far.is_error and "line 99999 is outside jobs.py (2 lines)" in far.content[0].text
        later = await session.call_tool(
            "engram_remember", {"text": "y", "file": "nosuch.go", "allow_missing": True}
        )
        assert not later.is_error, later.content
        unknown = await session.call_tool("engram_flag", {"id": "m-0000000000", "kind": "outdated"})
        assert unknown.is_error
        bad_kind = await session.call_tool("engram_flag", {"id": "m-1", "kind": "meh"})
        assert bad_kind.is_error
        # a misspelt path: the workspace's most changed files came back as its impact
        typo_impact = await session.call_tool("engram_impact", {"file": "jbos.py"})
        assert typo_impact.is_error and "jbos.py does not exist" in typo_impact.content[0].text
        impact = await session.call_tool("engram_impact", {"file": "jobs.py"})
        assert not impact.is_error, impact.content


async def test_lazy_hub_finds_and_calls_a_real_mcp_server(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    config_dir = home / ".config" / "engram"
    config_dir.mkdir(parents=True)
    time_server = Path(sys.executable).parent / "mcp-server-time"
    (config_dir / "mcp.json").write_text(
        json.dumps({"mcpServers": {"time": {"command": str(time_server), "args": []}}})
    )
    async with session_for(tmp_workspace, home) as session:
        found = _payload(
            await session.call_tool("engram_find_tools", {"query": "current time in a timezone"})
        )
        names = [t.get("name") or t.get("qualified_name") for t in found["tools"]]
        assert any("get_current_time" in str(n) for n in names), found
        called = await session.call_tool(
            "engram_call_tool",
            {"tool": "time/get_current_time", "arguments": {"timezone": "UTC"}},
        )
        assert not called.is_error, called.content
        assert "UTC" in json.dumps(_payload(called))


@pytest.fixture(autouse=True)
def _anyio_backend() -> str:
    return "asyncio"


async def test_an_agent_is_not_a_person_and_conflicts_come_marked(
    tmp_workspace: Workspace,
) -> None:
    """Issue 12: an MCP client's confirm is only recorded (never verifies), a conflict pair
    comes back together and marked, a flagged memory is never handed back, and the audit
    trail is readable over MCP (docs/trust.md)."""
    (tmp_workspace.root / "jobs.py").write_text("TIMEOUT = 30\n")
    async with session_for(tmp_workspace) as session:
        first = _payload(
            await session.call_tool(
                "engram_remember", {"text": "The job timeout is 30s.", "file": "jobs.py"}
            )
        )["id"]
        second = _payload(
            await session.call_tool(
                "engram_remember", {"text": "The job timeout is 90s.", "file": "jobs.py"}
            )
        )["id"]
        confirmed = _payload(await session.call_tool("engram_confirm", {"id": first}))
        assert confirmed["memory"]["needs_review"] is True and "not verified" in confirmed["note"]
        trail = _payload(await session.call_tool("engram_log", {"id": first}))["entries"]
        assert [e["actor"] for e in trail][-1] == "agent:mcp"
        assert trail[-1]["after"] == {}  # an endorsement changes nothing
        found = _payload(await session.call_tool("engram_search", {"query": "job timeout"}))
        ids = [r["id"] for r in found["hits"]]
        assert {first, second} <= set(ids)
        assert abs(ids.index(first) - ids.index(second)) == 1  # shown together
        for result in found["hits"]:
            if result["id"] in (first, second):
                assert "CONFLICT with" in result["conflict"]
        pack = _text(await session.call_tool("engram_context", {"file": "jobs.py"}))
        assert "CONFLICT with" in pack
        assert pack.index(first) >= 0 and pack.index(second) >= 0
        await session.call_tool("engram_flag", {"id": second, "kind": "outdated"})
        after = _payload(await session.call_tool("engram_search", {"query": "job timeout"}))
        assert second not in json.dumps(after)  # hidden, and the conflict is settled
        pack = _text(await session.call_tool("engram_context", {"file": "jobs.py"}))
        assert second not in pack and "CONFLICT" not in pack and first in pack


async def test_mcp_errors_like_the_cli_and_answers_for_its_caller(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """Issue 16: engram_context on a file that is not there errored on the CLI but returned
    generic context over MCP; engram_find_tools said total_tools 0 with no hint; the session
    summary was the last editor session, not the caller's."""
    home = tmp_path / "home"
    home.mkdir()
    async with session_for(tmp_workspace, home) as session:
        missing = await session.call_tool("engram_context", {"file": "nosuch.py"})
        assert missing.is_error and "nosuch.py does not exist" in missing.content[0].text
        found = _payload(await session.call_tool("engram_find_tools", {"query": "time"}))
        assert found["total_tools"] == 0
        assert any("no MCP servers configured" in n and "mcp.json" in n for n in found["notes"])
        none = _payload(await session.call_tool("engram_session_summary", {}))
        assert none["found"] is False and "no session of yours" in none["text"]
        event = {"session_id": "agent-7", "kind": "tool_result", "tool": "Read", "files": []}
        await session.call_tool("engram_observe", {"event": event})
        mine = _payload(await session.call_tool("engram_session_summary", {}))
        assert mine["session_id"] == "agent-7", mine


async def test_a_teammates_clone_answers_with_the_teams_memories(tmp_workspace: Workspace) -> None:
    """A new user's walk (stop 31): in a teammate's fresh clone (code and ``.engram-team/``)
    ``engram_context`` answered "no memories yet" beside the shared ones, and
    ``engram_search`` found nothing, until the person ran ``engram sync``."""
    from tests.lsp.test_team_start import SHARED, teammates_clone

    shared = teammates_clone(tmp_workspace.root)
    async with session_for(tmp_workspace) as session:
        context = _text(await session.call_tool("engram_context", {"file": "src/app.py"}))
        found = _payload(await session.call_tool("engram_search", {"query": "parse_config"}))
    assert SHARED in context and 'shared by "Ana"' in context, context
    assert [h["id"] for h in found["hits"]] == [shared]


async def test_tool_calls_at_once_in_a_teammates_clone_all_wait_for_the_team_folder(
    tmp_workspace: Workspace,
) -> None:
    """An agent's first tool calls often come together (Claude Code sends several at
    once): only the call that read the team folder waited for it, the others answered
    from a store that did not hold the team's memories yet ("no memories yet" beside
    them, as before b533547). The folder here is large enough that its read takes a
    while; every call at once must still see the shared memory."""
    import anyio
    from tests.lsp.test_team_start import SHARED, teammates_clone

    from engram.lifecycle.team import render_team_file, team_path
    from engram.model import Memory, MemoryType, utcnow

    root = tmp_workspace.root
    teammates_clone(root)
    for n in range(150):
        memory = Memory(f"module_{n} keeps its own retry budget of {n} attempts per call",
                        type=MemoryType.DECISION)  # fmt: skip
        team_path(root / ".engram-team", memory.id).write_text(
            render_team_file(memory, shared_by="Ben", shared_at=utcnow()), encoding="utf-8"
        )
    answers: list[list[str]] = []
    async with session_for(tmp_workspace) as session:

        async def search() -> None:
            found = _payload(await session.call_tool("engram_search", {"query": "parse_config"}))
            answers.append([h["content"] for h in found["hits"]])

        async with anyio.create_task_group() as calls:
            for _ in range(3):
                calls.start_soon(search)
    assert len(answers) == 3, answers
    assert all(any(SHARED in hit for hit in hits) for hits in answers), answers


async def test_a_search_hit_carries_each_fact_once(tmp_workspace: Workspace) -> None:
    """Agents pay for every token: a hit carried the memory twice (its fields at the top and
    the whole record under ``memory``) and each conflict three times (the record's relations,
    a ``conflicts`` list, the mark), 17k characters for ten hits on a 1,000-memory store
    (scripts/bench/agent_calls.py). Each fact once now, the id, the conflict mark and the
    trust marks (review, a teammate's fence and name) kept."""
    from tests.lsp.test_team_start import SHARED, teammates_clone

    shared = teammates_clone(tmp_workspace.root)
    long = " and is read again at every retry of the parser"
    async with session_for(tmp_workspace) as session:
        made = []
        for seconds in (30, 90):
            result = await session.call_tool(
                "engram_remember",
                {"text": f"parse_config times out after {seconds}s{long}", "file": "src/app.py"},
            )
            made.append(_payload(result))
        result = await session.call_tool("engram_search", {"query": "parse_config"})
    # one rendering: the text block is the structured result, nothing more
    found = _payload(result)
    assert json.loads(result.content[0].text) == found
    # a remember result names its memory's citation once, in the record
    assert all("citation" not in m and m["memory"]["citation"] for m in made)
    hits = {h["id"]: h for h in found["hits"]}
    first, second = (m["id"] for m in made)
    assert {shared, first, second} <= set(hits), found
    for hit in found["hits"]:
        text = json.dumps(hit, ensure_ascii=False)
        assert "memory" not in hit and "conflicts" not in hit and "citation_text" not in hit
        # the memory's own words once (a teammate's fenced, so its words are searched bare)
        words = SHARED if hit["id"] == shared else hit["content"]
        assert text.count(words) == 1, text
        assert hit["citation"].startswith(f"[Memory {hit['id']}")
        assert isinstance(hit["score"], float) and hit["reasons"]
    # the conflict mark on each side, naming the other; the new one waits in review
    assert second in hits[first]["conflict"] and first in hits[second]["conflict"]
    assert "CONFLICT with" in hits[first]["conflict"]
    assert hits[second]["needs_review"] is True
    # a teammate's memory: fenced, with who shared it
    team = hits[shared]
    assert 'shared by "Ana"' in team["shared_by"]
    assert team["content"] != SHARED and SHARED in team["content"]


async def test_show_remember_review_confirm_and_log_carry_each_fact_once(
    tmp_workspace: Workspace,
) -> None:
    """A memory record carried its text up to three times (``content``, ``citation_text``
    and the chip ``citation``) in every show, remember, review and confirm result, and a
    memory's log named it again in every entry. Each fact once: the chip is the label,
    the log's ``id`` names the memory; what the editors read (``citation``, ``content``,
    the ids) stays."""
    short = "Nightly jobs time out after 30s."  # within the chip's 40 characters
    async with session_for(tmp_workspace) as session:
        made = _payload(await session.call_tool("engram_remember", {"text": short}))
        mid = made["id"]
        results = {
            "remember": made["memory"],
            "show": _payload(await session.call_tool("engram_show", {"id": mid})),
            "review": _payload(await session.call_tool("engram_review", {}))["memories"][0],
            "confirm": _payload(await session.call_tool("engram_confirm", {"id": mid}))["memory"],
        }
        log = _payload(await session.call_tool("engram_log", {"id": mid}))
    for name, record in results.items():
        assert record["id"] == mid, name
        assert "citation_text" not in record, name
        assert record["citation"] == f"[Memory {mid}: {short}]", name
        # its words in the record and in its chip, which editors and agents show as is
        assert json.dumps(record).count(short) == 2, (name, record)
    assert log["id"] == mid
    assert [e["event"] for e in log["entries"]] == ["create", "confirm"], log
    assert all("memory_id" not in e for e in log["entries"]), log
