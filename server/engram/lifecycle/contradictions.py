"""Contradiction scanning without an LLM (004 §4, V5 §15): two memories about the same thing
that cannot both hold.

The seeds ask an LLM "are these contradictory?"; Engram must work offline, so it reads
the three shapes a contradiction between two short technical notes takes:

* **polarity**: the same claim, once negated: "call ``flush()`` before ``close()``" /
  "never call ``flush()`` before ``close()``". Negation is read with its scope (the
  words after "not", "never", "don't", "avoid", "instead of", "rather than" … up to
  the next clause), so "use logging instead of print" and "don't use print, use
  logging" agree;
* **opposites**: one word swapped for its opposite, the rest the same ("enable the
  cache in tests" / "disable the cache in tests"; sync/async, allow/deny, before/after,
  always/never …);
* **values**: the same setting with a different number or version ("the job timeout
  is 30 s" / "the job timeout is 90 s", "pin lxml to 4.9" / "pin lxml to 5.1").

A pair is only compared when it is about the same subject: the content words of the
shorter note are mostly in the longer one (containment ≥ ``MIN_OVERLAP``), or their
embeddings are close and they still share a good part of their words, and anchored notes
share a file. Kinds of memory that record what happened (work state, outcomes,
observations, calibration) are never compared: two sessions may well differ.

What is found is never resolved silently (V5: surface both, with attribution): the new
memory is linked to the old one by a ``conflicts_with`` relation and goes to review; the
user keeps one (``engram confirm``) and flags the other.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

import attrs

from engram.model import Memory, MemoryType

__all__ = ["Contradiction", "find_contradictions"]

#: Containment of the shorter note's content words in the other's.
MIN_OVERLAP = 0.6
#: With an embedding this close, a lower word overlap still means "same subject".
CLOSE_COSINE = 0.8
MIN_OVERLAP_WHEN_CLOSE = 0.4

#: Memories that record events, not claims: never contradictions of each other.
UNCOMPARED_TYPES: frozenset[MemoryType] = frozenset(
    {
        MemoryType.WORK_STATE,
        MemoryType.WORK_UNIT_OUTCOME,
        MemoryType.E2E_OBSERVATION,
        MemoryType.TASK_CALIBRATION,
        MemoryType.CONTEXT_COST,
        MemoryType.PREFETCH_PATTERN,
    }
)

_NEGATION_WORDS = frozenset(
    {
        "not", "no", "never", "dont", "don't", "doesnt", "doesn't", "isnt", "isn't",
        "cannot", "cant", "can't", "wont", "won't", "shouldnt", "shouldn't", "mustnt",
        "mustn't", "avoid", "without", "stop", "nor", "neither",
    }
)  # fmt: skip
_NEGATION_PHRASES = re.compile(r"\b(?:instead\s+of|rather\s+than|in\s+place\s+of)\b")
_CLAUSE_END = re.compile(r"[,;:!?()\n]|\.(?:\s|$)|\b(?:but|and|then|so|because|while|whereas)\b")
#: How many words after a negation it covers (within its clause).
NEGATION_SCOPE = 4

_OPPOSITES = [
    ("enable", "disable"), ("enabled", "disabled"), ("true", "false"), ("on", "off"),
    ("sync", "async"), ("synchronous", "asynchronous"), ("allow", "deny"),
    ("allowed", "denied"), ("before", "after"), ("increase", "decrease"),
    ("add", "remove"), ("always", "never"), ("must", "mustn't"), ("required", "optional"),
    ("include", "exclude"), ("public", "private"), ("mutable", "immutable"),
    ("safe", "unsafe"), ("works", "fails"), ("fixed", "broken"), ("start", "stop"),
    ("open", "close"), ("lock", "unlock"), ("upper", "lower"), ("first", "last"),
    ("min", "max"), ("minimum", "maximum"), ("inside", "outside"), ("up", "down"),
    ("accept", "reject"), ("keep", "drop"), ("blocking", "nonblocking"),
]  # fmt: skip
_OPPOSITE_OF: dict[str, str] = {a: b for a, b in _OPPOSITES} | {b: a for a, b in _OPPOSITES}

_STOP = frozenset(
    {
    "a", "an", "the", "this", "that", "these", "those", "is", "are", "was", "were", "be",
    "been", "being", "it", "its", "of", "in", "on", "at", "to", "for", "from", "by", "with",
    "as", "or", "if", "when", "while", "we", "you", "they", "i", "he", "she", "our", "your",
    "their", "my", "me", "us", "them", "do", "does", "did", "has", "have", "had", "will",
    "would", "should", "can", "could", "may", "might", "must", "shall", "also", "just",
    "only", "very", "really", "so", "such", "than", "then", "there", "here", "what",
    "which", "who", "whom", "whose", "why", "how", "all", "any", "each", "every", "some",
    "more", "most", "other", "into", "over", "under", "about", "again", "once",
    }
)  # fmt: skip
#: "don't use print" / "use logging instead of print": a flipped generic verb alone is no
#: contradiction, what it applies to must flip too
_GENERIC_VERBS = frozenset(
    {"use", "call", "run", "make", "set", "get", "put", "take", "try", "let", "go", "do"}
)
_TOKEN = re.compile(r"[a-z0-9][a-z0-9_.']*[a-z0-9]|[a-z0-9]")
_HAS_DIGIT = re.compile(r"\d")
#: A number is a setting's value when one of these comes just before it ("the timeout is
#: 30s", "pin lxml to 4.9", "starts at 02:00", "uses Node 18"); after anything else it
#: names which thing is meant ("album 3", "step 12"), and two notes about album 3 and
#: album 4 do not contradict each other.
_VALUE_CUES = frozenset(
    {
        "is", "are", "was", "be", "to", "at", "after", "within", "under", "over", "=",
        "of", "uses", "use", "using", "set", "sets", "equals", "takes", "needs", "version",
        "limit", "max", "min", "maximum", "minimum", "every", "than",
    }
)  # fmt: skip


@attrs.frozen
class Contradiction:
    """``memory`` (an existing one) contradicts the new memory; ``kind`` says how."""

    memory: Memory
    kind: str  # "polarity" | "opposite" | "value"
    reason: str
    overlap: float


@attrs.frozen
class _Reading:
    """A note read for comparison: content words, which are negated, numbers."""

    words: frozenset[str]
    negated: frozenset[str]
    asserted: frozenset[str]
    values: frozenset[str]


@functools.lru_cache(maxsize=4096)
def _read(text: str) -> _Reading:
    """Content words, which of them are negated or asserted, and the numbers (cached: the
    same candidates come back for every memory of a batch)."""
    lowered = _NEGATION_PHRASES.sub(" not ", text.lower().replace("’", "'"))
    words: set[str] = set()
    negated: set[str] = set()
    asserted: set[str] = set()
    values: set[str] = set()
    for clause in _CLAUSE_END.split(lowered):
        if not clause or not clause.strip():
            continue
        tokens = _TOKEN.findall(clause)
        scope = 0
        for position, token in enumerate(tokens):
            bare = token.rstrip(".")
            if bare in _NEGATION_WORDS or bare.endswith("n't"):
                scope = NEGATION_SCOPE
                continue
            if bare in _STOP:
                continue
            bare = _stem(bare)
            if _HAS_DIGIT.search(bare) and _VALUE_CUES.intersection(
                tokens[max(0, position - 2) : position]
            ):
                values.add(bare)  # a setting's value ("is 30s", "to 4.9"), not an index
            words.add(bare)
            if scope > 0:
                negated.add(bare)
                scope -= 1
            else:
                asserted.add(bare)
    return _Reading(frozenset(words), frozenset(negated), frozenset(asserted), frozenset(values))


def _stem(word: str) -> str:
    """ "needs" and "need", "tokens" and "token" are one word here (not "class"/"status")."""
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def _canonical(words: frozenset[str]) -> frozenset[str]:
    return frozenset(min(w, _OPPOSITE_OF[w]) if w in _OPPOSITE_OF else w for w in words)


def _files(memory: Memory) -> set[str]:
    return set(memory.files)


def _overlap(a: frozenset[str], b: frozenset[str]) -> float:
    small = min(len(a), len(b))
    return len(a & b) / small if small else 0.0


def find_contradictions(
    new: Memory,
    candidates: Iterable[tuple[Memory, float | None]],
    *,
    limit: int = 3,
) -> list[Contradiction]:
    """Existing memories (from ``candidates``: memory, cosine or None) ``new`` contradicts."""
    if new.type in UNCOMPARED_TYPES:
        return []
    mine = _read(new.content)
    my_files = _files(new)
    found: dict[str, Contradiction] = {}
    for other, cosine in candidates:
        if other.id == new.id or other.deprecated or other.type in UNCOMPARED_TYPES:
            continue
        if other.id in found:
            continue
        theirs_files = _files(other)
        if my_files and theirs_files and not my_files & theirs_files:
            continue  # different places may have different rules
        theirs = _read(other.content)
        # "enable the cache" / "disable the cache" are about the same subject: opposites
        # count as one word when measuring how much the notes share
        overlap = _overlap(_canonical(mine.words), _canonical(theirs.words))
        close = cosine is not None and cosine >= CLOSE_COSINE
        if overlap < MIN_OVERLAP and not (close and overlap >= MIN_OVERLAP_WHEN_CLOSE):
            continue
        verdict = _judge(mine, theirs)
        if verdict is not None:
            kind, reason = verdict
            found[other.id] = Contradiction(other, kind, reason, round(overlap, 3))
    ranked = sorted(found.values(), key=lambda c: -c.overlap)
    return ranked[:limit]


def _judge(a: _Reading, b: _Reading) -> tuple[str, str] | None:
    # words only one side has (numbers aside): when both sides have some, each note is
    # qualified its own way ("in integration tests" / "in unit tests", "in production" /
    # "in development") and both may hold
    qual_a = (a.words - b.words) - a.values
    qual_b = (b.words - a.words) - b.values
    # opposites: a word in one only whose opposite is in the other only, nothing else apart
    for word in sorted(qual_a):
        opposite = _OPPOSITE_OF.get(word)
        apart = opposite is not None and opposite in qual_b
        if apart and not (qual_a - {word} and qual_b - {opposite or ""}):
            return "opposite", f"{word} vs {opposite}"
    if qual_a and qual_b:
        return None
    # polarity: a word one note negates and the other asserts (and does not negate)
    flipped = sorted(
        ((a.negated - a.asserted) & (b.asserted - b.negated)
        | (b.negated - b.asserted) & (a.asserted - a.negated))
        - _GENERIC_VERBS
    )  # fmt: skip
    if flipped:
        return "polarity", f"one says not/never about: {', '.join(flipped[:3])}"
    # values: the same words around different numbers or versions
    if a.values and b.values and a.values != b.values:
        rest_a, rest_b = a.words - a.values, b.words - b.values
        if rest_a and rest_b and _overlap(rest_a, rest_b) >= 0.75:
            left = ", ".join(sorted(a.values - b.values)[:2])
            right = ", ".join(sorted(b.values - a.values)[:2])
            if left and right:
                return "value", f"{left} vs {right}"
    return None
