"""The one Okapi BM25 in Engram: code search (``codegraph.search``) and the MCP hub's tool
search (``mcphub.search``) both rank with it (k1 1.2, b 0.75, Lucene's idf).

Documents are pre-tokenised by the caller (each index has its own tokenizer); postings are
NumPy arrays, so scoring every document is one vectorised pass per query token. A query is
either tokens (repeats count) or a token -> weight mapping (the hub weights typo-corrected
words lower).
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

K1 = 1.2
B = 0.75


class BM25Index:
    """Okapi BM25 over pre-tokenised documents, scoring every document with NumPy."""

    def __init__(self, documents: Iterable[list[str]], k1: float = K1, b: float = B) -> None:
        import numpy as np

        postings: dict[str, list[tuple[int, int]]] = defaultdict(list)
        lengths: list[int] = []
        for doc_id, tokens in enumerate(documents):
            lengths.append(len(tokens))
            for token, count in Counter(tokens).items():
                postings[token].append((doc_id, count))
        self.size = len(lengths)
        self._lengths = np.asarray(lengths, dtype=np.float32)
        average = float(self._lengths.mean()) if self.size else 1.0
        self._norm = k1 * (1.0 - b + b * self._lengths / max(average, 1e-9))
        self._k1 = k1
        self._postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float32], float]] = {}
        for token, entries in postings.items():
            ids = np.fromiter((e[0] for e in entries), dtype=np.int64, count=len(entries))
            tfs = np.fromiter((e[1] for e in entries), dtype=np.float32, count=len(entries))
            df = len(entries)
            idf = math.log(1.0 + (self.size - df + 0.5) / (df + 0.5))
            self._postings[token] = (ids, tfs, idf)

    def __contains__(self, token: object) -> bool:
        return token in self._postings

    @property
    def vocabulary(self) -> list[str]:
        return list(self._postings)

    def scores(self, query: Sequence[str] | Mapping[str, float]) -> npt.NDArray[np.float32]:
        """The BM25 score of every document (0 where no query token occurs)."""
        import numpy as np

        weights = query if isinstance(query, Mapping) else Counter(query)
        out = np.zeros(self.size, dtype=np.float32)
        for token, weight in weights.items():
            entry = self._postings.get(token)
            if entry is None:
                continue
            ids, tfs, idf = entry
            out[ids] += weight * idf * tfs * (self._k1 + 1.0) / (tfs + self._norm[ids])
        return out


__all__ = ["K1", "B", "BM25Index"]
