"""The search text's split identifiers: the words that can split are found without
looking up every word, and the text is the one a lookup of every word gives."""

from __future__ import annotations

import random
from itertools import chain

from engram.store import fts_text
from engram.store.fts_text import camel_parts, expand_identifiers

SAMPLES = [
    "def parseHTTPConfig(self, utf8_name, v2):",
    "fooBar foo_bar FooBar FOO BAR foo2 2foo 123 x9Y _private __dunder__",
    "HTTPServer XMLHttpRequest getURLsFor iOS macOS ABC123def a1b2c3",
    "naïve résuméParser ÀbcDef straße über_Cool ĳsselMeer",
    "",
    "   \n\t",
    "lowercase words only here",
    "trailing Upper",
    "Mixed\nlinesWith\r\nCRLF\u2028andSeparators",
    "lone\ud800SurrogateIn theMiddle \udfff",
    "non BMP \U0001d49cbcDef xY\U0001f600zW",
    "tab\tAnd\x0bvertical\x0cFeedsOf\x1cSeparators\x85nextLine\xa0noBreak",
]


def _every_word(text: str) -> str:
    """The split parts of every word, each one looked up (the previous implementation)."""
    parts = (camel_parts(w) for w in fts_text._WORD_RE.findall(text))
    return " ".join(chain.from_iterable(p for p in parts if len(p) > 1))


def test_expand_identifiers_equals_a_lookup_of_every_word() -> None:
    rng = random.Random(18)
    alphabet = "aZ9_ .\n" + "bcXYz012é-" + "\x0b\x85\ud800\U0001d49c"
    texts = [*SAMPLES]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 60))) for _ in range(2000)]
    for text in texts:
        assert expand_identifiers(text) == _every_word(text), text


def test_expand_identifiers_splits_what_search_needs() -> None:
    assert expand_identifiers("parseHTTPConfig utf8 plain Word") == "parse HTTP Config utf 8"
