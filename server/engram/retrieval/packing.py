"""Token-budgeted context packs: tiers, compression levels, Markdown with citations (004).

Tiers, in the order an agent reads them: **critical** (gotchas, dead ends, error patterns and
decisions anchored on the file or symbol), **relevant** (what retrieval predicts), background
(conventions: preferences, patterns, recipes; compressed) and **index** (one-line pointers
to what did not fit: "ask about: …"). The budget is split 25 / 37.5 / 25 / 12.5 % (004), by
water-filling: a tier that needs less than its share hands the rest to the others. Each
memory goes in at the best level that fits its tier's allowance (full text, then its first
sentence, then its citation only); what is left over is tried again against the whole
budget, then offered as an index pointer. The estimate of the final text never exceeds
the budget (checked, not assumed).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from engram.model import Memory, MemoryType
from engram.retrieval.types import ContextItem, ContextPack, Level, SearchHit, Tier
from engram.tokens import estimate_tokens

#: Conventions and how-tos: useful everywhere, so shown compressed (004 tier 3).
BACKGROUND_TYPES: frozenset[MemoryType] = frozenset(
    {MemoryType.PREFERENCE, MemoryType.PATTERN, MemoryType.WORKFLOW_RECIPE}
)
#: Budget shares per tier (004 context assembly: 25 / 37.5 / 25 / 12.5 %).
TIER_SHARES: dict[Tier, float] = {
    Tier.CRITICAL: 0.25,
    Tier.RELEVANT: 0.375,
    Tier.BACKGROUND: 0.25,
    Tier.INDEX: 0.125,
}
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
    return f" (`{text}`)"


def render_item(memory: Memory, level: Level, stale: bool = False, mark: str = "") -> str:
    """One Markdown bullet for ``memory`` at ``level`` (always ends with its citation).

    ``mark``: the conflict mark (``engram.marks``), carried at every level: a memory in
    conflict is never handed out without it (docs/trust.md "Conflicts").
    """
    label = f"**{memory.type.value.replace('_', ' ')}**"
    warn = " [STALE: may be outdated]" if stale else ""
    if mark:
        warn += f" {mark}"
    if level is Level.FULL:
        body = memory.content.strip().replace("\n", "\n  ")
        return f"- {label}{_where(memory)}{warn}: {body} {memory.citation()}"
    if level is Level.SUMMARY:
        summary = first_sentence(memory.content)
        return f"- {label}{_where(memory)}{warn}: {summary} {memory.citation()}"
    return f"- {label}{warn} {memory.citation()}"


def _pointer(hit: SearchHit) -> str:
    """An index-tier pointer; a memory in conflict names the other side even here."""
    from engram.marks import conflict_marker

    marks = "".join(f" {conflict_marker(cid)}" for cid, _ in hit.conflicts)
    return f"{hit.memory.citation_text} ({hit.memory.id}){marks}"


def _levels(memory: Memory, tier: Tier) -> list[Level]:
    summary_is_full = first_sentence(memory.content) == " ".join(memory.content.split())
    if tier is Tier.BACKGROUND:
        return [Level.SUMMARY, Level.CITATION]
    if summary_is_full:
        return [Level.FULL, Level.CITATION]
    return [Level.FULL, Level.SUMMARY, Level.CITATION]


def _water_fill(needs: dict[Tier, int], total: int) -> dict[Tier, int]:
    """Split ``total`` by :data:`TIER_SHARES` among tiers with needs; surplus flows on."""
    allocation = {tier: 0 for tier in needs}
    open_tiers = {t for t, need in needs.items() if need > 0}
    remaining = total
    while open_tiers and remaining > 0:
        share_sum = sum(TIER_SHARES[t] for t in open_tiers)
        satisfied: set[Tier] = set()
        for tier in open_tiers:
            grant = int(remaining * TIER_SHARES[tier] / share_sum)
            if allocation[tier] + grant >= needs[tier]:
                satisfied.add(tier)
        if not satisfied:
            for tier in open_tiers:
                allocation[tier] += int(remaining * TIER_SHARES[tier] / share_sum)
            break
        for tier in satisfied:
            remaining -= needs[tier] - allocation[tier]
            allocation[tier] = needs[tier]
        open_tiers -= satisfied
    return allocation


class _Packer:
    def __init__(self, budget: int, title: str) -> None:
        self.budget = budget
        self.lines_by_tier: dict[Tier, list[str]] = {t: [] for t in TIER_HEADINGS}
        self.items: dict[Tier, list[ContextItem]] = {t: [] for t in TIER_HEADINGS}
        title_line = f"# {title}"
        title_cost = estimate_tokens(title_line)
        self.title = title_line if title_cost * 8 <= budget else None
        self.used = title_cost if self.title else 0  # lines + newlines between them
        self.tier_used: dict[Tier, int] = {t: 0 for t in TIER_HEADINGS}

    def _block_cost(self, tier: Tier, line: str) -> int:
        """Tokens of a new block ``heading, blank line, line`` plus the blank line before it.

        :func:`estimate_tokens` is additive across newlines (no piece spans one, and a run of
        n newlines costs n), so the estimate of the rendered text is the sum of these costs.
        """
        separator = 2 if self.used > 0 else 0
        return separator + estimate_tokens(TIER_HEADINGS[tier]) + 2 + estimate_tokens(line)

    def _added_cost(self, tier: Tier, line: str) -> int:
        """Tokens that adding ``line`` (and, first time, the tier heading) costs."""
        if not self.lines_by_tier[tier]:
            return self._block_cost(tier, line)
        return 1 + estimate_tokens(line)

    def try_add(
        self,
        tier: Tier,
        hit: SearchHit,
        levels: Sequence[Level],
        tier_limit: int | None,
        total_limit: int,
    ) -> bool:
        for level in levels:
            line = render_item(hit.memory, level, hit.stale, hit.conflict_mark)
            cost = self._added_cost(tier, line)
            if self.used + cost > min(total_limit, self.budget):
                continue
            if tier_limit is not None and self.tier_used[tier] + cost > tier_limit:
                continue
            self.lines_by_tier[tier].append(line)
            self.items[tier].append(
                ContextItem(
                    memory=hit.memory,
                    tier=tier,
                    level=level,
                    text=line,
                    tokens=estimate_tokens(line),
                    score=hit.score,
                    reasons=list(hit.reasons),
                    conflicts=list(hit.conflicts),
                )
            )
            self.used += cost
            self.tier_used[tier] += cost
            return True
        return False

    def add_pointers(self, hits: Sequence[SearchHit]) -> None:
        """The index tier: one line "Ask about: label (id), …" within what is left."""
        shown: list[str] = []
        chosen: list[SearchHit] = []
        for hit in hits:
            pointer = _pointer(hit)
            line = "Ask about: " + "; ".join([*shown, pointer])
            if self.used - self.tier_used[Tier.INDEX] + self._pointer_cost(line) > self.budget:
                break
            shown.append(pointer)
            chosen.append(hit)
        if not shown:
            return
        line = "Ask about: " + "; ".join(shown)
        cost = self._pointer_cost(line)
        self.lines_by_tier[Tier.INDEX] = [line]
        self.items[Tier.INDEX] = [
            ContextItem(
                memory=hit.memory,
                tier=Tier.INDEX,
                level=Level.POINTER,
                text=_pointer(hit),
                tokens=estimate_tokens(f"{_pointer(hit)}; "),
                score=hit.score,
                reasons=list(hit.reasons),
                conflicts=list(hit.conflicts),
            )
            for hit in chosen
        ]
        self.used += cost
        self.tier_used[Tier.INDEX] = cost

    def _pointer_cost(self, line: str) -> int:
        return self._block_cost(Tier.INDEX, line)

    def render(self) -> str:
        blocks: list[str] = []
        if self.title:
            blocks.append(self.title)
        for tier in TIER_HEADINGS:
            lines = self.lines_by_tier[tier]
            if lines:
                blocks.append(TIER_HEADINGS[tier] + "\n\n" + "\n".join(lines))
        return "\n\n".join(blocks)

    def all_items(self) -> list[ContextItem]:
        return [item for tier in TIER_HEADINGS for item in self.items[tier]]

    def drop_last(self) -> bool:
        """Remove the last item of the lowest non-empty tier (the safety net)."""
        for tier in reversed(list(TIER_HEADINGS)):
            if self.lines_by_tier[tier]:
                self.lines_by_tier[tier].pop()
                self.items[tier].pop()
                return True
        if self.title:
            self.title = None
            return True
        return False


def pack_context(
    tiered: Sequence[tuple[Tier, SearchHit]], budget: int, *, title: str
) -> ContextPack:
    """Pack ranked, tiered hits into ``budget`` tokens (see the module docstring)."""
    by_tier: dict[Tier, list[SearchHit]] = {t: [] for t in CONTENT_TIERS}
    for tier, hit in tiered:
        by_tier[tier if tier in by_tier else Tier.RELEVANT].append(hit)
    for hits in by_tier.values():
        hits.sort(key=lambda h: -h.score)
    if budget <= 0 or not tiered:
        note = "no memories matched" if not tiered else "budget is zero"
        return ContextPack(items=[], tokens=0, budget_tokens=max(budget, 0), text="", notes=[note])

    packer = _Packer(budget, title)
    needs: dict[Tier, int] = {}
    for tier in CONTENT_TIERS:
        hits = by_tier[tier]
        if hits:
            lines = [
                render_item(h.memory, _levels(h.memory, tier)[0], h.stale, h.conflict_mark)
                for h in hits
            ]
            heading = estimate_tokens(TIER_HEADINGS[tier]) + 4
            needs[tier] = heading + sum(estimate_tokens(x) + 1 for x in lines) + 2
    index_reserve = int(budget * TIER_SHARES[Tier.INDEX]) if len(tiered) > 1 else 0
    allocation = _water_fill(needs, max(0, budget - packer.used - index_reserve))

    leftovers: list[tuple[Tier, SearchHit]] = []
    for tier in CONTENT_TIERS:
        for hit in by_tier[tier]:
            levels = _levels(hit.memory, tier)
            if not packer.try_add(tier, hit, levels, allocation.get(tier, 0), budget):
                leftovers.append((tier, hit))
    still: list[SearchHit] = []
    content_limit = budget - index_reserve
    for tier, hit in leftovers:  # second chance against the whole budget, minus the index
        levels = _levels(hit.memory, tier)
        if not packer.try_add(tier, hit, levels, None, content_limit):
            still.append(hit)
    packer.add_pointers(still)

    text = packer.render()
    tokens = estimate_tokens(text)
    while tokens > budget and packer.drop_last():  # never over budget, whatever happened above
        text = packer.render()
        tokens = estimate_tokens(text)
    notes: list[str] = []
    if still:
        notes.append(f"{len(still)} memories did not fit the budget of {budget} tokens")
    return ContextPack(
        items=packer.all_items(), tokens=tokens, budget_tokens=budget, text=text, notes=notes
    )
