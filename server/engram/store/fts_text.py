"""Text shaping for LanceDB's native full-text index.

LanceDB's ``simple`` tokenizer splits on punctuation and lowercases, so ``parse_config``
becomes ``parse config`` but ``parseConfig`` stays one token ``parseconfig``; and its
query parser returns nothing at all for some punctuation (``src/auth.py``, ``it's``).
So both sides go through the same shaping here: documents get the split parts of
camelCase identifiers appended, queries are reduced to plain word tokens (capped, so a
whole memory used as a duplicate probe stays a cheap query).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from itertools import chain

_WORD_RE = re.compile(r"[A-Za-z0-9]+")
#: The words of ``_WORD_RE`` that hold an upper-case letter or a digit: only those have
#: several camelCase parts (an all lower-case word is one). Possessive, so a match starts
#: only where a word starts: ``[a-z]*+`` cannot give back the lower-case run it took, and
#: a word of lower-case letters only fails at its first letter and at each one after.
_SPLITTABLE_RE = re.compile(r"[a-z]*+[A-Z0-9][A-Za-z0-9]*+")
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: Query terms kept (OR semantics: more terms only add candidates and cost).
MAX_QUERY_TERMS = 48


def camel_parts(word: str) -> list[str]:
    """``parseHTTPConfig`` -> ``["parse", "HTTP", "Config"]``; one part for plain words."""
    return _CAMEL_RE.findall(word)


class _SplitWords(dict[str, tuple[str, ...]]):
    """word -> its :func:`camel_parts` when there are several, else ``()``; filled on
    lookup, emptied when full (bounded: a cold index sees millions of distinct words)."""

    LIMIT = 1 << 16

    def __missing__(self, word: str) -> tuple[str, ...]:
        if len(self) >= self.LIMIT:
            self.clear()
        parts = camel_parts(word)
        value = self[word] = tuple(parts) if len(parts) > 1 else ()
        return value


_SPLIT = _SplitWords()


def expand_identifiers(text: str) -> str:
    """The split parts of every camelCase word in ``text``, space-separated.

    The loop is the C one of ``map`` over a bounded cache of split words (most words
    repeat): a regex call per word was 40% of a cold keyword index's chunk phase, here
    a third less (issue 18: 10M words on 6,319 files; docs/codegraph.md "The whole cold
    index"). Only the words that can split are looked up (``_SPLITTABLE_RE``): the same
    text for ~15 % less (gs-ws's 89k chunks: 1.19 against 1.40 CPU s; docs/codegraph.md
    "The CPU of a cold index").
    """
    return " ".join(chain.from_iterable(map(_SPLIT.__getitem__, _SPLITTABLE_RE.findall(text))))


def document_text(parts: Iterable[str]) -> str:
    """The indexed text of a record: its parts plus the split identifiers they contain."""
    joined = "\n".join(p for p in parts if p)
    return with_identifiers(joined, expand_identifiers(joined))


def with_identifiers(text: str, extra: str) -> str:
    """``text`` with ``extra`` (its :func:`expand_identifiers`) appended, as indexed: a
    parse worker sends the short ``extra`` of a code chunk and the writer joins them
    (docs/codegraph.md "The whole cold index")."""
    return f"{text}\n{extra}" if extra else text


def query_terms(query: str) -> list[str]:
    """Lowercase word tokens of ``query`` (with camelCase parts), unique, in order, capped."""
    seen: dict[str, None] = {}
    for word in _WORD_RE.findall(query):
        for token in (word, *(camel_parts(word) if not word.islower() else ())):
            lowered = token.lower()
            if lowered not in seen:
                seen[lowered] = None
    return list(seen)[:MAX_QUERY_TERMS]


def sql_quote(value: str) -> str:
    """A SQL string literal (single quotes doubled)."""
    return "'" + value.replace("'", "''") + "'"
