"""The keyword side treats indexed text and queries alike: stems, drops stop words."""

from __future__ import annotations

from engram.model import Memory
from engram.store import MemoryStore
from engram.workspace import Workspace


def test_keyword_search_matches_word_forms_and_ignores_stop_words(
    tmp_workspace: Workspace,
) -> None:
    store = MemoryStore(tmp_workspace)
    try:
        target = Memory("The deployments were failing because of stale caching")
        store.add([target, Memory("A note about the parser's error recovery")])
        store.compact()
        assert [mid for mid, _ in store.keyword_search("deploy failed", 5)] == [target.id]
        assert [mid for mid, _ in store.keyword_search("cached deployment", 5)] == [target.id]
        assert store.keyword_search("the was of", 5) == []
    finally:
        store.close()
