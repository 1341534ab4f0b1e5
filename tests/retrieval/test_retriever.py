"""The whole search pipeline on a fake store (fast) and once on the real LanceDB store."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engram.config import RetrievalConfig
from engram.model import CodeAnchor, Memory, MemorySource, MemoryType, UniversalPhase
from engram.retrieval import ContextRequest, Retriever, SearchRequest
from engram.retrieval.rerank import RerankModel
from engram.workspace import Workspace

from .fakes import FakeGraph, FakeStore, HashEmbedder

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def mem(content: str, **kw: Any) -> Memory:
    base: dict[str, Any] = {
        "content": content,
        "created_at": NOW - timedelta(days=1),
        "updated_at": NOW - timedelta(days=1),
        "last_accessed_at": NOW - timedelta(days=1),
        "valid_from": NOW - timedelta(days=1),
    }
    if "file" in kw:
        base["anchors"] = [CodeAnchor(file=kw.pop("file"), symbol=kw.pop("symbol", None))]
    base.update(kw)
    return Memory(**base)


def retriever(
    memories: list[Memory],
    *,
    embedder: bool = True,
    graph: FakeGraph | None = None,
    existing: set[str] | None = None,
    rerank: RerankModel | str | None = "default",
) -> tuple[Retriever, FakeStore]:
    emb = HashEmbedder() if embedder else None
    store = FakeStore(emb)
    store.add(memories)
    files = existing
    r = Retriever(
        store,  # type: ignore[arg-type]
        emb,
        RetrievalConfig(),
        graph=graph,
        clock=lambda: NOW,
        file_exists=(lambda f: f in files) if files is not None else None,
        rerank=rerank,
    )
    return r, store


def ids(hits: list[Any]) -> list[str]:
    return [h.memory.id for h in hits]


def test_finds_by_keyword_and_dense_and_says_why() -> None:
    target = mem("charge() takes euros but the payment API wants integer cents", id="m-pay")
    noise = [mem(f"unrelated note {i} about logging levels", id=f"m-n{i}") for i in range(20)]
    r, _ = retriever([target, *noise])
    hits = r.search(SearchRequest("payment API cents"))
    assert hits[0].memory.id == "m-pay"
    assert any(reason.startswith("bm25 #1") for reason in hits[0].reasons)
    assert any(reason.startswith("dense #") for reason in hits[0].reasons)
    assert hits[0].citation == hits[0].memory.citation() and hits[0].citation.startswith(
        "[Memory m-pay: "
    )
    assert hits[0].score > 0


def test_without_embedder_keyword_only_and_reason() -> None:
    r, _ = retriever([mem("retry with exponential backoff", id="m-a")], embedder=False)
    hits = r.search(SearchRequest("backoff"))
    assert ids(hits) == ["m-a"]
    assert "no embedding model: keyword + graph only" in hits[0].reasons


def test_k_limits_and_empty_query() -> None:
    r, _ = retriever([mem(f"cache note {i}", id=f"m-{i}") for i in range(30)])
    assert len(r.search(SearchRequest("cache note", k=5))) == 5
    assert r.search(SearchRequest("   ")) == []
    assert r.search(SearchRequest("cache", k=0)) == []


def test_stale_explicit_marked_and_lower_proactive_never() -> None:
    stale = mem("the token cache expires hourly", id="m-stale", stale_at=NOW - timedelta(days=2))
    fresh = mem("hourly the token cache expires", id="m-fresh")  # matches exactly as well
    r, _ = retriever([stale, fresh])
    explicit = r.search(SearchRequest("token cache expires hourly"))
    by_id = {h.memory.id: h for h in explicit}
    assert by_id["m-stale"].stale and not by_id["m-fresh"].stale
    assert by_id["m-stale"].reasons[0].startswith("stale since")
    assert ids(explicit)[0] == "m-fresh"  # the stale twin is ranked lower
    proactive = r.search(SearchRequest("token cache expires hourly", proactive=True))
    assert ids(proactive) == ["m-fresh"]


def test_missing_anchor_file_counts_as_stale() -> None:
    gone = mem("login retries three times", id="m-gone", file="old/auth.py")
    here = mem("login locks after five failures", id="m-here", file="auth.py")
    r, _ = retriever([gone, here], existing={"auth.py"})
    hits = r.search(SearchRequest("login"))
    stale = {h.memory.id: h for h in hits}["m-gone"]
    assert stale.stale and "old/auth.py no longer exists" in stale.reasons[0]
    assert ids(r.search(SearchRequest("login", proactive=True))) == ["m-here"]


def test_deprecated_and_out_of_validity_never() -> None:
    memories = [
        mem("deploy with the blue pipeline", id="m-dep", deprecated=True),
        mem("deploy with the green pipeline", id="m-old", valid_until=NOW - timedelta(days=1)),
        mem("deploy with the red pipeline", id="m-future", valid_from=NOW + timedelta(days=1)),
        mem("deploy with the main pipeline", id="m-ok"),
    ]
    r, _ = retriever(memories)
    assert ids(r.search(SearchRequest("deploy pipeline"))) == ["m-ok"]


def test_types_filter() -> None:
    r, _ = retriever(
        [
            mem("use attrs for records", id="m-pref", type=MemoryType.PREFERENCE),
            mem("attrs slots break pickling", id="m-got", type=MemoryType.GOTCHA),
        ]
    )
    hits = r.search(SearchRequest("attrs", types=[MemoryType.GOTCHA]))
    assert ids(hits) == ["m-got"]


def test_phase_changes_order() -> None:
    req = mem("schema migrations need a version bump", id="m-req", type=MemoryType.REQUIREMENT)
    got = mem("schema migrations need a version bump first", id="m-got", type=MemoryType.GOTCHA)
    r, _ = retriever([req, got])
    define = ids(r.search(SearchRequest("schema migrations version", phase=UniversalPhase.DEFINE)))
    implement = ids(
        r.search(SearchRequest("schema migrations version", phase=UniversalPhase.IMPLEMENT))
    )
    assert define[0] == "m-req" and implement[0] == "m-got"


def test_source_trust_changes_order() -> None:
    taught = mem("flaky test needs a fixed seed", id="m-u", source=MemorySource.USER_TAUGHT)
    inferred = mem("flaky test needs a fixed seed", id="m-o", source=MemorySource.OBSERVER_INFERRED)
    r, _ = retriever([inferred, taught])
    hits = r.search(SearchRequest("flaky test seed"))
    assert ids(hits)[0] == "m-u"
    assert any(reason == "source user_taught x1.4" for reason in hits[0].reasons)


def test_request_file_brings_its_memories_and_graph_neighbours() -> None:
    graph = FakeGraph([("app/views.py", "app/models.py")])
    on_file = mem("views render with jinja autoescape off", id="m-view", file="app/views.py")
    neighbour = mem("models use soft delete flags", id="m-model", file="app/models.py")
    other = [mem(f"nothing to do with it {i}", id=f"m-x{i}") for i in range(5)]
    r, _ = retriever([on_file, neighbour, *other], graph=graph)
    hits = r.search(SearchRequest("jinja problems", file="app/views.py"))
    assert ids(hits)[0] == "m-view" and "m-model" in ids(hits)[:3]
    assert any(reason.startswith("graph #") for reason in hits[0].reasons)
    # without a query, the file alone ranks its memories and then its neighbours'
    assert ids(r.search(SearchRequest("", file="app/views.py")))[:2] == ["m-view", "m-model"]


def test_graph_boost_runs_over_top_results() -> None:
    graph = FakeGraph([("a.py", "b.py")])
    top = [mem(f"parser error handling case {i}", id=f"m-top{i}", file="a.py") for i in range(12)]
    low = [mem(f"parser {i} misc", id=f"m-low{i}", file=f"z{i}.py") for i in range(30)]
    near = mem("parser misc neighbour", id="m-near", file="b.py")
    r, _ = retriever([*top, *low, near], graph=graph)
    hits = r.search(SearchRequest("parser error handling", k=50))
    near_hit = next(h for h in hits if h.memory.id == "m-near")
    assert "graph neighbourhood boost" in near_hit.reasons or any(
        reason.startswith("graph #") for reason in near_hit.reasons
    )


def test_context_pack_for_file_has_tiers_and_citations() -> None:
    memories = [
        mem("never call save() inside the signal handler", id="m-g", type=MemoryType.GOTCHA,
            file="app/models.py"),
        mem("we chose soft deletes over hard deletes", id="m-d", type=MemoryType.DECISION,
            file="app/models.py"),
        mem("prefer attrs over dataclasses everywhere", id="m-p", type=MemoryType.PREFERENCE,
            related_files=["app/models.py"]),
        mem("models module wraps the ORM", id="m-i", type=MemoryType.MODULE_INSIGHT,
            related_files=["app/models.py"]),
    ]  # fmt: skip
    r, _ = retriever(memories)
    pack = r.context(ContextRequest(file="app/models.py", budget_tokens=1000))
    tiers = {item.memory.id: item.tier.value for item in pack.items}
    assert tiers == {"m-g": "critical", "m-d": "critical", "m-p": "background", "m-i": "relevant"}
    text = pack.text
    assert text.index("## Critical") < text.index("## Relevant") < text.index("## Background")
    assert "[Memory m-g: never call save() inside the signal…]" in text
    assert pack.tokens <= 1000 and pack.to_dict()["items"][0]["citation"].startswith("[Memory")


def test_context_by_query_and_stale_never_injected() -> None:
    memories = [
        mem("eviction runs on a background thread holding the lock", id="m-e"),
        mem("eviction used to run inline", id="m-s", stale_at=NOW - timedelta(days=3)),
    ]
    r, _ = retriever(memories)
    pack = r.context(ContextRequest(query="eviction lock", budget_tokens=500))
    assert [item.memory.id for item in pack.items] == ["m-e"]


def test_context_with_nothing_is_empty() -> None:
    r, _ = retriever([])
    pack = r.context(ContextRequest(file="nothing.py"))
    assert pack.items == [] and pack.tokens == 0 and pack.text == ""


def test_dense_search_compares_only_the_query_models_vectors() -> None:
    """The retriever hands the embedder's model id to the store, which skips other models'
    vectors (after a model switch, until they are re-embedded)."""
    target = mem("rotate the signing keys every ninety days", id="m-keys")
    r, store = retriever([target])
    asked: list[str | None] = []
    search = store.vector_search

    def recording(*args: Any, model_id: str | None = None, **kw: Any) -> list[tuple[str, float]]:
        asked.append(model_id)
        return search(*args, model_id=model_id, **kw)

    store.vector_search = recording  # type: ignore[method-assign]
    hits = r.search(SearchRequest("signing keys rotation"))
    assert asked == [HashEmbedder.model_id]
    assert any(reason.startswith("dense #") for reason in hits[0].reasons)
    assert store.embedder is not None
    store.embedder.model_id = "another-model"  # the query model changed, the vectors did not
    hits = r.search(SearchRequest("signing keys rotation"))
    assert not any(reason.startswith("dense #") for h in hits for reason in h.reasons)


def test_real_store_integration(tmp_workspace: Workspace) -> None:
    from engram.store import MemoryStore

    store = MemoryStore(tmp_workspace)
    try:
        emb = HashEmbedder()
        memories = [
            mem("charge() takes euros but the payment API wants integer cents", id="m-pay",
                file="billing.py"),
            mem("the invoice renderer needs DejaVu fonts", id="m-pdf"),
            mem("old payment flow used floats", id="m-old", stale_at=NOW - timedelta(days=1)),
        ]  # fmt: skip
        (tmp_workspace.root / "billing.py").write_text("x = 1\n")
        store.add(memories, emb.embed([m.content for m in memories]), emb.model_id)
        r = Retriever(store, emb, RetrievalConfig(), clock=lambda: NOW)
        hits = r.search(SearchRequest("payment API cents"))
        assert hits[0].memory.id == "m-pay"
        assert "m-old" in ids(hits) and "m-old" not in ids(
            r.search(SearchRequest("payment", proactive=True))
        )
        pack = r.context(ContextRequest(file="billing.py", budget_tokens=300))
        assert pack.items[0].memory.id == "m-pay" and pack.tokens <= 300
    finally:
        store.close()


@pytest.mark.parametrize("with_embedder", [True, False])
def test_search_calls_store_once_per_path(with_embedder: bool) -> None:
    r, store = retriever([mem("alpha beta", id="m-a")], embedder=with_embedder)
    r.search(SearchRequest("alpha"))
    assert store.keyword_calls == 1


def test_episode_neighbours_of_top_results_are_lifted() -> None:
    question = mem("what made you pick a kitten from the shelter", id="m-q")
    answer = mem("my neighbour needed homes for a litter", id="m-a")
    question.extra["adjacent"] = ["m-a"]
    answer.extra["adjacent"] = ["m-q"]
    noise = [mem(f"kitten food brand {i} was on sale", id=f"m-n{i}") for i in range(12)]
    r, _ = retriever([question, answer, *noise])
    hits = r.search(SearchRequest("why did you pick a kitten from the shelter", k=5))
    assert ids(hits)[0] == "m-q"
    assert "m-a" in ids(hits)
    lifted = next(h for h in hits if h.memory.id == "m-a")
    assert "next to a top result in its episode" in lifted.reasons


def test_tag_named_in_query_ranks_higher() -> None:
    ana = mem("I started pottery classes", id="m-ana", tags=["speaker:Ana"])
    ben = mem("I started pottery classes too", id="m-ben", tags=["speaker:Ben"])
    r, _ = retriever([ben, ana])
    hits = r.search(SearchRequest("what classes did Ben start"))
    assert ids(hits)[0] == "m-ben" and "tag named in the query" in hits[0].reasons
    hits = r.search(SearchRequest("what classes did Ana start"))
    assert ids(hits)[0] == "m-ana"


def test_a_dated_query_searches_inside_the_window_it_names() -> None:
    """ "... in March 2024": March's memories are searched on their own and lifted."""

    def on(day: datetime, content: str, mid: str) -> Memory:
        return mem(content, id=mid, valid_from=day, created_at=day, updated_at=day)

    march = datetime(2024, 3, 12, tzinfo=UTC)
    answer = on(march, "redis went away after the outage", "m-answer")
    # many memories that match the words better but were recorded at other times
    elsewhen = [datetime(2024, 1, 3, tzinfo=UTC), datetime(2024, 6, 3, tzinfo=UTC)]
    noise = [
        on(elsewhen[i % 2], f"what we decided about the redis cache, note {i}", f"m-n{i}")
        for i in range(60)
    ]
    r, _ = retriever([answer, *noise])
    undated = r.search(SearchRequest("what did we decide about the redis cache", k=10))
    assert "m-answer" not in ids(undated)
    hits = r.search(SearchRequest("what did we decide about the redis cache in March 2024", k=10))
    assert "m-answer" in ids(hits)[:3]
    found = next(h for h in hits if h.memory.id == "m-answer")
    assert "dated: March 2024" in found.reasons
    assert "time #1" in found.reasons


