"""Context packing: never over budget, tiers in order, compression before dropping."""

from __future__ import annotations

import random

from engram.model import CodeAnchor, Memory, MemoryType
from engram.retrieval import ContextPack, SearchHit, Tier, estimate_tokens, pack_context
from engram.retrieval.packing import first_sentence, render_item
from engram.retrieval.types import Level

WORDS = [
    "cache",
    "eviction",
    "lock",
    "thread",
    "tenant",
    "expire",
    "minutes",
    "jwt",
    "token",
    "refresh",
    "retry",
    "backoff",
    "parseConfig",
    "load_config",
    "0x3f2a",
    "deadline",
    "ñandú",
    "日本",
    "schema",
    "migration",
    "(cents)",
    "[euros]",
]
TYPES = [MemoryType.GOTCHA, MemoryType.DECISION, MemoryType.PREFERENCE, MemoryType.MODULE_INSIGHT,
         MemoryType.PATTERN, MemoryType.DEAD_END, MemoryType.REQUIREMENT]  # fmt: skip


def random_hits(rng: random.Random, n: int) -> list[tuple[Tier, SearchHit]]:
    out: list[tuple[Tier, SearchHit]] = []
    for i in range(n):
        sentences = [
            " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 25))) + "."
            for _ in range(rng.randint(1, 4))
        ]
        content = (" " if rng.random() < 0.7 else "\n").join(sentences)
        memory = Memory(
            content=content,
            type=rng.choice(TYPES),
            anchors=[CodeAnchor(file=f"src/m{i}.py", start_line=rng.randint(0, 99))]
            if rng.random() < 0.5
            else [],
        )
        tier = rng.choice([Tier.CRITICAL, Tier.RELEVANT, Tier.BACKGROUND])
        out.append((tier, SearchHit(memory, rng.random(), rng.random() < 0.1, [])))
    return out


def check(pack: ContextPack, budget: int) -> None:
    assert pack.tokens == estimate_tokens(pack.text)
    assert pack.tokens <= budget
    assert pack.budget_tokens == budget
    for item in pack.items:
        if item.tier is not Tier.INDEX:
            assert item.text in pack.text
            assert item.memory.citation() in item.text


def test_never_over_budget_for_many_random_budgets() -> None:
    rng = random.Random(20250601)
    for _ in range(400):
        hits = random_hits(rng, rng.randint(0, 25))
        budget = rng.choice([0, 1, 2, 5, 10, 20, 40, 80, 150, 300, 700, 2000, rng.randint(1, 5000)])
        check(pack_context(hits, budget, title="Engram memory for src/app.py"), budget)


def test_more_budget_never_fewer_items() -> None:
    rng = random.Random(5)
    hits = random_hits(rng, 20)
    counts = [len(pack_context(hits, b, title="t").items) for b in (60, 200, 600, 2000, 20000)]
    assert counts == sorted(counts) and counts[-1] == 20


def test_tier_order_and_sections() -> None:
    pref = Memory("use attrs. Always.", type=MemoryType.PREFERENCE)
    gotcha = Memory("never save in handlers", type=MemoryType.GOTCHA)
    hits = [
        (Tier.BACKGROUND, SearchHit(pref, 0.9, False, [])),
        (Tier.RELEVANT, SearchHit(Memory("the module wraps the ORM"), 0.8, False, [])),
        (Tier.CRITICAL, SearchHit(gotcha, 0.1, False, [])),
    ]
    pack = pack_context(hits, 2000, title="Engram memory for a.py")
    assert [item.tier for item in pack.items] == [Tier.CRITICAL, Tier.RELEVANT, Tier.BACKGROUND]
    text = pack.text
    assert text.startswith("# Engram memory for a.py")
    assert text.index("## Critical") < text.index("## Relevant") < text.index("## Background")
    background = pack.items[2]
    assert background.level is Level.SUMMARY and "use attrs." in background.text
    assert "Always" not in background.text.split("[Memory")[0]  # background is compressed


