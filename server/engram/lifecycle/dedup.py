"""Near-duplicate detection and merging (docs/lifecycle.md).

Agents and people say the same thing many times. Instead of storing copies (which crowd
out other memories in a token budget), a new memory that is nearly the same as an existing
one of the same type is merged into it and the existing one gains confidence: being
re-learned is evidence. Four guards keep the merge honest: the types must match, a
sentence that differs by a negation ("do X" / "never do X", "… does nothing") is never a
duplicate, neither is one that states other numbers ("album 3" / "album 4", "30s" /
"90s"), and a merge by meaning alone (the embedding's cosine, with the words far apart)
needs the text it drops to say nothing the kept text lacks: a merge keeps one text, so a
new claim with words of its own would be lost (docs/lifecycle.md, "Near-duplicates").
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import attrs

from engram.model import CodeAnchor, Memory, utcnow

#: Confidence gained when a memory is learned again, and its ceiling (docs/lifecycle.md).
MERGE_CONFIDENCE_BUMP = 0.05
CONFIDENCE_CAP = 0.95

_NEGATIONS = frozenset(
    {
        "not",
        "never",
        "no",
        "none",
        "nothing",
        "nobody",
        "nowhere",
        "neither",
        "nor",
        "don't",
        "dont",
        "doesn't",
        "isn't",
        "avoid",
        "without",
        "cannot",
    }
)
#: Words that carry no claim of their own: a dropped text made only of these and of the
#: kept text's words adds nothing (:func:`_says_nothing_new`).
_FILLER_WORDS = (
    "a an the of to in on at by for from with via and or but so then than as is are was "
    "were be been being it its this that these those there here do does did done will "
    "would should shall can could may might must has have had always also just very really "
    "please note we you they i our your their"
)
_FILLER = frozenset(_FILLER_WORDS.split())
#: The share of the dropped text's own words the kept text must hold for a merge by
#: meaning alone: all of up to four words, then one word in five may differ.
COVERAGE_FLOOR = 0.8
_WORD = re.compile(r"[a-z0-9_']+")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")


def normalise_text(text: str) -> str:
    return " ".join(text.lower().split())


def _negations(text: str) -> frozenset[str]:
    words = set(_WORD.findall(text.lower()))
    return frozenset(w for w in words if w in _NEGATIONS or w.endswith("n't"))


def _numbers(text: str) -> frozenset[str]:
    """The numbers a note states ("album 3", "30s", "4.9"): notes that differ in them say
    different things however alike the rest of the text is."""
    return frozenset(_NUMBER.findall(text.lower()))


def _stem(word: str) -> str:
    """A crude English stem ("rotating", "rotates", "rotated" → "rotat"): enough to see
    that two texts share a word, not a linguistic claim."""
    for suffix in ("ing", "ed", "es", "s"):
        if len(word) > len(suffix) + 2 and word.endswith(suffix):
            return word[: -len(suffix)]
    return word


def _claim_words(text: str) -> set[str]:
    """The stemmed words of ``text`` that carry its claim (identifiers split at ``_``)."""
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {_stem(w) for w in words if w not in _FILLER}


def _says_nothing_new(dropped: str, kept: str) -> bool:
    """Whether ``dropped`` (the text a merge would lose) says nothing ``kept`` lacks: at
    least :data:`COVERAGE_FLOOR` of its own words are in ``kept``."""
    own = _claim_words(dropped)
    if not own:
        return True
    return len(own & _claim_words(kept)) / len(own) >= COVERAGE_FLOOR


def text_ratio(a: str, b: str) -> float:
    """rapidfuzz ``ratio`` on normalised text, 0..100 (imported lazily: it is C code)."""
    from rapidfuzz import fuzz

    return float(fuzz.ratio(normalise_text(a), normalise_text(b)))


@attrs.frozen
class DuplicateMatch:
    memory: Memory
    ratio: float
    cosine: float | None

    @property
    def reason(self) -> str:
        if self.cosine is not None:
            return f"text ratio {self.ratio:.0f}, cosine {self.cosine:.3f}"
        return f"text ratio {self.ratio:.0f}"


def find_duplicate(
    new: Memory,
    candidates: Iterable[tuple[Memory, float | None]],
    *,
    ratio_threshold: float,
    cosine_threshold: float,
    keeps_own_text: Callable[[Memory], bool] | None = None,
) -> DuplicateMatch | None:
    """The best existing memory ``new`` duplicates, or ``None``.

    ``candidates`` are (memory, cosine or None) pairs from keyword and dense search.
    Deprecated memories never absorb a new one (the user said they were wrong).
    ``keeps_own_text``: whether a merge into that memory keeps its text whatever ``new``
    says (``lifecycle.trust.keeps_own_text``: a restatement that waits in review), so the
    text a merge by meaning drops is ``new``'s; else the one :func:`merge_memories` drops.
    """
    best: DuplicateMatch | None = None
    new_neg = _negations(new.content)
    new_numbers = _numbers(new.content)
    for existing, cosine in candidates:
        if existing.id == new.id or existing.type != new.type or existing.deprecated:
            continue
        if _negations(existing.content) != new_neg or _numbers(existing.content) != new_numbers:
            continue
        ratio = text_ratio(new.content, existing.content)
        alike = cosine is not None and cosine >= cosine_threshold
        if alike and ratio < ratio_threshold:
            # a merge keeps one text: the one it drops must add nothing
            own = keeps_own_text is not None and keeps_own_text(existing)
            new_kept = _new_text_kept(existing, new) and not own
            kept, dropped = (new, existing) if new_kept else (existing, new)
            alike = _says_nothing_new(dropped.content, kept.content)
        if ratio >= ratio_threshold or alike:
            score = max(ratio / 100.0, cosine or 0.0)
            best_score = -1.0 if best is None else max(best.ratio / 100.0, best.cosine or 0.0)
            if score > best_score:
                best = DuplicateMatch(existing, ratio, cosine)
    return best


def _union(first: Sequence[str], second: Sequence[str]) -> list[str]:
    seen: dict[str, None] = dict.fromkeys(first)
    seen.update(dict.fromkeys(second))
    return list(seen)


def _anchor_key(anchor: CodeAnchor) -> tuple[str, str | None, int | None]:
    return (anchor.file, anchor.symbol, anchor.start_line)


def _new_text_kept(existing: Memory, new: Memory) -> bool:
    """Whether a merge keeps ``new``'s text: the longer one wins (a re-statement usually
    adds detail), the existing one on a tie. :func:`merge_memories` keeps it, and
    :func:`find_duplicate` checks that the other one adds nothing."""
    return len(new.content) > len(existing.content)


def merge_memories(existing: Memory, new: Memory, *, now: datetime | None = None) -> Memory:
    """``existing`` updated with what ``new`` adds; the id and history of ``existing`` stay.

    Content: the longer text wins (a re-statement usually adds detail); tags, files,
    modules and anchors are unioned; confidence rises by :data:`MERGE_CONFIDENCE_BUMP`
    (capped, never lowered); the new session is recorded as a confirmation.
    """
    now = now or utcnow()
    anchors = {_anchor_key(a): a for a in existing.anchors}
    for anchor in new.anchors:
        anchors.setdefault(_anchor_key(anchor), anchor)
    sessions = list(existing.provenance.confirmed_by_sessions)
    if new.provenance.session_id and new.provenance.session_id not in sessions:
        sessions.append(new.provenance.session_id)
    bumped = max(
        existing.confidence, min(CONFIDENCE_CAP, existing.confidence + MERGE_CONFIDENCE_BUMP)
    )
    bumped = max(bumped, min(new.confidence, CONFIDENCE_CAP))
    content = new.content if _new_text_kept(existing, new) else existing.content
    merged_extra = {**new.extra, **existing.extra}
    merged_extra["merge_count"] = int(existing.extra.get("merge_count", 0)) + 1
    return attrs.evolve(
        existing,
        content=content,
        citation_text=existing.citation_text if content == existing.content else "",
        tags=_union(existing.tags, new.tags),
        related_files=_union(existing.related_files, new.related_files),
        related_modules=_union(existing.related_modules, new.related_modules),
        anchors=list(anchors.values()),
        confidence=bumped,
        provenance=attrs.evolve(existing.provenance, confirmed_by_sessions=sessions),
        stale_at=None,
        updated_at=now,
        extra=merged_extra,
    )
