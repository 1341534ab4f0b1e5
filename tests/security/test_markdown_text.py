"""``markdown_text``: a memory's text in hover shows as text, with its code spans as code.

Stop 29 made hover show every memory's text as text (a teammate's ``![s](https://…)`` made
VS Code fetch that URL on every hover; docs/security.md). Escaping every backtick also showed
``catch_exceptions=True`` in backticks, the way memories name code, as literal backticks; a
one-line code span is now kept, since nothing inside one is read as markdown. These tests
render with markdown-it (CommonMark with raw HTML on, plus GFM's tables and strikethrough, as
VS Code draws hover) and check that whatever the text, only paragraphs, line breaks and code
come out.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from engram.quoting import markdown_text

RENDERER = MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])
#: the only tags a memory's text may become (a line indented four spaces is a code block:
#: still the text as it is)
ALLOWED = {"p", "/p", "code", "/code", "br", "br /", "pre", "/pre"}


def tags(markdown: str) -> set[str]:
    return set(re.findall(r"<([^<>]*?)>", RENDERER.render(markdown)))


def test_a_code_span_stays_code_and_the_rest_is_text() -> None:
    text = "`catch_exceptions=True` is the default; see ``a`b`` and ![x](https://h/p.png)"
    html = RENDERER.render(markdown_text(text))
    assert "<code>catch_exceptions=True</code>" in html
    assert "<code>a`b</code>" not in html  # a backtick inside: escaped, not kept
    assert "<img" not in html and "<a " not in html
    assert tags(markdown_text(text)) <= ALLOWED


def test_what_only_looks_like_a_span_is_escaped() -> None:
    for text in ("```x```", "` `", "`a\nb`", "`x``", "```\nrun\n```", "`unclosed"):
        assert tags(markdown_text(text)) <= ALLOWED, text
        assert "<pre" not in RENDERER.render(markdown_text(text)), text  # no fenced block


MARKUP = st.sampled_from([*"`*_[]()<>!&~|#=+-.):\\ \n\t", "http://h/", "1. ", "---"])


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(MARKUP, st.text(alphabet="ab1 ", max_size=3)), max_size=40))
def test_any_text_renders_as_paragraphs_and_code_only(parts: list[str]) -> None:
    text = "".join(parts)
    assert tags(markdown_text(text)) <= ALLOWED, (text, RENDERER.render(markdown_text(text)))
