"""What the MCP hub records from a tool's result is the tool's word, never the agent's
(issue 15 regression; docs/mcp-hub.md "Tool results as memories", docs/trust.md).

The MCP server's ``engram_call_tool`` and the language server's ``engram.mcp.call`` both send
``ObservationDraft.declared_args()`` (``observed_by: mcp_hub``) to the declared ``remember``.
On the old main the MCP server's path recorded ``agent_explicit`` at 0.7 and lost the related
file and the tool's argument names; these run the declaration on the real engine, in-process
(the real MCP client against the warm engine and the fallback is tests/daemon).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.api.declare import Surface, with_actor
from engram.api.memories import REMEMBER, ObservedBy, RememberArgs, observed
from engram.app import Engine
from engram.app.trust import audit_log
from engram.config import EmbedConfig, EngramConfig
from engram.errors import USER_ERRORS, InvalidInput
from engram.mcphub.results import ObservationDraft
from engram.model import MemorySource, MemoryType
from engram.workspace import Workspace


@pytest.fixture
def engine(tmp_workspace: Workspace) -> Iterator[Engine]:
    (tmp_workspace.root / "src").mkdir(exist_ok=True)
    (tmp_workspace.root / "src" / "app.py").write_text("def main():\n    return 1\n")
    eng = Engine(tmp_workspace, EngramConfig(embed=EmbedConfig(model="none")))
    try:
        yield eng
    finally:
        eng.close()


def _draft(tool: str, text: str) -> ObservationDraft:
    return ObservationDraft(
        f"MCP tool {tool} failed: {text}",
        tool,
        "mcp_gotcha",
        "src/app.py",
        {"timezone": "Mars/Olympus", "format": "iso"},
    )


@pytest.mark.parametrize(
    ("surface", "actor"), [(Surface.MCP, "agent:mcp"), (Surface.LSP, "agent:lsp:neovim")]
)
def test_a_hub_observation_is_recorded_as_the_tools_on_both_hubs(
    engine: Engine, surface: Surface, actor: str
) -> None:
    draft = _draft("time__get_current_time", f"Invalid timezone Mars/Olympus ({surface})")
    args = REMEMBER.parse(draft.declared_args(), surface)
    if surface is Surface.LSP:  # the language server adds its client's actor, as for commands
        args = with_actor(args, actor)
    memory = REMEMBER.execute(engine, args, surface).memory
    assert memory.source is MemorySource.MCP_AUTO
    assert memory.confidence == pytest.approx(0.6)
    assert memory.needs_review and not memory.user_verified
    assert memory.type is MemoryType.E2E_OBSERVATION
    assert memory.related_files == ["src/app.py"] and not memory.anchors
    assert memory.extra["mcp_tool"] == "time__get_current_time"
    assert memory.extra["argument_names"] == ["format", "timezone"]
    assert memory.extra["observed_by"] == "mcp_hub"
    (created,) = audit_log(engine, memory.id)
    assert created.event == "create" and created.actor == actor
    via = "mcp tool" if surface is Surface.MCP else "lsp executeCommand"
    assert created.cause == f"mcp hub: result of time__get_current_time via {via}"


def test_observed_by_never_raises_trust(engine: Engine) -> None:
    """A client sending the field with a person's source and a high confidence (the LSP
    surface offers both) still gets the tool's memory: mcp_auto, 0.6, in review."""
    raw: dict[str, object] = {
        "text": "the deploy script needs VPN access first",
        "observed_by": "mcp_hub",
        "source": "user_taught",
        "confidence": 0.95,
        "needs_review": False,
    }
    memory = REMEMBER.execute(engine, REMEMBER.parse(raw, Surface.LSP), Surface.LSP).memory
    assert memory.source is MemorySource.MCP_AUTO
    assert memory.confidence == pytest.approx(0.6)
    assert memory.needs_review and not memory.user_verified
    # over MCP an agent cannot even name a source or a confidence, with or without it
    for sneaky in ({"source": "user_taught"}, {"confidence": 0.95}):
        with pytest.raises(InvalidInput, match="unknown argument"):
            REMEMBER.parse({"text": "x", "observed_by": "mcp_hub", **sneaky}, Surface.MCP)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"observed_by": "user"}, "unknown observed_by value 'user'; valid values: mcp_hub"),
        ({"observed_by": "verified"}, "unknown observed_by value"),
        ({"observed_by": ["mcp_hub"]}, "observed_by: expected a string"),
        ({"tool_arguments": "timezone"}, "tool_arguments: expected a list"),
        ({"tool_arguments": ["a"] * 101}, "over the limit of 100"),
        ({"tool": "t" * 301}, "tool: 301 characters"),
        ({"related_files": ["../../etc/passwd"]}, "is outside the workspace"),
    ],
)
def test_hostile_hub_fields_get_one_line(
    engine: Engine, raw: dict[str, object], message: str
) -> None:
    full = {"text": "a tool result", **raw}
    with pytest.raises(USER_ERRORS) as refused:  # what every front end shows as one line
        REMEMBER.execute(engine, REMEMBER.parse(full, Surface.MCP), Surface.MCP)
    text = str(refused.value)
    assert "\n" not in text and message in text
    assert engine.store.count() == 0


def test_tool_fields_need_observed_by(engine: Engine) -> None:
    for raw in ({"tool": "time__now"}, {"tool_arguments": ["timezone"]}):
        args = REMEMBER.parse({"text": "a tool result", **raw}, Surface.MCP)
        with pytest.raises(InvalidInput, match="set observed_by"):
            REMEMBER.execute(engine, args, Surface.MCP)
    assert engine.store.count() == 0


@given(
    source=st.sampled_from(list(MemorySource)),
    confidence=st.none() | st.floats(min_value=0, max_value=1),
    needs_review=st.booleans(),
)
def test_the_rule_only_lowers(
    source: MemorySource, confidence: float | None, needs_review: bool
) -> None:
    args = RememberArgs(
        text="x",
        source=source,
        confidence=confidence,
        needs_review=needs_review,
        observed_by=ObservedBy.MCP_HUB,
        cause="lsp executeCommand",
    )
    out = observed(args)
    assert out.source is MemorySource.MCP_AUTO and out.needs_review
    assert out.confidence is None or out.confidence <= min(0.6, confidence or 1.0)
    assert out.cause.startswith("mcp hub: ")
