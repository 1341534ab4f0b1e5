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
_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
#: Query terms kept (OR semantics: more terms only add candidates and cost).
MAX_QUERY_TERMS = 48
#: Every byte but ``[A-Za-z0-9]`` made a space: the words of ``_WORD_RE`` in a text's
#: UTF-8 are then what ``bytes.split`` gives (a multi-byte character's bytes are all >= 0x80,
#: never a letter or digit, as none is a word character of ``_WORD_RE`` either).
_WORDS_ONLY = bytes(
    c if (48 <= c <= 57 or 65 <= c <= 90 or 97 <= c <= 122) else 32 for c in range(256)
)


def camel_parts(word: str) -> list[str]:
    """``parseHTTPConfig`` -> ``["parse", "HTTP", "Config"]``; one part for plain words."""
    return _CAMEL_RE.findall(word)


class _SplitWords(dict[bytes, tuple[str, ...]]):
    """word (ASCII bytes) -> its :func:`camel_parts` when there are several, else ``()``;
    filled on lookup, emptied when full (bounded: a cold index sees millions of distinct
    words; 2^17 held every distinct word of 48k chunks of three projects)."""

    LIMIT = 1 << 17

    def __missing__(self, word: bytes) -> tuple[str, ...]:
        if len(self) >= self.LIMIT:
            self.clear()
        parts = camel_parts(word.decode("ascii"))
        value = self[word] = tuple(parts) if len(parts) > 1 else ()
        return value


_SPLIT = _SplitWords()


def expand_identifiers(text: str) -> str:
    """The split parts of every camelCase word in ``text``, space-separated.

    The words are found without a regex: the text's UTF-8 with every other byte made a
    space (``bytes.translate``), split; each is looked up through ``map`` in a bounded
    cache of its camelCase parts (most words repeat; a plain word has none). A regex call
    per word was 40% of a cold keyword index's chunk phase (issue 18: 10M words on 6,319
    files; docs/codegraph.md "The whole cold index"); one ``findall`` of the words that
    can split scans the text a character at a time in ``re``, ~20 % slower than this
    (48k chunks of three projects: 0.75-0.82 against 0.90-1.05 CPU s; "The CPU of a cold
    index"). ``surrogatepass``: a lone surrogate is no word character either.
    """
    words = text.encode("utf-8", "surrogatepass").translate(_WORDS_ONLY).split()
    return " ".join(chain.from_iterable(map(_SPLIT.__getitem__, words)))


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
