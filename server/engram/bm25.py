"""The one Okapi BM25 in Engram, built by ``bm25s``: code search (``codegraph.search``) and
the MCP hub's tool search (``mcphub.search``) both rank with it (k1 1.2, b 0.75, Lucene's
idf; docs/codegraph.md "Code search").

``bm25s`` (numpy only; nothing downloaded) precomputes every (token, document) score into a
sparse CSC matrix at build time; a query sums the columns of its tokens. Documents are
pre-tokenised by the caller (each index has its own tokenizer), so bm25s' own tokenizer and
stemmer are never used. A query is either tokens (repeats count) or a token -> weight mapping
(the hub weights typo-corrected words lower). Scores are bm25s' Lucene scores times
``k1 + 1``, the classic Okapi scale (rankings are the same either way).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

K1 = 1.2
B = 0.75


class BM25Index:
    """Okapi BM25 over pre-tokenised documents; the index is bm25s' eager sparse matrix."""

    def __init__(self, documents: Iterable[list[str]], k1: float = K1, b: float = B) -> None:
        import numpy as np

        corpus = [list(tokens) for tokens in documents]
        self.size = len(corpus)
        self._scale = k1 + 1.0
        self._vocab: dict[str, int] = {}
        self._data = np.zeros(0, dtype=np.float32)
        self._indices = np.zeros(0, dtype=np.int32)
        self._indptr = np.zeros(1, dtype=np.int64)
        if not any(corpus):
            return  # nothing to index: every query scores 0 (bm25s divides by the mean length)
        import bm25s

        # bm25s sets its own logger to DEBUG on import, so every index build would print
        # "Building index from tokens" wherever the root logger has a handler (the CLI's
        # stderr, the language server's log); its warnings still pass.
        logging.getLogger("bm25s").setLevel(logging.WARNING)
        retriever = bm25s.BM25(k1=k1, b=b, method="lucene", idf_method="lucene")
        retriever.index(corpus, show_progress=False)
        # bm25s adds "" for empty documents; it is no word of ours.
        self._vocab = {t: i for t, i in retriever.vocab_dict.items() if t}
        self._data = np.asarray(retriever.scores["data"], dtype=np.float32)
        self._indices = np.asarray(retriever.scores["indices"])
        self._indptr = np.asarray(retriever.scores["indptr"])

    def __contains__(self, token: object) -> bool:
        return token in self._vocab

    @property
    def vocabulary(self) -> list[str]:
        return list(self._vocab)

    def scores(self, query: Sequence[str] | Mapping[str, float]) -> npt.NDArray[np.float32]:
        """The BM25 score of every document (0 where no query token occurs)."""
        import numpy as np

        weights = query if isinstance(query, Mapping) else Counter(query)
        out = np.zeros(self.size, dtype=np.float32)
        for token, weight in weights.items():
            column = self._vocab.get(token)
            if column is None:
                continue
            start, end = int(self._indptr[column]), int(self._indptr[column + 1])
            # one token's column holds each document at most once, so += is exact
            out[self._indices[start:end]] += (weight * self._scale) * self._data[start:end]
        return out


__all__ = ["K1", "B", "BM25Index"]
