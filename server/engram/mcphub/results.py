"""Notable tool results become memory drafts (docs/mcp-hub.md "Tool results as memories").

What a tool *did* (a precondition it enforced, a timing quirk, an error it raised) is
knowledge no code analysis produces. An LLM could classify results; Engram uses
deterministic rules that work offline and only on the result text, and hands a draft to a
sink the engine provides. Drafts are always ``needs_review`` with a modest confidence: an
automatic classifier can be wrong, and a person confirms before it is trusted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

import attrs

from engram.mcphub.registry import ToolInfo

_PRECONDITION = re.compile(
    r"\b(must be|must have|requires?|required|needs? to be|before (you|calling|using)|"
    r"not (enabled|configured|running|installed|logged in|authenticated|authori[sz]ed|"
    r"initiali[sz]ed))\b",
    re.IGNORECASE,
)
_TIMING = re.compile(
    r"\b(timed? ?out|not ready|still loading|try again|retry|rate.?limit(ed)?|wait(ing)? for)\b",
    re.IGNORECASE,
)
_MAX_TEXT = 2000
_MAX_CONTENT = 400


@attrs.frozen
class ObservationDraft:
    """A memory the engine may store: :meth:`declared_args` are the arguments of the
    declared ``remember`` use case that store it."""

    content: str
    tool: str  # qualified name
    observation_type: str  # precondition | timing | mcp_gotcha
    file: str | None = None
    arguments: Mapping[str, object] = attrs.field(factory=dict)

    def declared_args(self) -> dict[str, object]:
        """The declared ``remember`` use case's arguments for this draft (``engram.api``),
        as both hub front ends send them: the MCP server's ``engram_call_tool`` and the
        language server's ``engram.mcp.call``, to the workspace engine or in-process.
        ``observed_by: mcp_hub`` makes it the tool's memory, not the agent's: source
        ``mcp_auto``, confidence 0.6, in review, an audit cause naming the hub
        (docs/mcp-hub.md "Tool results as memories", docs/trust.md)."""
        out: dict[str, object] = {
            "text": self.content,
            "type": "e2e_observation",
            "tags": ["mcp", self.tool, self.observation_type],
            "observed_by": "mcp_hub",
            "tool": self.tool,
            "tool_arguments": sorted(str(name) for name in self.arguments),
        }
        if self.file:
            out["related_files"] = [self.file]
        return out


#: Receives drafts; the front ends save them with the declared ``remember`` (:meth:`declared_args`).
ObservationSink = Callable[[ObservationDraft], object]


def result_text(result: Mapping[str, object]) -> str:
    """The text parts of a ``CallToolResult`` dict, joined."""
    parts: list[str] = []
    content = result.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping) and block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def _clip(text: str) -> str:
    one_line = " ".join(text.split())
    return one_line if len(one_line) <= _MAX_CONTENT else one_line[: _MAX_CONTENT - 1] + "…"


def classify_result(
    tool: ToolInfo,
    arguments: Mapping[str, object],
    result: Mapping[str, object],
    *,
    file: str | None = None,
) -> ObservationDraft | None:
    """A draft when the result says something worth remembering, else ``None``."""
    text = result_text(result)[:_MAX_TEXT]
    name = tool.qualified_name
    if result.get("isError"):
        if not text.strip():
            return None
        kind = (
            "timing"
            if _TIMING.search(text)
            else "precondition"
            if _PRECONDITION.search(text)
            else "mcp_gotcha"
        )
        return ObservationDraft(
            f"MCP tool {name} failed: {_clip(text)}", name, kind, file, dict(arguments)
        )
    match = _PRECONDITION.search(text)
    if match:
        return ObservationDraft(
            f"MCP tool {name} reported a precondition: {_clip(text)}",
            name,
            "precondition",
            file,
            dict(arguments),
        )
    if _TIMING.search(text):
        return ObservationDraft(
            f"MCP tool {name} reported a timing issue: {_clip(text)}",
            name,
            "timing",
            file,
            dict(arguments),
        )
    return None