def test_episode_spread_reaches_two_steps_at_half_the_share() -> None:
    """The same speaker's turn before the reply to it (two steps away) is lifted too.

    Only turns that match the query themselves are lifted (relevance first; see
    ``test_episode_neighbours_that_match_nothing_are_not_results``).
    """
    setup = mem("something bad happened yesterday with a car", id="m-setup")
    asked = mem("oh no, what happened to the car?", id="m-asked")
    told = mem("a car ran a red light and hit us at the crossing", id="m-told")
    far = mem("anyway, how was your weekend?", id="m-far")
    chain = [setup, asked, told, far]
    for i, memory in enumerate(chain):
        memory.extra["adjacent"] = [m.id for m in chain[max(0, i - 1) : i + 2] if m is not memory]
    noise = [mem(f"the red car at the crossing, photo {i}", id=f"m-n{i}") for i in range(15)]
    # the episode stage's arithmetic, before the learned re-ranking re-orders the top
    r, _ = retriever([*chain, *noise], rerank=None)
    hits = r.search(SearchRequest("when did the car hit you at the red light", k=40))
    assert ids(hits)[0] == "m-told"
    score = {h.memory.id: h.score for h in hits}
    assert {"m-asked", "m-setup"} <= set(score)
    # one step away gets the full share, two steps half of it
    assert score["m-asked"] > score["m-setup"]
    setup_hit = next(h for h in hits if h.memory.id == "m-setup")
    assert "next to a top result in its episode" in setup_hit.reasons


