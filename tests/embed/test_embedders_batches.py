"""Length-bounded embedding batches (engram.embed.embedders.length_batches)."""

from __future__ import annotations

from engram.embed.embedders import BATCH_CHAR_BUDGET, TRUNCATE_CHARS, length_batches


def test_batches_cover_every_text_once_sorted_by_length_within_budget() -> None:
    texts = ["x" * n for n in [5, 2000, 40, 700, 700, 10, 3000, 1] * 20]
    batches = length_batches(texts, max_batch=32)
    flat = [i for b in batches for i in b]
    assert sorted(flat) == list(range(len(texts)))
    for batch in batches:
        sizes = [min(len(texts[i]), TRUNCATE_CHARS) for i in batch]
        assert len(batch) <= 32
        assert len(batch) == 1 or max(sizes) * len(batch) <= BATCH_CHAR_BUDGET
    lengths = [len(texts[i]) for i in flat]
    assert lengths == sorted(lengths)  # similar lengths together: little padding


def test_short_texts_still_fill_a_batch() -> None:
    batches = length_batches(["short memory text"] * 100, max_batch=32)
    assert [len(b) for b in batches] == [32, 32, 32, 4]
    assert length_batches([], max_batch=8) == []
