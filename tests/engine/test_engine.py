"""The engine's own rules over an in-memory store: validation, redaction, dedup, trust."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import ClassVar

import pytest

from engram.app import Engine
from engram.app.doctor import doctor, stats
from engram.app.indexing import seed_workspace
from engram.app.maintenance import consolidate, prune
from engram.app.memories import (
    confirm,
    flag,
    for_file,
    forget,
    get,
    list_memories,
    pin,
    restore,
)
from engram.app.portability import export, import_file
from engram.app.recall import credit_session, record_access
from engram.app.remember import remember, remember_many
from engram.app.trust import audit_log
from engram.config import EmbedConfig, EngramConfig, SafetyConfig
from engram.errors import InvalidInput, NotFound
from engram.lifecycle import trust
from engram.model import CodeAnchor, CorrectionKind, MemorySource, MemoryType
from engram.workspace import Workspace, WorkspaceError


def test_search_marks_a_memory_whose_anchored_file_is_gone_stale(
    tmp_workspace: Workspace,
) -> None:
    """The engine gives the retriever its workspace's file check (nothing is probed on the
    store): on the real store, a memory on a deleted file comes back marked stale."""
    from engram.app.recall import search

    (tmp_workspace.root / "billing.py").write_text("def charge():\n    return 1\n")
    (tmp_workspace.root / "legacy.py").write_text("def pay():\n    return 2\n")
    real = Engine(tmp_workspace, EngramConfig(embed=EmbedConfig(model="none")))
    try:
        kept = remember(real, "charge() wants integer cents", file="billing.py").memory
        lost = remember(real, "pay() wants integer cents too", file="legacy.py").memory
        (tmp_workspace.root / "legacy.py").unlink()
        hits = {h.memory.id: h for h in search(real, "integer cents")}
        assert not hits[kept.id].stale
        assert hits[lost.id].stale and "legacy.py no longer exists" in hits[lost.id].reasons[0]
    finally:
        real.close()


def test_remember_stores_a_typed_anchored_memory(engine: Engine, fake_store, tmp_workspace):
    src = tmp_workspace.root / "auth.py"
    src.write_text("def login():\n    token = make()\n    return token\n", encoding="utf-8")
    result = remember(
        engine,
        "login() must refresh the token before the 24h expiry",
        type="gotcha",
        file=str(src),
        symbol="login",
        start_line=0,
        end_line=2,
        tags=["auth", "auth", " "],
    )
    memory = fake_store.get(result.memory.id)
    assert memory is not None and not result.merged and result.redactions == []
    assert memory.type is MemoryType.GOTCHA and memory.source is MemorySource.USER_TAUGHT
    anchor = memory.anchors[0]
    assert (anchor.file, anchor.symbol, anchor.start_line, anchor.end_line) == (
        "auth.py",
        "login",
        0,
        2,
    )
    assert anchor.content_hash is not None and len(anchor.content_hash) == 16
    assert memory.tags == ["auth"]
    assert for_file(engine, "auth.py") == [memory]
    assert for_file(engine, str(src)) == [memory]
    assert for_file(engine, "other.py") == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": ""}, "empty"),
        ({"content": "   \n\t "}, "empty"),
        ({"content": "abc\x00def"}, "binary"),
        ({"content": "\x01\x02\x03\x04ab"}, "binary"),
        ({"content": "ok", "type": "gotchaa"}, "valid values: gotcha, decision"),
        ({"content": "ok", "source": "robot"}, "valid values: agent_explicit"),
        ({"content": "ok", "scope": "planet"}, "valid values: global"),
        ({"content": "ok", "confidence": 1.5}, "between 0 and 1"),
        ({"content": "ok", "symbol": "foo"}, "needs a file"),
    ],
)
def test_remember_refuses_bad_input(engine: Engine, kwargs, message):
    with pytest.raises(InvalidInput, match=message):
        remember(engine, **kwargs)


def test_remember_refuses_content_over_the_limit(engine: Engine):
    engine.config.safety = SafetyConfig(max_content_chars=50)
    remember(engine, "x" * 50)
    with pytest.raises(InvalidInput, match="51 characters, over the limit of 50"):
        remember(engine, "y" * 51)


def test_remember_refuses_paths_outside_the_workspace(engine: Engine, tmp_path: Path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        remember(engine, "something about elsewhere", file=str(outside))
    with pytest.raises(WorkspaceError):
        remember(engine, "something", file="../../etc/passwd")


def test_secrets_are_redacted_before_storage_and_reported(engine: Engine, fake_store):
    result = remember(
        engine,
        "deploy with OPENAI key sk-proj-abcdefghijklmnopqrstuvwxyz0123456789 and "
        "postgres://app:hunter2hunter2@db.internal/prod",
    )
    stored = fake_store.get(result.memory.id)
    assert "sk-proj-abc" not in stored.content and "hunter2" not in stored.content
    assert "sk-proj" not in stored.citation_text
    assert result.redactions == ["openai_api_key", "connection_string_password"]
    assert "redacted" in stored.flags


def test_near_duplicate_merges_instead_of_copying(engine: Engine, fake_store, clock):
    first = remember(engine, "Never call save() inside the request loop", tags=["db"])
    second = remember(
        engine, "never call save() inside the request loop.", tags=["perf"], session_id="s2"
    )
    assert second.merged and second.memory.id == first.memory.id
    assert fake_store.count() == 1
    merged = fake_store.get(first.memory.id)
    assert merged.tags == ["db", "perf"]
    assert merged.confidence == pytest.approx(first.memory.confidence + 0.05)
    assert merged.provenance.confirmed_by_sessions == ["s2"]


def test_merge_caps_confidence_and_respects_type_and_negation(engine: Engine, fake_store):
    remember(engine, "Use the retry wrapper for S3 uploads", type="preference", confidence=0.94)
    again = remember(engine, "Use the retry wrapper for S3 uploads", type="preference")
    assert again.merged and again.memory.confidence == pytest.approx(0.95)
    assert not remember(engine, "Use the retry wrapper for S3 uploads", type="gotcha").merged
    assert not remember(
        engine, "Don't use the retry wrapper for S3 uploads", type="preference"
    ).merged
    assert fake_store.count() == 3


def test_remember_many_merges_within_one_batch(engine: Engine, fake_store):
    from engram.model import Memory

    batch = [
        Memory(content="Tests need the fake clock", type=MemoryType.PATTERN),
        Memory(content="tests need the fake clock", type=MemoryType.PATTERN),
        Memory(content="Indexing skips vendored files", type=MemoryType.PATTERN),
    ]
    results = remember_many(engine, batch)
    assert [r.merged for r in results] == [False, True, False]
    assert fake_store.count() == 2
    assert fake_store.writes == 1


def test_corrections(engine: Engine, fake_store, clock):
    ids = {
        kind: remember(
            engine, f"fact number {kind.value} about caching layers", confidence=0.7
        ).memory.id
        for kind in CorrectionKind
    }
    incorrect = flag(engine, ids[CorrectionKind.INCORRECT], "incorrect", note="it was wrong")
    assert incorrect.deprecated and incorrect.valid_until == clock.now
    correction = incorrect.extra["corrections"][0]
    assert correction["kind"] == "incorrect" and correction["note"] == "it was wrong"
    assert correction["at"] == clock.now.isoformat() and correction["by"].startswith("person:")
    outdated = flag(engine, ids[CorrectionKind.OUTDATED], CorrectionKind.OUTDATED)
    assert outdated.stale_at == clock.now and not outdated.deprecated
    # every flag hides the memory from editors and agents until the flagger confirms it
    # (docs/trust.md): a state, not confidence arithmetic
    for kind in (CorrectionKind.WRONG_SCOPE, CorrectionKind.NOT_USEFUL):
        flagged = flag(engine, ids[kind], kind.value.replace("_", "-"))
        assert trust.state_of(flagged) is trust.TrustState.FLAGGED
        assert flagged.confidence == pytest.approx(0.7)
    assert trust.state_of(outdated) is trust.TrustState.FLAGGED
    # deprecated memories leave normal listings but stay retrievable by id
    assert ids[CorrectionKind.INCORRECT] not in {m.id for m in list_memories(engine)}
    assert get(engine, ids[CorrectionKind.INCORRECT]).deprecated
    with pytest.raises(InvalidInput, match="valid values: incorrect, outdated"):
        flag(engine, ids[CorrectionKind.OUTDATED], "meh")


def test_confirm_pin_forget(engine: Engine, fake_store, clock):
    memory = remember(engine, "Cache keys include the tenant id", needs_review=True, confidence=0.6)
    confirmed = confirm(engine, memory.memory.id)
    assert confirmed.user_verified and not confirmed.needs_review
    assert confirmed.confidence == pytest.approx(0.7)
    assert pin(engine, memory.memory.id).pinned
    assert not pin(engine, memory.memory.id, False).pinned
    gone = forget(engine, memory.memory.id)
    assert gone.id == memory.memory.id and trust.state_of(gone) is trust.TrustState.FORGOTTEN
    assert memory.memory.id not in {m.id for m in list_memories(engine)}
    with pytest.raises(InvalidInput, match="restore"):
        confirm(engine, memory.memory.id)
    back = restore(engine, memory.memory.id)
    assert trust.state_of(back) is trust.TrustState.VERIFIED
    events = [e.event for e in audit_log(engine, memory.memory.id)]
    assert events == ["create", "confirm", "pin", "pin", "forget", "confirm refused", "restore"]
    for use_case in (get, forget, confirm):
        with pytest.raises(NotFound, match="no memory with id"):
            use_case(engine, "m-nosuchthing")


def test_reads_count_use_but_never_move_trust(engine: Engine, fake_store, clock):
    """Issue 12 item 1: ten reads used to raise 0.70 -> 0.80 and clear the review flag."""
    memory = remember(engine, "Retry idempotent calls only", confidence=0.7, needs_review=True)
    mid = memory.memory.id
    before = fake_store.get(mid)
    clock.now += timedelta(days=1)
    for _ in range(12):
        record_access(engine, [mid])
    after = fake_store.get(mid)
    assert after.access_count == 12
    assert after.needs_review and after.confidence == pytest.approx(0.7)
    assert after.last_accessed_at == before.last_accessed_at  # the decay clock
    assert credit_session(engine, [mid], "s1") == 1
    assert fake_store.get(mid).confidence == pytest.approx(0.7)
    assert fake_store.get(mid).provenance.confirmed_by_sessions == ["s1"]


def test_list_filters(engine: Engine, tmp_workspace):
    (tmp_workspace.root / "a.py").write_text("a = 1\n")
    remember(engine, "Gotcha in module a about imports", file="a.py")
    remember(engine, "We chose LanceDB for vectors", type="decision", source="agent_explicit")
    remember(engine, "Check flaky network tests", type="pattern", needs_review=True)
    assert len(list_memories(engine)) == 3
    assert [m.type.value for m in list_memories(engine, type="decision")] == ["decision"]
    assert [m.source.value for m in list_memories(engine, source=["agent_explicit"])] == [
        "agent_explicit"
    ]
    assert [m.anchors[0].file for m in list_memories(engine, file="a.py")] == ["a.py"]
    # an agent's memory waits for a person (issue 12 item 7), like one sent to review
    reviewed = sorted(m.type.value for m in list_memories(engine, needs_review=True))
    assert reviewed == ["decision", "pattern"]
    with pytest.raises(InvalidInput, match="unknown memory type"):
        list_memories(engine, type="nope")


def test_export_import_round_trip(engine: Engine, fake_store, tmp_workspace, tmp_path):
    (tmp_workspace.root / "b.py").write_text("b = 2\n")
    remember(engine, "b.py must stay import-free", file="b.py", tags=["x"])
    remember(engine, "Prefer attrs over dataclasses", type="preference")
    for fmt in ("json", "md"):
        text = export(engine, fmt)
        path = tmp_path / f"export.{fmt}"
        path.write_text(text)
        other = Engine(
            tmp_workspace,
            EngramConfig(embed=EmbedConfig(model="none")),
            store=type(fake_store)(),
            filter_factory=type(engine.filter()),
        )
        report = import_file(other, path)
        assert report.added == 2 and report.skipped == []
        assert {m.content for m in list_memories(other)} == {
            m.content for m in list_memories(engine)
        }
        assert {m.id for m in list_memories(other)} == {m.id for m in list_memories(engine)}
        # importing again changes nothing, and says so
        again = import_file(other, path)
        assert (again.added, again.merged, again.unchanged) == (0, 0, 2)
        assert other.store.count() == 2
    doc = json.loads(export(engine, "json"))
    assert doc["engram_export"] == 1 and doc["count"] == 2
    with pytest.raises(InvalidInput, match="unknown export format"):
        export(engine, "xml")


def test_import_rules_file(engine: Engine, tmp_path):
    claude = tmp_path / "CLAUDE.md"
    claude.write_text(
        "# Project rules\n\n## Style\n- Never use print() in library code\n"
        "- Prefer attrs for data classes\n\n## Architecture\n"
        "- We decided on LanceDB because it is embedded\n"
        "- Tests live under tests/<area>\n  with one folder per capability\n"
        "```\n- not a rule inside code\n```\n"
    )
    report = import_file(engine, claude)
    assert report.kind == "rules" and report.added == 4
    memories = {m.content: m for m in list_memories(engine)}
    assert memories["Never use print() in library code"].type is MemoryType.GOTCHA
    assert memories["Prefer attrs for data classes"].type is MemoryType.PREFERENCE
    assert memories["We decided on LanceDB because it is embedded"].type is MemoryType.DECISION
    pattern = memories["Tests live under tests/<area> with one folder per capability"]
    assert pattern.type is MemoryType.PATTERN
    assert pattern.source is MemorySource.USER_TAUGHT
    assert pattern.tags == ["project-rules", "architecture", "claude-md"]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"\x00\x01binary", "binary"),
        (b"\xff\xfe\xfa", "UTF-8"),
        (b'{"memories": 3}', "no 'memories'"),
    ],
)
def test_import_bad_files(engine: Engine, tmp_path, content, message):
    path = tmp_path / "bad.json"
    path.write_bytes(content)
    with pytest.raises(InvalidInput, match=message):
        import_file(engine, path)


def test_import_missing_file_and_directory(engine: Engine, tmp_path):
    with pytest.raises(InvalidInput, match="does not exist"):
        import_file(engine, tmp_path / "nope.md")
    with pytest.raises(InvalidInput, match="is a directory"):
        import_file(engine, tmp_path)


def test_prune_applies_rules(engine: Engine, fake_store, clock, tmp_workspace):
    (tmp_workspace.root / "kept.py").write_text("x = 1\n")
    (tmp_workspace.root / "gone.py").write_text("x = 1\n")
    kept = remember(engine, "kept.py has a subtle cache", file="kept.py").memory.id
    gone = remember(engine, "gone.py has a subtle cache", file="gone.py").memory.id
    session = remember(engine, "temporary note for this session", scope="session").memory.id
    (tmp_workspace.root / "gone.py").unlink()
    clock.advance(days=8)
    dry = prune(engine, dry_run=True)
    assert set(dry.deleted) == {session} and dry.stale_marked == [gone]
    assert fake_store.count() == 3
    report = prune(engine)
    assert fake_store.get(session) is None
    assert fake_store.get(gone).stale_at == clock.now
    assert fake_store.get(kept).stale_at is None
    assert report.reasons[gone] == "file gone: gone.py"


def test_stats_and_doctor(engine: Engine):
    remember(engine, "One thing worth knowing about stats")
    counts = stats(engine)
    assert counts["total"] == 1 and counts["by_type"] == {"gotcha": 1}
    assert counts["shown"] == 1 and counts["active"] == 1
    checks = {c.name: c for c in doctor(engine)}
    assert checks["store"].ok and "1 memories" in checks["store"].detail
    # embed.model = "none" is the user's choice: a fact with where to change it, no warning
    model = checks["embedding model"]
    assert model.ok and model.level == "info" and 'embed.model is "none"' in model.detail
    assert checks["python"].ok and checks["tree-sitter"].detail.startswith("grammars:")


def test_stats_active_is_the_trust_state_the_report_counts(engine: Engine) -> None:
    """A new user's walk (stop 31): the Memory view said "Active 8" and the report "5
    active" of one store, because stats counted every memory not retired as active."""
    from engram.api.render import stats_text
    from engram.report.data import MemoryColumns, build_report

    remember(engine, "A person's gotcha about the cache warm-up")
    remember(engine, "An agent's note about the retry loop", source="agent_explicit")
    counts = stats(engine)
    assert (counts["shown"], counts["active"], counts["needs_review"]) == (2, 1, 1)
    everything = engine.store.list(engine.filter(include_deprecated=True))
    columns = MemoryColumns.from_memories(everything)
    report = build_report(workspace="w", memories=columns, cochange_pairs=[], impact=None)
    assert report.totals["active"] == counts["active"]
    assert "2 shown: 1 active, 1 in review, 0 stale" in stats_text(counts)