def test_tight_budget_compresses_then_points() -> None:
    long_text = "First sentence is the gist. " + "Then many details follow here. " * 30
    hits = [
        (Tier.RELEVANT, SearchHit(Memory(long_text, id=f"m-{i:010d}"), 1.0 - i / 10, False, []))
        for i in range(8)
    ]
    roomy = pack_context(hits, 5000, title="t")
    assert all(item.level is Level.FULL for item in roomy.items)
    tight = pack_context(hits, 160, title="t")
    levels = {item.level for item in tight.items}
    assert Level.FULL not in levels and levels & {Level.SUMMARY, Level.CITATION}
    assert tight.tokens <= 160
    pointers = [item for item in tight.items if item.tier is Tier.INDEX]
    if pointers:
        assert "Ask about: " in tight.text and pointers[0].memory.id in tight.text


def test_stale_items_carry_a_warning() -> None:
    hit = SearchHit(Memory("old fact"), 1.0, True, [])
    pack = pack_context([(Tier.RELEVANT, hit)], 500, title="t")
    assert "[STALE: may be outdated]" in pack.text


def test_first_sentence_and_render_levels() -> None:
    assert first_sentence("One. Two.") == "One."
    assert first_sentence("line one\nline two") == "line one"
    assert first_sentence("word " * 100).endswith("…")
    m = Memory("Alpha beta. Gamma.", type=MemoryType.GOTCHA, anchors=[CodeAnchor("a.py", "f", 9)])
    assert (
        render_item(m, Level.FULL)
        == f"- **gotcha** (`a.py:10 f`): Alpha beta. Gamma. {m.citation()}"
    )
    assert (
        render_item(m, Level.SUMMARY) == f"- **gotcha** (`a.py:10 f`): Alpha beta. {m.citation()}"
    )
    assert render_item(m, Level.CITATION) == f"- **gotcha** {m.citation()}"


def test_empty_and_zero_budget() -> None:
    assert pack_context([], 100, title="t").text == ""
    hit = (Tier.RELEVANT, SearchHit(Memory("x"), 1.0, False, []))
    zero = pack_context([hit], 0, title="t")
    assert zero.tokens == 0 and zero.items == []


# ---------------------------------------------------------------- priority (issue 12 point 4)

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from engram.retrieval import Surface  # noqa: E402

TIER_RANK = {Tier.CRITICAL: 0, Tier.RELEVANT: 1, Tier.BACKGROUND: 2}
BEST_LEVEL = {Tier.CRITICAL: Level.FULL, Tier.RELEVANT: Level.FULL, Tier.BACKGROUND: Level.SUMMARY}


@st.composite
def stores(draw: st.DrawFn) -> list[tuple[Tier, SearchHit]]:
    rng = random.Random(draw(st.integers(0, 2**32 - 1)))
    return random_hits(rng, draw(st.integers(0, 18)))


@settings(max_examples=300, deadline=None)
@given(
    hits=stores(),
    budget=st.integers(1, 3000),
    surface=st.sampled_from(list(Surface)),
)
def test_priority_and_budget_hold_for_random_stores(
    hits: list[tuple[Tier, SearchHit]], budget: int, surface: Surface
) -> None:
    pack = pack_context(hits, budget, title="Engram memory for src/app.py", surface=surface)
    assert estimate_tokens(pack.text) == pack.tokens <= budget
    shown = {i.memory.id: i for i in pack.items if i.tier is not Tier.INDEX}
    for tier, hit in hits:
        item = shown.get(hit.memory.id)
        if item is not None and item.level is BEST_LEVEL[tier]:
            continue  # not cut
        got = item.tokens if item is not None else 0
        for lower in shown.values():
            if TIER_RANK[lower.tier] > TIER_RANK[tier]:
                assert lower.tokens <= got, (hit.memory.id, lower.memory.id)
    if surface is Surface.MCP and pack.items:
        assert pack.text.rstrip("\n").splitlines()[-1] == "ids: " + " ".join(
            i.memory.id for i in pack.items
        )


