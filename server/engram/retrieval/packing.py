"""Token-budgeted context packs: tiers in priority order, compression levels, citations.

Tiers, in the order an agent reads them and the order they are filled (issue 12, docs/
retrieval.md "Context packs"): **critical** (gotchas, dead ends, error patterns and decisions
anchored on the file or symbol, and pinned memories), **relevant** (what retrieval
predicts), **background** (conventions: preferences, patterns, recipes; compressed) and
**index** (one line of pointers to what did not fit: "Ask about: …").

The rules the packer keeps:

* A tier is filled before the next one gets anything; inside a tier, best score first.
* Each memory goes in at the best level that still fits what is left of the budget (full
  text, then its first sentence, then its citation): a citation alone is shown only when
  nothing longer fits.
* Once an item of a tier is cut (shown shorter than its tier's best level, or left out),
  no item of a lower tier is shown with more text than it got.
* The budget is counted on the text the surface delivers (:class:`Surface`'s renderer,
  :func:`estimate_tokens`). A candidate pack is counted without rendering it
  (:func:`pack_tokens`): it is lines joined by line breaks, no piece the estimate counts
  crosses a line break, so its count is the sum of its lines' counts and one per line
  break. Rendering and counting the whole pack at every candidate made packing quadratic:
  ``engram_context`` on a 1,000-memory store took 256-282 ms (p50, load 15-18) before,
  36-66 ms after (scripts/bench/agent_calls.py). The text delivered is still counted
  whole; should that ever exceed the budget, the pack is chosen again by rendering every
  candidate, as before.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import attrs

from engram.model import Memory, MemoryType, team_origin
from engram.quoting import one_line, quote_shared, quoted
from engram.retrieval.types import ContextItem, ContextPack, Level, SearchHit, Surface, Tier
from engram.tokens import estimate_tokens

#: Conventions and how-tos: useful everywhere, so shown compressed (004 tier 3).
BACKGROUND_TYPES: frozenset[MemoryType] = frozenset(
    {MemoryType.PREFERENCE, MemoryType.PATTERN, MemoryType.WORKFLOW_RECIPE}
)
CONTENT_TIERS: tuple[Tier, ...] = (Tier.CRITICAL, Tier.RELEVANT, Tier.BACKGROUND)
TIER_HEADINGS: dict[Tier, str] = {
    Tier.CRITICAL: "## Critical",
    Tier.RELEVANT: "## Relevant",
    Tier.BACKGROUND: "## Background",
    Tier.INDEX: "## Index",
}
#: Longest first sentence kept at the summary level.
SUMMARY_CHARS = 160

_SENTENCE_END = re.compile(r"(?<=[.!?])\s|\n")


def first_sentence(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence (or line) of ``text``, cut at a word boundary within ``limit``."""
    flat = text.strip()
    match = _SENTENCE_END.search(flat)
    sentence = flat[: match.start()].strip() if match else flat
    sentence = " ".join(sentence.split())
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1].rsplit(" ", 1)[0] or sentence[: limit - 1]
    return cut + "…"


def _where(memory: Memory) -> str:
    if not memory.anchors:
        return ""
    anchor = memory.anchors[0]
    text = anchor.file
    if anchor.start_line is not None:
        text += f":{anchor.start_line + 1}"
    if anchor.symbol:
        text += f" {anchor.symbol}"
    return f" (`{one_line(text)}`)"


def render_item(memory: Memory, level: Level, stale: bool = False, mark: str = "") -> str:
    """One Markdown bullet for ``memory`` at ``level`` (always ends with its citation).

    ``mark``: the conflict mark (``engram.marks``), carried at every level: a memory in
    conflict is never handed out without it (docs/trust.md "Conflicts").

    The text is one line, as in a diagnostic and a hook's context: a memory an agent wrote
    with line breaks put a ``## Critical`` heading and a second, unmarked memory into the
    pack, indented under its own bullet (stop 31). A memory in review says so
    (``[unverified]``, the hooks' mark) at every level.
    """
    label = f"**{memory.type.value.replace('_', ' ')}**"
    warn = " [STALE: may be outdated]" if stale else ""
    origin = team_origin(memory)
    if memory.needs_review and origin is None:  # a teammate's quote says "unreviewed"
        warn += " [unverified]"
    if mark:
        warn += f" {mark}"
    chip = one_line(memory.citation())
    if origin is not None:  # a teammate's words: quoted data with its origin (security.md)
        text = memory.content if level is Level.FULL else first_sentence(memory.content)
        file = origin.get("file")
        fenced = quote_shared(
            text,
            origin.get("by") or "the team",
            file if isinstance(file, str) else None,
            reviewed=memory.user_verified,
        )
        return f"- {label}{_where(memory)}{warn}: {fenced} {chip}"
    if level is Level.FULL:
        return f"- {label}{_where(memory)}{warn}: {one_line(memory.content)} {chip}"
    if level is Level.SUMMARY:
        summary = one_line(first_sentence(memory.content))
        return f"- {label}{_where(memory)}{warn}: {summary} {chip}"
    return f"- {label}{warn} {chip}"