def test_the_status_bar_the_memory_view_and_the_report_count_the_same_memories(
    engine: Engine,
) -> None:
    """Stop 33's walk in VS Code: the status bar said "5 memories", the Memory view listed 4
    and the report's tile said "7 memories" of one store. A flagged memory (outdated,
    wrong_scope, not_useful) is never shown, yet stats counted it as shown (and stale), and
    the report counted every retired memory among its memories."""
    from engram.api.render import stats_text
    from engram.report.data import MemoryColumns, build_report

    remember(engine, "A person's gotcha about the cache warm-up")
    remember(engine, "An agent's note about the retry loop", source="agent_explicit")
    flagged = {
        kind: remember(engine, f"A note the person then flagged as {kind.value}").memory.id
        for kind in CorrectionKind
    }
    for kind, memory_id in flagged.items():
        flag(engine, memory_id, kind)
    counts = stats(engine)
    listed = list_memories(engine)  # what the Memory view lists
    assert len(listed) == counts["shown"] == 2
    assert (counts["active"], counts["needs_review"], counts["stale"]) == (1, 1, 0)
    assert counts["deprecated"] == 4 and counts["total"] == 6
    everything = engine.store.list(engine.filter(include_deprecated=True))
    columns = MemoryColumns.from_memories(everything)
    report = build_report(workspace="w", memories=columns, cochange_pairs=[], impact=None)
    assert report.totals["memories"] == counts["shown"]
    assert report.totals["active"] == counts["active"]
    assert report.totals["in_review"] == counts["needs_review"]
    assert report.totals["stale"] == counts["stale"]
    assert report.totals["deprecated"] == counts["deprecated"]
    assert "2 shown: 1 active, 1 in review, 0 stale" in stats_text(counts)
    assert "4 retired" in stats_text(counts)