def test_a_citation_only_when_the_full_text_cannot_fit() -> None:
    """The top Critical item gets its full text as soon as the budget can hold it."""
    long = Memory("Alpha. " + "word " * 60, type=MemoryType.GOTCHA)
    other = Memory("short relevant note about another file")
    hits = [
        (Tier.RELEVANT, SearchHit(other, 5.0, False, [])),
        (Tier.CRITICAL, SearchHit(long, 0.1, False, [])),
    ]
    full_line = render_item(long, Level.FULL)
    need = estimate_tokens("# t\n\n## Critical\n\n" + full_line + "\n")
    pack = pack_context(hits, need, title="t")
    levels = {i.memory.id: i.level for i in pack.items}
    assert levels[long.id] is Level.FULL
    assert other.id not in levels or pack.items[-1].tier is Tier.INDEX


def _odd(hits: list[tuple[Tier, SearchHit]], rng: random.Random) -> list[tuple[Tier, SearchHit]]:
    """Some hits a teammate's (quoted, a name with a quote and a bidi character), some in
    review, some in conflict with another hit: every kind of line a pack holds."""
    import attrs

    out = []
    for tier, hit in hits:
        memory = hit.memory
        if rng.random() < 0.3:
            team = {"file": f".engram-team/{memory.id}.json", "by": 'A"na \u202e  x'}
            memory = attrs.evolve(memory, extra={"team": team})
        elif rng.random() < 0.3:
            memory = attrs.evolve(memory, needs_review=True)
        out.append((tier, SearchHit(memory, hit.score, hit.stale, [])))
    if len(out) > 1 and rng.random() < 0.5:
        (_, a), (_, b) = out[0], out[1]
        a.conflicts = [(b.memory.id, b.memory.content)]
        b.conflicts = [(a.memory.id, a.memory.content)]
    return out


@settings(max_examples=200, deadline=None)
@given(
    hits=stores(),
    seed=st.integers(0, 2**32 - 1),
    budget=st.integers(1, 3000),
    surface=st.sampled_from(list(Surface)),
)
def test_a_pack_is_counted_from_its_lines_as_its_text_counts(
    hits: list[tuple[Tier, SearchHit]], seed: int, budget: int, surface: Surface
) -> None:
    """Packing rendered and counted the whole pack at every candidate: quadratic, 256-282 ms
    of engram_context on a 1,000-memory store (36-66 ms after). It adds its lines' counts
    now; the choice is the one the rendering way makes, and the count is the text's."""
    from engram.retrieval.packing import _select, pack_tokens, render_pack

    hits = _odd(hits, random.Random(seed))
    by_tier: dict[Tier, list[SearchHit]] = {
        t: [] for t in (Tier.CRITICAL, Tier.RELEVANT, Tier.BACKGROUND)
    }
    for tier, hit in hits:
        by_tier[tier].append(hit)
    for listed in by_tier.values():
        listed.sort(key=lambda h: -h.score)
    title = "# Engram memory for src/app.py"
    fast = _select(by_tier, budget, title, surface)
    sure = _select(by_tier, budget, title, surface, render=True)
    assert [(c.hit.memory.id, c.level) for c in fast[0]] == [
        (c.hit.memory.id, c.level) for c in sure[0]
    ]
    assert [h.memory.id for h in fast[1]] == [h.memory.id for h in sure[1]]
    chosen, pointers, _ = sure
    for n in range(len(chosen) + 1):
        for shown in (pointers, pointers[:1], []):
            text = render_pack(surface, title, chosen[:n], shown)
            assert pack_tokens(surface, title, chosen[:n], shown) == estimate_tokens(text)