def test_a_date_in_a_file_path_opens_no_time_path() -> None:
    """Context for ``migrations/2024-03-05-users.sql`` is about the file, not that day."""
    day = datetime(2024, 3, 5, tzinfo=UTC)
    that_day = mem("users migration backfills emails", id="m-day", valid_from=day)
    on_file = mem("run it with --lock-timeout", id="m-file", file="migrations/2024-03-05-users.sql")
    r, _ = retriever([that_day, on_file])
    pack = r.context(ContextRequest(file="migrations/2024-03-05-users.sql", budget_tokens=300))
    assert pack.items and not any("dated:" in r for item in pack.items for r in item.reasons)
    asked = r.search(SearchRequest("users migration on 2024-03-05"))
    assert any("dated: 2024-03-05" in h.reasons for h in asked)


def test_boosts_never_lift_a_memory_the_query_does_not_match() -> None:
    """Issue 12 #5: the only memory naming COMP_WORDS was ranked 3rd under memories that
    do not mention it, lifted by the graph neighbourhood and "user verified"."""
    graph = FakeGraph([("completions.go", "bash_completions.go"), ("completions.go", "zsh.go")])
    answer = mem(
        "COMP_WORDS holds the words typed so far in bash completion",
        id="m-answer",
        file="completions.go",
    )
    boosted = [
        mem(
            f"completion helper number {i} for shells",
            id=f"m-boosted{i}",
            file="bash_completions.go" if i % 2 else "zsh.go",
            source=MemorySource.USER_TAUGHT,
            user_verified=True,
            pinned=True,
        )
        for i in range(6)
    ]
    noise = [
        mem(f"unrelated fact {i} about flags", id=f"m-noise{i}", file=f"f{i}.go") for i in range(12)
    ]
    for embedder in (False, True):
        r, _ = retriever([answer, *boosted, *noise], graph=graph, embedder=embedder)
        hits = r.search(SearchRequest("COMP_WORDS", k=10))
        assert ids(hits)[0] == "m-answer"
        if not embedder:  # keywords alone: exactly the memories that name it
            assert ids(hits) == ["m-answer"]