def test_doctor_on_a_full_disk_says_so_and_finishes(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a full disk doctor said ".engram is writable", then stopped with "internal error:
    OperationalError: database or disk is full" (its digest check): the walk of stop 29."""
    import shutil
    import sqlite3
    from collections import namedtuple

    from engram.store.digest import Digest

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda _path: usage(3 << 20, 3 << 20, 0))

    def full(_self: Digest) -> tuple[int, int]:
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(Digest, "lag", full)
    checks = {c.name: c for c in doctor(engine)}
    disk = checks["disk space"]
    assert not disk.ok and disk.level == "error" and "0 KB free" in disk.detail
    digest = checks["agent digest"]
    assert not digest.ok and "disk holding Engram's data is full" in digest.detail
    assert checks["confinement"].ok  # the checks after it still ran


def test_doctor_on_a_read_only_engram_says_so_once(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a read-only bind mount of .engram doctor said "FAIL writable … is not writable",
    then "warn code graph OperationalError: unable to open database file" and the same for
    the agent digest: SQLite in WAL mode opens no file there, not even to read. The FAIL
    line now says why and what it stops; the two checks are marked not read."""
    import os
    import sqlite3

    from engram.api.workspace import _doctor_text
    from engram.codegraph import CodeGraph
    from engram.store.digest import Digest

    engram_dir = engine.workspace.engram_dir
    engram_dir.mkdir(exist_ok=True)
    real_access = os.access
    monkeypatch.setattr(
        os,
        "access",
        lambda path, mode: False if Path(path) == engram_dir else real_access(path, mode),
    )

    def unopenable(*_args: object, **_kwargs: object) -> object:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(CodeGraph, "stats", unopenable)
    monkeypatch.setattr(Digest, "lag", unopenable)
    checks = doctor(engine)
    text = _doctor_text(checks)
    assert "unable to open database file" not in text, text
    named = {c.name: c for c in checks}
    assert named["writable"].level == "error" and "make it writable" in named["writable"].detail
    for name in ("code graph", "agent digest"):
        assert named[name].level == "skipped", named[name]
        assert f"skip  {name:<16} not read: .engram/ is not writable" in text, text


def test_a_full_disk_is_no_damaged_store() -> None:
    """LanceDB's "No space left on device" said: move the store aside and re-import, or
    delete it to start empty. Advice that loses everything over a full disk."""
    from types import SimpleNamespace

    from engram.errors import disk_trouble
    from engram.store.hybrid import HybridTable

    error = OSError(28, "No space left on device")
    table = SimpleNamespace(path="/ws/.engram/memories.lance")
    said = str(HybridTable.error(table, "write", RuntimeError(str(error))))  # type: ignore[arg-type]
    assert "disk holding Engram's data is full" in said and "delete" not in said
    wrapped = RuntimeError("lance write failed")
    wrapped.__cause__ = error
    assert disk_trouble(wrapped) is not None
    assert "read-only" in (disk_trouble(OSError(30, "Read-only file system")) or "")
    assert disk_trouble(RuntimeError("corrupt manifest")) is None


def test_doctor_warns_of_a_model_that_did_not_load(
    tmp_workspace: Workspace, fake_store, clock
) -> None:
    missing = tmp_workspace.root / "no-such-model"
    config = EngramConfig(embed=EmbedConfig(model=str(missing)))
    broken = Engine(tmp_workspace, config, store=fake_store, clock=clock)
    model = {c.name: c for c in doctor(broken)}["embedding model"]
    assert not model.ok and model.level == "warning"
    assert f"embedding model directory {missing} does not exist" in model.detail
    assert "keywords and the code graph only" in model.detail


def test_read_only_engine_refuses_writes(engine: Engine, tmp_workspace: Workspace, fake_store):
    ro = Engine(
        tmp_workspace,
        EngramConfig(embed=EmbedConfig(model="none")),
        store=fake_store,
        read_only=True,
        filter_factory=type(engine.filter()),
    )
    with pytest.raises(Exception, match="read-only"):
        remember(ro, "x y z")


def test_cosine_duplicate_merges(dense_engine: Engine, fake_store):
    remember(dense_engine, "the build cache lives in dot cache folder and must be cleared")
    result = remember(dense_engine, "must be cleared the build cache lives in dot cache folder")
    assert result.merged and fake_store.count() == 1
    assert "cosine" in (result.duplicate_reason or "")


def test_an_agents_restatement_by_meaning_that_adds_a_claim_is_not_lost(
    tmp_workspace: Workspace, fake_store, clock
) -> None:
    """A merge by meaning alone needs the text it drops to say nothing the kept one lacks
    (8100551), and it took the dropped text to be the shorter one, as merge_memories keeps
    the longer; but a restatement that would wait in review keeps a shown memory's own
    text whatever its length (57aaa65). An agent's longer "... and its keys rotate weekly"
    merged into a person's "uploads go to the staging bucket" and was kept nowhere; it is
    now a memory of its own, in review, and a restatement that adds nothing still merges."""
    from tests.engine.conftest import FakeFilter, HashEmbedder

    config = EngramConfig(safety=SafetyConfig(duplicate_cosine=0.8))  # this embedder: 0.83
    engine = Engine(tmp_workspace, config, store=fake_store, embedder=HashEmbedder(),
                    clock=clock, filter_factory=FakeFilter)  # fmt: skip
    mine = remember(engine, "uploads go to the staging bucket").memory
    agent = trust.Actor.agent("mcp")
    claim = "uploads go to the staging bucket and its keys rotate weekly"
    added = remember(engine, claim, source="agent_explicit", actor=agent)
    assert not added.merged and added.memory.content == claim
    assert trust.state_of(added.memory) is trust.TrustState.REVIEW
    stored = engine.store.get(mine.id)
    assert stored is not None and stored.content == "uploads go to the staging bucket"
    # the person's claim said again in other words: nothing of its own is lost, it merges
    again = remember(engine, "to the staging bucket go uploads", source="agent_explicit",
                     actor=agent)  # fmt: skip
    assert again.merged and again.memory.id == mine.id and "cosine" in str(again.duplicate_reason)


def test_seed_workspace_is_idempotent_and_keeps_corrections(engine: Engine, tmp_workspace):
    from engram.codegraph import ProjectFact

    class Report:
        project_facts: ClassVar[list[ProjectFact]] = [
            ProjectFact(
                "project.language.python", "Python project 'x'.", "module_insight", "pyproject.toml"
            ),
            ProjectFact(
                "project.tests.python",
                "Tests run with pytest.",
                "preference",
                "pyproject.toml",
                0.8,
            ),
        ]

    (tmp_workspace.root / "AGENTS.md").write_text("# Rules\n- Never push to main\n- Use uv\n")
    assert seed_workspace(engine, Report()) == {"facts": 2, "rules": 2}
    rule = next(m for m in list_memories(engine) if m.content == "Never push to main")
    flag(engine, rule.id, "incorrect")
    assert seed_workspace(engine, Report()) == {"facts": 0, "rules": 0}
    assert get(engine, rule.id).deprecated
    fact = next(m for m in list_memories(engine) if m.content == "Tests run with pytest.")
    assert fact.type is MemoryType.PREFERENCE and fact.confidence == pytest.approx(0.8)
    assert fact.related_files == ["pyproject.toml"] and fact.scope.value == "global"


def test_concurrent_remember_loses_nothing(engine: Engine, fake_store):
    import threading

    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                remember(
                    engine, f"thread {n} fact {i} {'x' * n} {'y' * i} distinct words {n * 100 + i}"
                )
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert (
        fake_store.count()
        + sum(int(m.extra.get("merge_count", 0)) for m in fake_store.memories.values())
        == 40
    )


def test_a_contradicting_memory_is_kept_linked_and_sent_to_review(engine: Engine, fake_store):
    old = remember(engine, "Run migrations before deploying", type="decision").memory
    new = remember(engine, "Run migrations after deploying", type="decision")
    assert not new.merged
    assert new.conflicts and new.conflicts[0].startswith(f"{old.id}: opposite")
    assert new.to_dict()["conflicts"] == new.conflicts
    stored_new, stored_old = fake_store.get(new.memory.id), fake_store.get(old.id)
    assert stored_new.needs_review and not stored_old.needs_review
    assert [(r.relation_type.value, r.target_memory_id) for r in stored_new.relations] == [
        ("conflicts_with", old.id)
    ]
    assert [(r.relation_type.value, r.target_memory_id) for r in stored_old.relations] == [
        ("conflicts_with", new.memory.id)
    ]
    # the same thing said again is a duplicate, not a contradiction
    again = remember(engine, "run migrations before deploying", type="decision")
    assert again.merged and not again.conflicts


def test_contradictions_inside_one_batch_are_linked_too(engine: Engine, fake_store):
    from engram.model import Memory

    batch = [
        Memory(content="The job timeout is 30s", type=MemoryType.GOTCHA),
        Memory(content="The job timeout is 90s", type=MemoryType.GOTCHA),
    ]
    first, second = remember_many(engine, batch)
    assert second.conflicts and first.memory.id in second.conflicts[0]
    assert fake_store.get(second.memory.id).needs_review
    assert fake_store.get(first.memory.id).relations[0].target_memory_id == second.memory.id


def test_consolidate_merges_duplicates_and_links_contradictions_already_stored(
    engine: Engine, fake_store, clock
):
    """Memories that arrived without the remember pipeline (a team file, an old store)."""
    from engram.model import Memory

    def stored(text: str) -> Memory:
        clock.advance(minutes=1)
        memory = Memory(text, type=MemoryType.GOTCHA, created_at=clock.now)
        fake_store.add([memory])
        return memory

    older = stored("Never call save() inside the request loop")
    copy = stored("never call save() inside the request loop.")
    before = stored("Run migrations before deploying")
    after = stored("Run migrations after deploying")
    other = stored("Thumbnails are generated lazily")
    preview = consolidate(engine, dry_run=True)
    assert preview.scanned == 5 and fake_store.count() == 5
    assert preview.merged == [f"{older.id} <- {copy.id} (text ratio 99)"]
    assert [c.split(":")[0] for c in preview.conflicts] == [f"{after.id} vs {before.id}"]

    report = consolidate(engine)
    assert report.merged == preview.merged and report.conflicts == preview.conflicts
    assert fake_store.get(copy.id) is None and fake_store.count() == 4
    # consolidating is not a person saying it again: no confidence (docs/trust.md)
    assert fake_store.get(older.id).confidence == pytest.approx(older.confidence)
    assert [e.note for e in audit_log(engine, copy.id)] == [f"merged into {older.id}"]
    assert fake_store.get(after.id).needs_review
    assert fake_store.get(before.id).relations[0].target_memory_id == after.id
    assert fake_store.get(other.id).relations == []
    again = consolidate(engine)  # nothing left to do, and links are not doubled
    assert again.merged == [] and again.conflicts == []
    assert len(fake_store.get(before.id).relations) == 1


def test_consolidate_links_a_default_flip_on_one_symbol(engine: Engine, fake_store, clock):
    """Issue 12: ``consolidate --dry-run`` found no conflict between these two."""
    from engram.model import CodeAnchor, Memory

    anchor = CodeAnchor(file="src/click/testing.py", symbol="CliRunner.invoke")
    texts = [
        "CliRunner.invoke catches exceptions by default (catch_exceptions=True), so a failing "
        "command shows up only in result.exception",
        "CliRunner.invoke never catches exceptions (catch_exceptions=False): a failing command "
        "raises straight into the test",
    ]
    stored = []
    for text in texts:
        clock.advance(minutes=1)
        stored.append(Memory(text, type=MemoryType.GOTCHA, anchors=[anchor], created_at=clock.now))
    fake_store.add(stored)
    (conflict,) = consolidate(engine, dry_run=True).conflicts
    assert conflict.startswith(f"{stored[1].id} vs {stored[0].id}: flip, catch_exceptions")


def test_the_early_duplicate_search_is_used_only_while_the_store_stands_still(
    dense_engine: Engine, fake_store
):
    """A single remember runs its duplicate keyword search while it embeds; another write
    in between makes it search again under the write lock (the old order's answer)."""
    from engram.app.remember import _EarlyKeywordSearch
    from engram.model import Memory

    first = remember(dense_engine, "Payments are integer cents", type="pattern").memory
    new = Memory(content="payments are cents", type=MemoryType.PATTERN)
    early = _EarlyKeywordSearch.start(dense_engine, [new])
    assert early is not None and early.result(new) == [first.id]

    early = _EarlyKeywordSearch.start(dense_engine, [new])
    assert early is not None
    remember(dense_engine, "Never floats for payments", type="pattern")  # another writer
    assert early.result(new) is None  # searched again by the caller

    assert _EarlyKeywordSearch.start(dense_engine, [new, first]) is None  # batches: per memory


def test_remember_finds_a_duplicate_written_while_it_embedded(dense_engine: Engine, fake_store):
    """The write lands between the early keyword search and the write lock."""
    embedder = dense_engine.embedder
    assert embedder is not None
    embed = embedder.embed
    interloper: list[str] = []

    def embed_while_someone_writes(texts):  # type: ignore[no-untyped-def]
        if not interloper:
            interloper.append("writing")
            interloper[0] = remember(dense_engine, "retry uploads three times").memory.id
        return embed(texts)

    embedder.embed = embed_while_someone_writes  # type: ignore[method-assign]
    again = remember(dense_engine, "Retry uploads three times")
    assert again.merged and again.memory.id == interloper[0]
    assert fake_store.count() == 1


def test_a_correction_never_merges_into_the_memory_it_corrects(engine: Engine, fake_store):
    """VS Code's Edit… remembers the corrected text with ``supersedes`` and then flags the
    old memory: a small correction merged into the old one, and the flag retired both."""
    old = remember(engine, "timeout() must clear its timer when the fetch settles", type="gotcha")
    fixed = remember(
        engine,
        "timeout() must clear its timer when the fetch settles or aborts",
        type="gotcha",
        extra={"supersedes": old.memory.id},
    )
    assert not fixed.merged and fixed.memory.id != old.memory.id
    assert fake_store.get(fixed.memory.id).content.endswith("settles or aborts")
    assert fake_store.get(old.memory.id).content.endswith("fetch settles")
    # without supersedes the same text is a restatement, as before
    again = remember(
        engine, "timeout() must clear its timer when the fetch settles!", type="gotcha"
    )
    assert again.merged


def test_a_correction_that_names_only_a_file_keeps_the_corrected_memorys_anchor(
    engine: Engine, fake_store, tmp_workspace, monkeypatch
):
    """VS Code's Edit… sends the corrected text with the file and ``supersedes`` only: the
    correction of a function's gotcha lost its symbol and lines and showed at line 1. The
    file is read once for each way tried (it was read for the file alone first, every time)."""
    from engram.app import anchors as anchors_module

    src = tmp_workspace.root / "auth.py"
    reads: list[str] = []
    read_lines = anchors_module._read_lines

    def counted(on, rel):  # type: ignore[no-untyped-def]
        reads.append(rel)
        return read_lines(on, rel)

    monkeypatch.setattr(anchors_module, "_read_lines", counted)

    def correct(code: str, text: str, corrects: str, ways: int) -> tuple[str, CodeAnchor]:
        src.write_text(code, encoding="utf-8")
        reads.clear()
        fixed = remember(engine, text, file=str(src), extra={"supersedes": corrects})
        assert reads == ["auth.py"] * ways, reads
        return fixed.memory.id, fake_store.get(fixed.memory.id).anchors[0]

    login = "import os\n\n\ndef login():\n    token = make()\n    return token\n"
    src.write_text(login, encoding="utf-8")
    old = remember(engine, "login() must refresh the token", file=str(src), symbol="login")
    fixed, anchor = correct(
        login, "login() must refresh the token before the 24h expiry", old.memory.id, ways=1
    )
    assert (anchor.file, anchor.symbol, anchor.start_line, anchor.end_line) == (
        "auth.py",
        "login",
        3,
        5,
    )
    # the symbol went since: the corrected memory's lines, checked against today's file
    again, moved = correct(
        login.replace("login", "sign_in"),
        "sign_in() must refresh the token before the 24h expiry, always",
        fixed,
        ways=2,  # its symbol, then its lines
    )
    assert (moved.symbol, moved.start_line, moved.end_line) == (None, 3, 5)
    assert moved.content_hash is not None
    # and a file too short for those lines: the file alone
    _, plain = correct("x = 1\n", "the token module holds one constant now", again, ways=2)
    assert (plain.file, plain.symbol, plain.start_line) == ("auth.py", None, None)
