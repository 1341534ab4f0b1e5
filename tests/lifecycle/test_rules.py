"""Pure lifecycle rules: dedup, corrections, access trust, pruning, rule-file parsing."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from engram.lifecycle import (
    classify_rule,
    export_memories,
    find_duplicate,
    merge_memories,
    parse_import,
    parse_rules,
    plan_prune,
)
from engram.model import (
    CodeAnchor,
    Memory,
    MemoryScope,
    MemorySource,
    MemoryType,
    Provenance,
)

NOW = datetime(2025, 6, 1, tzinfo=UTC)


def mem(content: str = "a fact", **kw) -> Memory:  # type: ignore[no-untyped-def]
    kw.setdefault("created_at", NOW)
    kw.setdefault("updated_at", NOW)
    kw.setdefault("last_accessed_at", NOW)
    return Memory(content=content, **kw)


def test_find_duplicate_by_ratio_or_cosine() -> None:
    new = mem("Always run migrations before tests", type=MemoryType.PATTERN)
    same = mem("always run migrations before tests!", type=MemoryType.PATTERN)
    other_type = mem("Always run migrations before tests", type=MemoryType.GOTCHA)
    far = mem("completely different words here", type=MemoryType.PATTERN)
    reworded = mem(
        "Before running tests, always run the database migrations", type=MemoryType.PATTERN
    )
    match = find_duplicate(
        new, [(other_type, None), (same, None)], ratio_threshold=90, cosine_threshold=0.92
    )
    assert match is not None and match.memory is same
    assert find_duplicate(new, [(far, 0.5)], ratio_threshold=90, cosine_threshold=0.92) is None
    by_vector = find_duplicate(new, [(reworded, 0.97)], ratio_threshold=90, cosine_threshold=0.92)
    assert by_vector is not None and by_vector.cosine == 0.97
    deprecated = mem("Always run migrations before tests", type=MemoryType.PATTERN, deprecated=True)
    assert (
        find_duplicate(new, [(deprecated, 1.0)], ratio_threshold=90, cosine_threshold=0.9) is None
    )


def test_a_merge_by_meaning_never_drops_words_of_its_own() -> None:
    """A new user's walk (stop 31, pallets/itsdangerous): "derive key rotates via salt"
    merged into "… rotating salt does nothing then" at cosine 0.968 and was kept nowhere:
    a merge keeps one text, so the one it drops must say nothing the other lacks."""
    old = mem(
        "derive_key with key_derivation='none' uses the secret key as-is: "
        "rotating salt does nothing then"
    )
    new = mem("derive key rotates via salt")
    assert find_duplicate(new, [(old, 0.968)], ratio_threshold=90, cosine_threshold=0.92) is None
    kept_longer = mem("The cache lives in ~/.cache/app and is cleared on every upgrade")
    other_claim = mem("The cache is kept across upgrades")
    assert (
        find_duplicate(other_claim, [(kept_longer, 0.95)], ratio_threshold=90, cosine_threshold=0.9)
        is None
    )
    # the far texts of a merge by meaning: the new one adds nothing the stored one lacks
    restated = mem("the cache is cleared on upgrade")
    match = find_duplicate(
        restated, [(kept_longer, 0.95)], ratio_threshold=90, cosine_threshold=0.9
    )
    assert match is not None and match.memory is kept_longer
    # and the other way round: a longer new text replaces a stored one it covers
    longer_new = mem("The cache lives in ~/.cache/app and is cleared on every upgrade of the app")
    short_old = mem("cache cleared on upgrade")
    match = find_duplicate(
        longer_new, [(short_old, 0.95)], ratio_threshold=90, cosine_threshold=0.9
    )
    assert match is not None and match.memory is short_old


def test_negation_is_never_a_duplicate() -> None:
    new = mem("Do not cache the session object between requests")
    old = mem("Do cache the session object between requests")
    assert find_duplicate(new, [(old, 0.99)], ratio_threshold=80, cosine_threshold=0.9) is None


def test_merge_unions_and_bumps() -> None:
    existing = mem(
        "Short fact",
        tags=["a"],
        related_files=["x.py"],
        anchors=[CodeAnchor("x.py", "f", 1, 2)],
        confidence=0.7,
        stale_at=NOW,
    )
    new = mem(
        "Short fact with more detail",
        tags=["a", "b"],
        related_files=["y.py"],
        anchors=[CodeAnchor("x.py", "f", 1, 2), CodeAnchor("y.py")],
        provenance=Provenance(session_id="s9"),
    )
    merged = merge_memories(existing, new, now=NOW + timedelta(days=1))
    assert merged.id == existing.id
    assert merged.content == "Short fact with more detail"
    assert merged.citation_text == "Short fact with more detail"
    assert merged.tags == ["a", "b"] and merged.related_files == ["x.py", "y.py"]
    assert [a.file for a in merged.anchors] == ["x.py", "y.py"]
    assert merged.confidence == pytest.approx(0.75)
    assert merged.provenance.confirmed_by_sessions == ["s9"]
    assert merged.stale_at is None and merged.extra["merge_count"] == 1
    assert merge_memories(mem(confidence=0.93), mem(), now=NOW).confidence == pytest.approx(0.95)
    assert merge_memories(mem(confidence=0.99), mem(), now=NOW).confidence == pytest.approx(0.99)


def test_prune_rules() -> None:
    old = NOW - timedelta(days=200)
    memories = {
        "decayed": mem("g", type=MemoryType.GOTCHA, last_accessed_at=old),  # 60d half-life
        "pinned": mem("p", type=MemoryType.GOTCHA, last_accessed_at=old, pinned=True),
        "decision": mem("d", type=MemoryType.DECISION, last_accessed_at=old),  # never decays
        "low": mem(
            "l",
            type=MemoryType.PREFERENCE,
            confidence=0.1,
            scope=MemoryScope.GLOBAL,
            last_accessed_at=NOW - timedelta(days=61),
        ),
        "verified_low": mem(
            "v",
            type=MemoryType.PREFERENCE,
            confidence=0.1,
            user_verified=True,
            last_accessed_at=NOW - timedelta(days=61),
        ),
        "old_deprecated": mem(
            "o", deprecated=True, extra={"deprecated_at": (NOW - timedelta(days=31)).isoformat()}
        ),
        "new_deprecated": mem(
            "n", deprecated=True, extra={"deprecated_at": (NOW - timedelta(days=2)).isoformat()}
        ),
        "commit_gone": mem(
            "c",
            type=MemoryType.MODULE_INSIGHT,
            source=MemorySource.COMMIT_AUTO,
            related_files=["gone.py"],
        ),
        "user_gone": mem("u", anchors=[CodeAnchor("gone.py")]),
        "session_old": mem("s", scope=MemoryScope.SESSION, created_at=NOW - timedelta(days=8)),
        "session_new": mem("s2", scope=MemoryScope.SESSION, created_at=NOW - timedelta(days=6)),
    }
    by_id = {m.id: name for name, m in memories.items()}
    report = plan_prune(memories.values(), NOW, lambda f: f != "gone.py")
    deleted = {by_id[i] for i in report.deleted}
    # a vanished file never removes a memory, whoever made it (docs/trust.md): stale only
    assert deleted == {"low", "old_deprecated", "session_old"}
    assert {by_id[i] for i in report.deprecated} == {"decayed"}
    assert {by_id[i] for i in report.stale_marked} == {"user_gone", "commit_gone"}
    assert {by_id[m.id] for m in report.updated} == {"decayed", "user_gone", "commit_gone"}
    events = sorted(e.event for e in report.entries)
    assert events == ["decay", "delete", "delete", "delete", "file_gone", "file_gone"]


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("Never commit .env files", MemoryType.GOTCHA),
        ("Don't use print for logging", MemoryType.GOTCHA),
        ("Avoid global state", MemoryType.GOTCHA),
        ("Prefer composition", MemoryType.PREFERENCE),
        ("Always type-annotate public functions", MemoryType.PREFERENCE),
        ("Use ruff for formatting", MemoryType.PREFERENCE),
        ("We decided on SQLite for the graph", MemoryType.DECISION),
        ("Vectors live in LanceDB because it is embedded", MemoryType.DECISION),
        ("The server package is under server/", MemoryType.PATTERN),
    ],
)
def test_classify_rule(rule: str, expected: MemoryType) -> None:
    assert classify_rule(rule) is expected


def test_cursorrules_without_bullets_become_paragraph_memories(tmp_path) -> None:  # type: ignore[no-untyped-def]
    text = "You are an expert in Python.\n\nNever use bare except.\nLog the error instead.\n"
    parsed = parse_import(tmp_path / ".cursorrules", text)
    assert parsed.kind == "rules"
    assert [m.content for m in parsed.memories] == [
        "You are an expert in Python.",
        "Never use bare except. Log the error instead.",
    ]
    assert parsed.memories[1].type is MemoryType.GOTCHA
    assert parsed.memories[0].tags == ["cursorrules"]


def test_markdown_export_survives_html_comment_markers(tmp_path) -> None:  # type: ignore[no-untyped-def]
    tricky = mem("An arrow --> inside and <!-- a comment -->", type=MemoryType.PATTERN)
    text = export_memories([tricky], "md", now=NOW)
    parsed = parse_import(tmp_path / "x.md", text)
    assert parsed.kind == "markdown" and parsed.memories[0].content == tricky.content
    assert parse_rules("") == []