def test_episode_neighbours_that_match_nothing_are_not_results() -> None:
    told = mem("a car ran a red light and hit us at the crossing", id="m-told")
    far = mem("anyway, how was your weekend?", id="m-far")
    told.extra["adjacent"] = ["m-far"]
    far.extra["adjacent"] = ["m-told"]
    r, _ = retriever([told, far], embedder=False)
    assert ids(r.search(SearchRequest("red light crossing", k=10))) == ["m-told"]


def test_a_search_that_matches_nothing_returns_nothing() -> None:
    memories = [mem(f"the parser keeps {i} tokens of lookahead", id=f"m-{i}") for i in range(8)]
    r, _ = retriever(memories, embedder=False)
    assert r.search(SearchRequest("xylophone quartz", k=10)) == []
    # with a model, a cosine below the calibrated floor is no match either
    r, store = retriever(memories)
    low = r.config.min_cosine - 0.05
    store.vector_search = lambda v, k, flt=None: [(f"m-{i}", low) for i in range(8)]  # type: ignore[method-assign]
    assert r.search(SearchRequest("xylophone quartz", k=10)) == []


def test_a_question_ranks_below_its_reply_for_a_question_query() -> None:
    """Issue 17 (LoCoMo misses): "Which team does Tim support?" matched the earlier
    question "Who's your favourite basketball team?" best; the reply after it answers."""
    from engram.embed.text import link_episode

    asked = mem("Cool! Who's your favourite basketball team? [shared an image]", id="m-ask")
    reply = mem("The Wolves are solid, I support the basketball team since school", id="m-re")
    after = mem("Nice, I should watch a game with you sometime", id="m-after")
    link_episode([asked, reply, after], same_episode=lambda a, b: True)
    noise = [mem(f"basketball practice schedule {i}", id=f"m-n{i}") for i in range(12)]
    r, _ = retriever([asked, reply, after, *noise])
    hits = r.search(SearchRequest("Which basketball team does Tim support?", k=10))
    order = ids(hits)
    assert order.index("m-re") < order.index("m-ask")
    question = next(h for h in hits if h.memory.id == "m-ask")
    assert "a question itself: ranked below answers" in question.reasons
    # a query that is not a question leaves question memories as they were
    hits = r.search(SearchRequest("favourite basketball team", k=10))
    assert all("a question itself" not in " ".join(h.reasons) for h in hits)


def test_question_shapes() -> None:
    from engram.retrieval.scoring import is_question, is_question_query

    assert is_question("Who is it? [shared an image: a dog]")
    assert not is_question("Nice. (see photo)")
    assert is_question_query("When did the build break")
    assert is_question_query("the build broke?")
    assert not is_question_query("is_valid function")
    assert not is_question_query("payment cents")
