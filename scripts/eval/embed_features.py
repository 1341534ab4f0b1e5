"""Sentence-embedding features of an edit: what the changed spans and their sentence mean.

Issue 12's eleventh pass (docs/lifecycle.md). The tenth pass's edit features say what *kind*
of token changed ("a number", "a word in the same slot"); readings written from one set's
misses never carried to the next. This tries the meaning of the edit instead: the default
embedding model Engram already loads (all-MiniLM-L6-v2, 384-d; no download) reads

* the old span and the new span — every token the edit replaced or deleted, and every token
  it inserted, in the note's own spelling (``difflib`` on the tokens, as the edit readers do);
* the sentence around the first change, in the old note and in the new one;

and the features are the usual NLI-head combination of two vectors ``u``, ``v``: the spans'
``[u, v, |u - v|, u * v]`` and the sentences' ``[|u - v|, u * v]`` (``--embed-parts`` picks a
subset), fitted by ``contradiction_combine.py`` with a strong L2 penalty on training folds
only. A side with nothing changed (words only added) reads as the zero vector.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

_WORD = re.compile(r"\S+")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(])|\n+")
#: which blocks make the feature vector: span vectors, span difference / product, sentence
#: difference / product
PARTS = ("span_uv", "span_diff", "sent_diff")


class Embedder(Protocol):
    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


def _key(token: str) -> str:
    return token.lower().strip("`*.,:;()[]\"'")


def changed_parts(old: str, new: str) -> tuple[str, str, str, str]:
    """(old span, new span, old sentence, new sentence) of the edit ``old`` -> ``new``."""
    a = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(old)]
    b = [(m.start(), m.end(), m.group()) for m in _WORD.finditer(new)]
    matcher = difflib.SequenceMatcher(
        None, [_key(t) for *_, t in a], [_key(t) for *_, t in b], autojunk=False
    )
    old_span: list[str] = []
    new_span: list[str] = []
    first_a = first_b = None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        old_span += [t for *_, t in a[i1:i2]]
        new_span += [t for *_, t in b[j1:j2]]
        if first_a is None:
            first_a, first_b = i1, j1
    return (
        " ".join(old_span),
        " ".join(new_span),
        _sentence_at(old, a, first_a),
        _sentence_at(new, b, first_b),
    )


def _sentence_at(text: str, tokens: list[tuple[int, int, str]], index: int | None) -> str:
    """The sentence of ``text`` holding token ``index`` (the whole text when there is none)."""
    if index is None or not tokens:
        return text
    offset = tokens[min(index, len(tokens) - 1)][0]
    start = 0
    for m in _SENTENCE_END.finditer(text):
        if m.end() <= offset:
            start = m.end()
        else:
            return text[start : m.start()].strip() or text
    return text[start:].strip() or text


def embed_features(
    pairs: Sequence[tuple[str, str]], embedder: Embedder, parts: Sequence[str] = PARTS
) -> npt.NDArray[np.float64]:
    """One row per (old, new) pair: the blocks named in ``parts`` (see :data:`PARTS`)."""
    read = [changed_parts(old, new) for old, new in pairs]
    texts = sorted({t for r in read for t in r if t})
    vectors = embedder.embed(texts) if texts else np.zeros((0, 1), dtype=np.float32)
    dim = int(vectors.shape[1])
    index = {t: i for i, t in enumerate(texts)}

    def vec(text: str) -> npt.NDArray[np.float64]:
        if not text:
            return np.zeros(dim)
        return np.asarray(vectors[index[text]], dtype=np.float64)

    rows = []
    for old_span, new_span, old_sent, new_sent in read:
        u, v = vec(old_span), vec(new_span)
        su, sv = vec(old_sent), vec(new_sent)
        blocks: list[npt.NDArray[np.float64]] = []
        if "span_uv" in parts:
            blocks += [u, v]
        if "span_diff" in parts:
            blocks += [np.abs(u - v), u * v]
        if "sent_diff" in parts:
            blocks += [np.abs(su - sv), su * sv]
        rows.append(np.concatenate(blocks) if blocks else np.zeros(0))
    return np.array(rows, dtype=np.float64)
