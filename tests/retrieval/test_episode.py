"""Episode linking and the episode context in the contextual embedding text."""

from __future__ import annotations

from engram.embed.text import (
    EPISODE_BEFORE_KEY,
    episode_excerpt,
    link_episode,
    memory_embedding_text,
)
from engram.model import Memory, Provenance


def _turn(text: str, session: str | None) -> Memory:
    return Memory(text, provenance=Provenance(session_id=session))


def test_link_episode_links_neighbours_within_a_session_only() -> None:
    a, b, c = _turn("Did the deploy fail?", "s1"), _turn("Yes, twice.", "s1"), _turn("Hi", "s2")
    link_episode([a, b, c])
    assert a.extra["adjacent"] == [b.id]
    assert b.extra["adjacent"] == [a.id]
    assert c.extra["adjacent"] == []
    assert EPISODE_BEFORE_KEY not in a.extra
    assert b.extra[EPISODE_BEFORE_KEY] == "Did the deploy fail?"
    assert EPISODE_BEFORE_KEY not in c.extra


def test_memories_without_a_session_are_not_one_episode() -> None:
    a, b = _turn("one", None), _turn("two", None)
    link_episode([a, b])
    assert a.extra["adjacent"] == [] and b.extra["adjacent"] == []


def test_embedding_text_carries_the_previous_excerpt_before_the_content() -> None:
    a, b = _turn("Why does login hang on CI?", "s"), _turn("The mock clock never ticks.", "s")
    link_episode([a, b])
    text = memory_embedding_text(b)
    assert "Why does login hang on CI?" in text
    assert text.endswith("\n\nThe mock clock never ticks.")
    assert "After:" not in memory_embedding_text(a)


def test_episode_excerpt_is_short_and_cut_at_a_word() -> None:
    long = "word " * 100
    excerpt = episode_excerpt(long, limit=40)
    assert len(excerpt) <= 42 and excerpt.endswith(" …")
    assert episode_excerpt("a\n  b") == "a b"


def test_keyword_text_carries_the_episode_context_too() -> None:
    from engram.store.memory_store import memory_search_text

    a, b = _turn("Why does login hang on CI?", "s"), _turn("The mock clock never ticks.", "s")
    link_episode([a, b])
    assert "login hang" in memory_search_text(b)
    assert "mock clock" not in memory_search_text(a)