def _levels(memory: Memory, tier: Tier) -> list[Level]:
    summary_is_full = first_sentence(memory.content) == " ".join(memory.content.split())
    if tier is Tier.BACKGROUND:
        return [Level.SUMMARY, Level.CITATION]
    if summary_is_full:
        return [Level.FULL, Level.CITATION]
    return [Level.FULL, Level.SUMMARY, Level.CITATION]


@attrs.frozen
class _Chosen:
    """A memory placed in the pack at one level, with its rendered line."""

    tier: Tier
    hit: SearchHit
    level: Level
    line: str
    tokens: int


def _pointer(hit: SearchHit) -> str:
    """An index-tier pointer; a memory in conflict names the other side even here.

    Its label is the memory's first words: a teammate's are quoted (``shared: "…"``, as in
    its chip) and one in review is marked, as in a bullet; until stop 31 a teammate's 40
    characters stood bare here, bidi characters and an unmatched ``"`` included."""
    from engram.marks import conflict_marker

    memory = hit.memory
    marks = "".join(f" {conflict_marker(cid)}" for cid, _ in hit.conflicts)
    if team_origin(memory) is not None:
        return f"shared: {quoted(memory.citation_text)} ({memory.id}){marks}"
    review = " [unverified]" if memory.needs_review else ""
    return f"{one_line(memory.citation_text)} ({memory.id}){review}{marks}"


def render_pack(
    surface: Surface,
    title: str | None,
    chosen: Sequence[_Chosen],
    pointers: Sequence[SearchHit],
) -> str:
    """The exact text ``surface`` delivers for this selection (the budget is counted on it).

    ``TEXT`` (CLI stdout, LSP): the Markdown and its final newline. ``MCP`` (the
    ``engram_context`` tool result): the same Markdown, then one line with the ids shown,
    so an agent can confirm or flag them without parsing citations.
    """
    if not chosen and not pointers:
        return ""
    blocks: list[str] = [title] if title else []
    for tier in CONTENT_TIERS:
        lines = [c.line for c in chosen if c.tier is tier]
        if lines:
            blocks.append(TIER_HEADINGS[tier] + "\n\n" + "\n".join(lines))
    if pointers:
        line = "Ask about: " + "; ".join(_pointer(h) for h in pointers)
        blocks.append(TIER_HEADINGS[Tier.INDEX] + "\n\n" + line)
    body = "\n\n".join(blocks)
    if surface is Surface.MCP:
        ids = [c.hit.memory.id for c in chosen] + [h.memory.id for h in pointers]
        return body + "\n\nids: " + " ".join(ids) + "\n"
    return body + "\n"


#: ``estimate_tokens`` of each heading, and of the lines a pack always has
_HEADING_TOKENS: dict[Tier, int] = {t: estimate_tokens(h) for t, h in TIER_HEADINGS.items()}


def pack_tokens(
    surface: Surface,
    title: str | None,
    chosen: Sequence[_Chosen],
    pointers: Sequence[SearchHit],
    ids_tokens: dict[str, int] | None = None,
) -> int:
    """``estimate_tokens(render_pack(surface, title, chosen, pointers))``, from the counts of
    its lines (module docstring): each line is one line (no line break of its own), and a
    run of line breaks costs one per break, so the counts add up. ``ids_tokens``: a cache of
    each id's count on the MCP ``ids:`` line (an id is letters, digits and ``-``)."""
    if not chosen and not pointers:
        return 0
    total = 0
    blocks = 0
    if title:
        total += estimate_tokens(title)
        blocks += 1
    for tier in CONTENT_TIERS:
        lines = [c.tokens for c in chosen if c.tier is tier]
        if lines:  # heading, a blank line, the lines one per line
            total += _HEADING_TOKENS[tier] + 2 + sum(lines) + len(lines) - 1
            blocks += 1
    if pointers:
        line = "Ask about: " + "; ".join(_pointer(h) for h in pointers)
        total += _HEADING_TOKENS[Tier.INDEX] + 2 + estimate_tokens(line)
        blocks += 1
    total += 2 * (blocks - 1) + 1  # blank lines between blocks, the final line break
    if surface is Surface.MCP:
        cache = ids_tokens if ids_tokens is not None else {}
        total += 2 + estimate_tokens("ids:")
        for memory_id in [c.hit.memory.id for c in chosen] + [h.memory.id for h in pointers]:
            cost = cache.get(memory_id)
            if cost is None:
                cost = cache[memory_id] = estimate_tokens(" " + memory_id)
            total += cost
    return total


