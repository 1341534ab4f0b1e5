"""The first diagnostics a document gets carry its memories (issue 18).

``engram serve`` answers a just-opened document from the digest at once and from the
engine once it answers (docs/lsp.md, "Start-up"): whichever publishes first, an editor
must never see an empty list for a file with anchored memories and then, later, the real
one. At 58k files / 200,000 memories the first publish for a file with 80 memories was
empty; these tests open a file with many memories, some anchored to a symbol and some to
lines, before and after the folder is ready, and look at the very first publish.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from lsprotocol import types
from tests.lsp.conftest import lsp_session, open_doc, seed, wait_for, wait_ready

from engram.workspace import Workspace

pytestmark = pytest.mark.timeout(180)

#: (type, symbol or None, line or None): gotchas and dead ends on the three symbols of
#: ``APP_SOURCE``, requirements and decisions on its lines; more than the per-file cap
TOPICS = [
    "absolute paths",
    "the proxy drops the first call",
    "keys are case folded",
    "utf-8 only",
    "retries must stay idempotent",
    "the cache is per process",
    "timeouts are in seconds",
    "urls are never logged",
    "the config file may be empty",
    "get returns None for expired keys",
    "connect is called from a thread pool",
    "parse_config runs before logging is set up",
    "the path may be a symlink",
    "the first retry waits 100 ms",
    "the cache must not grow past 10k entries",
    "connect must not follow redirects",
    "config keys are dotted",
    "an empty key is a programming error",
    "the url is validated by the caller",
    "the config is read once per process",
    "fh is closed even when read fails",
    "retries=0 means one attempt",
    "Cache.get is hot: no logging in it",
    "parse_config ignores comments",
]
SHAPES: list[tuple[str, str | None, int | None]] = [
    ("gotcha", "parse_config", None),
    ("dead_end", "connect", None),
    ("gotcha", "Cache", None),
    ("requirement", None, 10),
    ("decision", None, 4),
    ("error_pattern", "connect", None),
]


#: where ``APP_SOURCE`` defines each symbol (0-based)
SYMBOL_LINES = {"parse_config": 3, "connect": 9, "Cache": 15}


def seed_many(root: Any) -> list[str]:
    memories: list[dict[str, Any]] = []
    for i, topic in enumerate(TOPICS):
        mtype, symbol, line = SHAPES[i % len(SHAPES)]
        memory: dict[str, Any] = {
            "content": f"{topic}: note {i} about src/app.py",
            "type": mtype,
            "file": "src/app.py",
        }
        if symbol is not None:
            memory["symbol"] = symbol
        else:
            memory["start_line"] = memory["end_line"] = line
        memories.append(memory)
    return seed(root, memories)


def ids_of(params: types.PublishDiagnosticsParams) -> set[str]:
    return {d.data["id"] for d in params.diagnostics if isinstance(d.data, dict)}


@pytest.mark.parametrize("when", ["before_ready", "after_ready"])
async def test_the_first_publish_for_a_file_carries_its_memories(
    app_workspace: Workspace, when: str
) -> None:
    root = app_workspace.root
    app = root / "src" / "app.py"
    ids = seed_many(root)
    assert len(set(ids)) == len(TOPICS)  # none merged into another
    async with lsp_session([root]) as client:
        if when == "after_ready":
            await wait_ready(client)
        first = client.protocol.wait_for_notification_async(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
        doc_uri = await open_doc(client, app)
        params: types.PublishDiagnosticsParams = await asyncio.wait_for(first, 60)
        assert params.uri == doc_uri
        shown = ids_of(params)
        # the per-file cap (20) of the seeded memories, symbol- and line-anchored alike
        assert len(shown) == 20 and shown <= set(ids)
        symbol_anchored = {
            ids[i]: SHAPES[i % len(SHAPES)][1]
            for i in range(len(TOPICS))
            if SHAPES[i % len(SHAPES)][1] is not None
        }
        assert shown & set(symbol_anchored)
        if when == "before_ready":
            await wait_ready(client)
        # what the engine settles on is what the first publish showed
        await wait_for(
            lambda: (
                {
                    d.data["id"]
                    for d in client.diagnostics.get(doc_uri, [])
                    if isinstance(d.data, dict)
                }
                == shown
            ),
            what="the engine's diagnostics",
        )
        # and a symbol-anchored memory sits on its symbol's definition
        for d in client.diagnostics[doc_uri]:
            assert isinstance(d.data, dict)
            symbol = symbol_anchored.get(d.data["id"])
            if symbol is not None:
                assert d.range.start.line == SYMBOL_LINES[symbol], d
