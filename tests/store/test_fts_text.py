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


def test_a_chunks_split_words_are_those_of_its_whole_embedding_text() -> None:
    """``chunk_rows`` splits a file's path words once, not once per chunk: each chunk's
    extra is still ``expand_identifiers`` of its whole embedding text, whatever the path
    (camelCase, digits, non-ASCII, a lone surrogate, none to split) and the name."""
    from engram.codegraph.chunking import chunk_rows, embedding_text
    from engram.codegraph.symbols import Symbol

    text = "\n".join(
        ["import fooBar", "", "def parseHTTPConfig(x):", "    return utf8Name", "",
         "class MyThing:", "    def doIt(self): pass", "", "loose = 1", "moreLoose = 2",
         "evenMore = 3", *(f"lineNo{i} = camelCase{i}" for i in range(60))]
    )  # fmt: skip
    symbols = [
        Symbol("parseHTTPConfig", "function", "parseHTTPConfig", "", 3, 4, True),
        Symbol("MyThing", "class", "MyThing", "", 6, 7, False),
        Symbol("doIt", "method", "MyThing.doIt", "", 7, 7, False),
    ]
    paths = ["src/myPkg/HTTPServer2.py", "lower/only.py", "naïve/résuméParser.py",
             "odd\udcffName/xY.py", "a.py", "9/Z.py"]  # fmt: skip
    plain = "x = 1\ny = 2\nz = 3\n"  # nothing to split but the path (or nothing at all)
    for path in paths:
        for body, language, given in ((text, "python", symbols), (text, None, []),
                                      (plain, "python", []), (plain, None, [])):  # fmt: skip
            rows = chunk_rows(path, body, given, language)
            assert rows, path
            for _id, _kind, _name, _start, _end, content, prefix, extra, _digest in rows:
                assert extra == expand_identifiers(embedding_text(prefix, content)), (path, prefix)