def _select(
    by_tier: dict[Tier, list[SearchHit]],
    budget: int,
    title: str | None,
    surface: Surface,
    *,
    render: bool = False,
) -> tuple[list[_Chosen], list[SearchHit], list[SearchHit]]:
    """(placed items, index pointers, left out) under the module docstring's rules;
    ``render``: count every candidate on its rendered text (the slow, sure way)."""
    ids_tokens: dict[str, int] = {}

    def fits(chosen: Sequence[_Chosen], pointers: Sequence[SearchHit]) -> bool:
        if render:
            return estimate_tokens(render_pack(surface, title, chosen, pointers)) <= budget
        return pack_tokens(surface, title, chosen, pointers, ids_tokens) <= budget

    chosen: list[_Chosen] = []
    left: list[SearchHit] = []
    cap: int | None = None  # the least text a cut item of a higher tier got
    for tier in CONTENT_TIERS:
        tier_cut: int | None = None
        for hit in by_tier[tier]:
            levels = _levels(hit.memory, tier)
            placed: _Chosen | None = None
            for level in levels:
                line = render_item(hit.memory, level, hit.stale, hit.conflict_mark)
                tokens = estimate_tokens(line)
                if cap is not None and tokens > cap:
                    continue
                candidate = _Chosen(tier, hit, level, line, tokens)
                if fits([*chosen, candidate], []):
                    placed = candidate
                    break
            if placed is not None:
                chosen.append(placed)
            else:
                left.append(hit)
            if placed is None or placed.level is not levels[0]:
                got = placed.tokens if placed is not None else 0
                tier_cut = got if tier_cut is None else min(tier_cut, got)
        if tier_cut is not None:
            cap = tier_cut if cap is None else min(cap, tier_cut)
    pointers: list[SearchHit] = []
    for hit in left:  # in priority order: the most important of what is missing first
        if fits(chosen, [*pointers, hit]):
            pointers.append(hit)
    return chosen, pointers, [h for h in left if h not in pointers]


def pack_context(
    tiered: Sequence[tuple[Tier, SearchHit]],
    budget: int,
    *,
    title: str,
    surface: Surface = Surface.TEXT,
) -> ContextPack:
    """Pack ranked, tiered hits into ``budget`` tokens of ``surface``'s text (module docstring)."""
    by_tier: dict[Tier, list[SearchHit]] = {t: [] for t in CONTENT_TIERS}
    for tier, hit in tiered:
        by_tier[tier if tier in by_tier else Tier.RELEVANT].append(hit)
    for hits in by_tier.values():
        hits.sort(key=lambda h: -h.score)
    if budget <= 0 or not tiered:
        note = "no memories matched" if not tiered else "budget is zero"
        return ContextPack(items=[], tokens=0, budget_tokens=max(budget, 0), text="", notes=[note])

    title_line = f"# {one_line(title)}"  # a file name may hold a line break
    head = title_line if estimate_tokens(title_line) * 8 <= budget else None
    chosen, pointers, dropped = _select(by_tier, budget, head, surface)
    if head is not None and not chosen:  # the title must never cost the only item
        head = None
        chosen, pointers, dropped = _select(by_tier, budget, head, surface)
    text = render_pack(surface, head, chosen, pointers)
    tokens = estimate_tokens(text)
    if tokens > budget:  # the lines' counts did not add up (module docstring): the sure way
        chosen, pointers, dropped = _select(by_tier, budget, head, surface, render=True)
        text = render_pack(surface, head, chosen, pointers)
        tokens = estimate_tokens(text)
    if tokens > budget:  # _select only accepts what fits; this would be a bug in it
        raise AssertionError(f"context pack of {tokens} tokens exceeds its budget {budget}")
    items = [
        ContextItem(
            memory=c.hit.memory,
            tier=c.tier,
            level=c.level,
            text=c.line,
            tokens=c.tokens,
            score=c.hit.score,
            reasons=list(c.hit.reasons),
            conflicts=list(c.hit.conflicts),
        )
        for c in chosen
    ] + [
        ContextItem(
            memory=h.memory,
            tier=Tier.INDEX,
            level=Level.POINTER,
            text=_pointer(h),
            tokens=estimate_tokens(_pointer(h) + "; "),
            score=h.score,
            reasons=list(h.reasons),
            conflicts=list(h.conflicts),
        )
        for h in pointers
    ]
    notes: list[str] = []
    missing = len(pointers) + len(dropped)
    if missing:
        notes.append(f"{missing} memories did not fit the budget of {budget} tokens")
    return ContextPack(items=items, tokens=tokens, budget_tokens=budget, text=text, notes=notes)
