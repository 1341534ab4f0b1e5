"""General features of an edited note for a learned contradiction decision (tenth pass).

Why: nine passes of hand-written readings (``engram.lifecycle.contradictions``) each gained on
the repositories whose misses they were written from and far less on unseen ones
(docs/lifecycle.md, "Held-out 7, scored once"). These features describe an edit by what
*kind* of token changed — a number, a version, a date, a quoted string, a code name, a truth
or empty value, a negation or modal, a state, a table cell, one word swapped for another in
the same slot — and where (after a value cue, in a long list), whatever the phrasing, so a
regression fitted on every labelled dev pair (``contradiction_combine.py --features edit``)
can be tried as a *general* decision. Cheap by design (one ``difflib`` pass, a few regular
expressions), so it could run on every candidate pair of a ``remember``; the CV did not
justify shipping it (docs/lifecycle.md, "The tenth pass"), so it lives with the scripts.

:func:`edit_gate` is the subject gate such a decision would get in the product: the pair is
on one subject as for the rules' flip and value readers, and no earlier reading has set it
aside (a spelling fix, words only added, a plan against today's state).
"""

from __future__ import annotations

import difflib
import math
import re

__all__ = ["FEATURES", "edit_features", "edit_gate"]

#: the order of :func:`edit_features`' values (the fitted weights follow it)
FEATURES = (
    "kind_polarity",
    "kind_opposite",
    "kind_value",
    "kind_flip",
    "kind_other",
    "log_changed",
    "changed_share",
    "kept_ratio",
    "insert_only",
    "delete_only",
    "spans",
    "one_for_one",
    "log_length",
    "number_swapped",
    "version_swapped",
    "number_changed",
    "date_changed",
    "quoted_swapped",
    "literal_swapped",
    "truth_changed",
    "negation_changed",
    "modal_changed",
    "state_changed",
    "order_changed",
    "opposite_swapped",
    "default_near",
    "value_slot",
    "table_cell",
    "long_list",
    "code_changed",
    "word_swapped",
    "function_words_only",
    "first_change_at",
    "cosine",
    "no_cosine",
)

