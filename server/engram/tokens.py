"""A conservative token count that needs no tokenizer model (one measure for every budget).

It lives at the package top, with no heavy imports, because agent hooks (a fresh process per
tool call) budget their context with the same count as the retrieval pipeline's packs.

Context packs promise never to exceed their budget, so the estimate must not under-count
what a real byte-level BPE tokenizer (GPT-4's ``cl100k_base``, ``o200k_base``, Claude's)
produces for English and code. Such tokenizers first split text into pieces with a regex
(letters, digit groups of at most three, punctuation runs, whitespace) and only merge bytes
*inside* a piece, so a piece never costs less than one token and the pieces of hashes and
ids (``m-3f2a9c1e7b`` is eleven pieces) cost about one token per character. We split the
same way and charge each piece an upper bound:

* plain words (lowercase or Capitalised ASCII, the spelling BPE vocabularies learnt) one
  token per 4 letters; identifiers and acronyms (``getUserById``, ``LGBTQ``) one per 3;
* digits one token per 3 (``cl100k`` groups digits by three);
* punctuation one token per character (real tokenizers often merge ``):`` or ``...``);
* non-ASCII one token per UTF-8 byte (the byte fallback is the worst case);
* a newline run one per newline; other whitespace one per 4 characters, and one more for
  the last space of a run of two or more: BPE splits it off as its own piece when a digit
  follows (``"  0.03"`` is five tokens, not four; a column of figures in docs/engine.md
  was counted 154 for 158 real tokens).

The price is some over-counting (budget is spent a little cautiously); the gain is that a
pack is never too large for the window it was sized for. See ``docs/retrieval.md``.
"""

from __future__ import annotations

import re

# a leading space belongs to the next word, as in the BPE pre-tokenizers
_PIECE = re.compile(
    r" ?[A-Za-z]+"  # ASCII letters
    r"| ?[0-9]+"  # digits
    r"|\n+"  # newline runs
    r"|[^\S\n]+"  # other whitespace
    r"| ?[^\sA-Za-z0-9]"  # one punctuation or non-ASCII character
)
_PLAIN_WORD = re.compile(r" ?(?:[a-z]+|[A-Z][a-z]+)")


def _letters_cost(piece: str) -> int:
    letters = len(piece) - (1 if piece[0] == " " else 0)
    per = 4 if _PLAIN_WORD.fullmatch(piece) else 3
    return -(-letters // per)


def estimate_tokens(text: str) -> int:
    """An upper-bound estimate of the BPE tokens in ``text`` (see the module docstring)."""
    if not text:
        return 0
    total = 0
    for match in _PIECE.finditer(text):
        piece = match.group()
        first = piece[-1] if piece[0] == " " and len(piece) > 1 else piece[0]
        if first.isascii() and first.isalpha():
            total += _letters_cost(piece)
        elif first.isascii() and first.isdigit():
            spaced = piece[0] == " "  # BPE splits the space off digits: one token more
            total += -(-(len(piece) - spaced) // 3) + spaced
        elif first == "\n":
            total += len(piece)
        elif piece.isspace():
            ascii_spaces = sum(1 for ch in piece if ch.isascii())
            wide = sum(len(ch.encode("utf-8")) for ch in piece if not ch.isascii())
            # a run's last space is a piece of its own before a digit (module docstring)
            last = 1 if ascii_spaces >= 2 else 0
            total += -(-(ascii_spaces - last) // 4) + last + wide
        elif first.isascii():
            total += 1
        else:
            total += len(first.encode("utf-8", "surrogatepass"))
    return total