_TOKEN = re.compile(r"\"[^\"\n]{1,30}\"|'[^'\n]{1,30}'|[a-z0-9_][\w.+/-]*|[=|]")
_DIGIT = re.compile(r"\d")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+|^v\d+$")
_NUMBER = re.compile(r"^\d")
_MONTHS = frozenset(
    {"january", "february", "march", "april", "june", "july", "august", "september",
     "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
     "sept", "oct", "nov", "dec"}
)  # fmt: skip
_YEAR_OR_DATE = re.compile(r"^(?:19|20)\d\d(?:-\d\d(?:-\d\d)?)?$")
_LITERALS = {
    **dict.fromkeys(("true", "yes", "on", "enabled"), "true"),
    **dict.fromkeys(("false", "no", "off", "disabled"), "false"),
    **dict.fromkeys(("none", "null", "undefined", "nil", "unset"), "null"),
}
_TRUTH_WORDS = frozenset(_LITERALS) | {"enable", "disable", "enables", "disables"}
_NEGATIONS = frozenset(
    {"not", "no", "never", "cannot", "can't", "won't", "don't", "doesn't", "isn't", "aren't",
     "dont", "doesnt", "isnt", "cant", "wont", "without", "nor", "neither", "avoid"}
)  # fmt: skip
_MODALS = frozenset(
    {"must", "should", "may", "might", "can", "could", "will", "would", "shall", "required",
     "optional", "recommended", "mandatory"}
)  # fmt: skip
_STATES = frozenset(
    {"deprecated", "removed", "deleted", "experimental", "stable", "unstable", "obsolete",
     "supported", "unsupported", "legacy", "beta", "alpha"}
)  # fmt: skip
_ORDER = frozenset(
    {"before", "after", "always", "never", "only", "minimum", "maximum", "least", "most",
     "min", "max", "first", "last", "earlier", "later", "above", "below", "higher", "lower"}
)  # fmt: skip
_OPPOSITES = (
    ("enable", "disable"), ("enabled", "disabled"), ("true", "false"), ("on", "off"),
    ("sync", "async"), ("allow", "deny"), ("before", "after"), ("increase", "decrease"),
    ("add", "remove"), ("always", "never"), ("required", "optional"), ("include", "exclude"),
    ("public", "private"), ("mutable", "immutable"), ("safe", "unsafe"), ("start", "end"),
    ("start", "stop"), ("open", "close"), ("upper", "lower"), ("first", "last"),
    ("min", "max"), ("minimum", "maximum"), ("inside", "outside"), ("up", "down"),
    ("accept", "reject"), ("keep", "drop"), ("blocking", "nonblocking"), ("yes", "no"),
    ("higher", "lower"), ("more", "less"), ("older", "newer"), ("supported", "unsupported"),
)  # fmt: skip
_OPPOSITE_OF = {a: b for a, b in _OPPOSITES} | {b: a for a, b in _OPPOSITES}
_DEFAULTS = frozenset({"default", "defaults", "defaulted"})
#: what stands right before a value: "is 30", "to 4.9", "= 2", "returns null", "default: x"
_SLOT_CUES = frozenset(
    {"is", "are", "was", "be", "to", "at", "of", "=", "default", "defaults", "return",
     "returns", "returned", "uses", "use", "using", "set", "requires", "require", "version",
     "limit", "than", "with", "from"}
)  # fmt: skip
_FUNCTION_WORDS = frozenset(
    {"a", "an", "the", "this", "that", "these", "those", "is", "are", "was", "were", "be",
     "been", "it", "its", "of", "in", "on", "at", "to", "for", "from", "by", "with", "as",
     "or", "and", "if", "when", "so", "than", "then", "there", "here", "which", "who", "you",
     "we", "they", "our", "your", "their", "also", "just", "very", "all", "any", "each",
     "some", "into", "about", "|", "="}
)  # fmt: skip
#: a code name as written in the note (before lower-casing): backticks, snake_case,
#: camelCase, dotted names, options
_CODE = re.compile(
    r"`[^`\n]{1,40}`|\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+|\b[a-z]+_[a-z0-9_]+|"
    r"\b[a-z]+[A-Z]\w*|\b[A-Z][a-z0-9]+[A-Z]\w*|(?<![\w-])--?[a-z][\w-]+"
)
_ISSUE_REF = re.compile(r"(?<![\w&])#\d+\b")
#: how many numbers make a note a list of them (a dependency list, tested versions)
LIST_NUMBERS = 6


def _tokens(text: str) -> list[str]:
    lowered = _ISSUE_REF.sub(" ", text.lower().replace("`", " ").replace("*", " "))
    return [t.rstrip(".,:;)") or t for t in _TOKEN.findall(lowered)]


def _code_names(text: str) -> frozenset[str]:
    return frozenset(m.strip("`").lower() for m in _CODE.findall(text))


def _is_word(token: str) -> bool:
    return token.isalpha() and token not in _FUNCTION_WORDS


def _value_class(token: str) -> str | None:
    """What a literal token means as a value ("true", "null", "num:3"), None for a word."""
    if token[0] in "\"'":
        inner = token.strip("\"'")
        return _LITERALS.get(inner, "str:" + inner)
    if _NUMBER.match(token):
        return "num:" + token
    return _LITERALS.get(token)


def edit_features(old: str, new: str, kind: str, cosine: float | None) -> list[float]:
    """The values of :data:`FEATURES` for the edit ``old`` -> ``new``. ``kind`` is the rule
    reader that flagged the pair (``""`` for none), ``cosine`` the embeddings' (or None)."""
    a, b = _tokens(old), _tokens(new)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    changed: list[str] = []
    inserted = deleted = spans = one_for_one = 0
    number_swapped = version_swapped = quoted_swapped = literal_swapped = 0.0
    opposite_swapped = word_swapped = value_slot = default_near = 0.0
    first_change = None
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        if op == "equal":
            continue
        spans += 1
        left, right = a[i1:i2], b[j1:j2]
        changed += left + right
        inserted += op == "insert"
        deleted += op == "delete"
        if first_change is None:
            first_change = i1 / max(len(a), 1)
        near = a[max(0, i1 - 3) : i2 + 2] + b[max(0, j1 - 3) : j2 + 2]
        default_near = max(default_near, float(bool(_DEFAULTS.intersection(near))))
        if op != "replace":
            continue
        before = set(a[max(0, i1 - 2) : i1]) & set(b[max(0, j1 - 2) : j1])
        if before & _SLOT_CUES:
            value_slot = 1.0
        content_left = [t for t in left if t not in _FUNCTION_WORDS]
        content_right = [t for t in right if t not in _FUNCTION_WORDS]
        if len(content_left) == 1 and len(content_right) == 1:
            one_for_one += 1
            x, y = content_left[0], content_right[0]
            if _OPPOSITE_OF.get(x) == y:
                opposite_swapped = 1.0
            elif _is_word(x) and _is_word(y) and x[:4] != y[:4]:
                word_swapped = 1.0  # "a queue" / "an event": another word in the same slot
        if any(_NUMBER.match(t) for t in left) and any(_NUMBER.match(t) for t in right):
            number_swapped = 1.0
        if any(_VERSION.match(t) for t in left) and any(_VERSION.match(t) for t in right):
            version_swapped = 1.0
        if any(t[0] in "\"'" for t in left) and any(t[0] in "\"'" for t in right):
            quoted_swapped = 1.0
        # a value for a value of another meaning: "true" / "false", "0" / "null", "1" / "2"
        lit_left = {_value_class(t) for t in content_left}
        lit_right = {_value_class(t) for t in content_right}
        if lit_left and lit_right and None not in lit_left | lit_right and lit_left != lit_right:
            literal_swapped = 1.0
    words = set(changed)
    longest = max(len(a), len(b), 1)
    table = old.count("|") >= 2 and new.count("|") == old.count("|")
    listed = min(len(_DIGIT_RUNS.findall(old)), len(_DIGIT_RUNS.findall(new))) >= LIST_NUMBERS
    negations_a = sum(t in _NEGATIONS or t.endswith("n't") for t in a)
    negations_b = sum(t in _NEGATIONS or t.endswith("n't") for t in b)
    kinds = ("polarity", "opposite", "value", "flip")
    return [
        *(float(kind == k) for k in kinds),
        float(bool(kind) and kind not in kinds),
        math.log1p(len(changed)),
        len(changed) / (len(a) + len(b) or 1),
        matcher.ratio(),
        float(spans > 0 and inserted == spans),
        float(spans > 0 and deleted == spans),
        float(min(spans, 5)),
        float(spans > 0 and one_for_one == spans),
        math.log(longest),
        number_swapped,
        version_swapped,
        float(any(_DIGIT.search(w) for w in words)),
        float(bool(words & _MONTHS) or any(_YEAR_OR_DATE.match(w) for w in words)),
        quoted_swapped,
        literal_swapped,
        float(bool(words & _TRUTH_WORDS)),
        float(negations_a != negations_b),
        float(bool(words & _MODALS)),
        float(bool(words & _STATES)),
        float(bool(words & _ORDER)),
        opposite_swapped,
        default_near,
        value_slot,
        float(table),
        float(listed),
        float(_code_names(old) != _code_names(new)),
        word_swapped,
        float(bool(words) and words <= _FUNCTION_WORDS),
        1.0 if first_change is None else first_change,
        0.0 if cosine is None else float(cosine),
        float(cosine is None),
    ]


_DIGIT_RUNS = re.compile(r"\d+(?:[.,]\d+)*")


def edit_gate(old: str, new: str, cosine: float | None) -> bool:
    """Whether ``screen_contradictions`` would read the pair ``old`` / ``new`` (texts, no
    anchors) with a learned decision: on one subject (``MIN_OVERLAP_FOR_FLIPS`` of the content
    words or an embedding cosine >= ``CLOSE_COSINE``), not a spelling fix, not words only
    added, not a plan against today's state."""
    from engram.lifecycle import contradictions as c

    readings = c.SHIPPED  # the readings as shipped (the gate is scored against main's detector)
    if readings.spelling_fixes and c._spelling_fix(old, new):
        return False
    if readings.only_added and c._only_added(old, new, readings):
        return False
    if bool(c._PLANNED.search(old)) != bool(c._PLANNED.search(new)):
        return False
    mine, theirs = c._read(new, readings), c._read(old, readings)
    overlap = c._overlap(c._canonical(mine.words), c._canonical(theirs.words))
    return overlap >= c.MIN_OVERLAP_FOR_FLIPS or (cosine is not None and cosine >= c.CLOSE_COSINE)
