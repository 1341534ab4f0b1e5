"""Unit tests of the language server's pure feature modules (no process, no store)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar

import attrs
import pytest
from lsprotocol import types

from engram.anchors import LineSpan
from engram.api.render import impact_summary
from engram.app.remember import remember
from engram.errors import EngramError
from engram.lsp.actions import build_code_actions, selection_text
from engram.lsp.anchors import TextEdit, locate_anchor, shift_all, shift_span
from engram.lsp.commands import register_commands
from engram.lsp.diagnostics import (
    build_diagnostics,
    make_policy,
    result_id,
    select_memories,
    severity_for,
)
from engram.lsp.folder import SymbolInfo, locate_spans, symbol_at
from engram.lsp.hover import hover_markdown, memories_at
from engram.lsp.ledger import SessionLedger
from engram.lsp.registry import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    REQUEST_FAILED,
    CommandError,
    CommandRegistry,
)
from engram.model import CodeAnchor, Memory, MemorySource, MemoryType, Provenance, content_hash

NOW = datetime(2025, 6, 1, tzinfo=UTC)
LINES = [f"line {i}" for i in range(30)]


def mem(
    content: str = "watch out",
    *,
    type: MemoryType = MemoryType.GOTCHA,
    file: str = "a.py",
    start: int | None = 3,
    end: int | None = 5,
    confidence: float = 0.8,
    symbol: str | None = None,
    **kw: Any,
) -> Memory:
    anchor_hash = (
        content_hash("\n".join(LINES[start : (end if end is not None else start) + 1]))
        if start is not None
        else None
    )
    return Memory(
        content=content,
        type=type,
        confidence=confidence,
        anchors=[CodeAnchor(file, symbol, start, end, anchor_hash)],
        created_at=NOW - timedelta(days=3),
        last_accessed_at=NOW,
        **kw,
    )


# --------------------------------------------------------------------------- anchors


def test_insert_above_moves_span_down() -> None:
    span = LineSpan(10, 12)
    assert shift_span(span, TextEdit(2, 0, 2, 0, "a\nb\nc\n")) == LineSpan(13, 15)
    assert shift_span(span, TextEdit(10, 0, 10, 0, "x\n")) == LineSpan(11, 13)


def test_delete_above_moves_up_and_edit_inside_resizes() -> None:
    span = LineSpan(10, 12)
    assert shift_span(span, TextEdit(2, 0, 4, 0, "")) == LineSpan(8, 10)
    assert shift_span(span, TextEdit(11, 3, 11, 3, "\n\n")) == LineSpan(10, 14)
    assert shift_span(span, TextEdit(20, 0, 25, 0, "")) == span
    assert shift_span(span, TextEdit(9, 0, 11, 0, "")) == LineSpan(9, 10)


def test_shift_all_applies_edits_in_order() -> None:
    spans = {"a": LineSpan(5, 5), "b": LineSpan(1, 2)}
    edits = [TextEdit(0, 0, 0, 0, "x\n"), TextEdit(3, 0, 3, 0, "y\n")]
    assert shift_all(spans, edits) == {"a": LineSpan(7, 7), "b": LineSpan(2, 4)}


def test_locate_by_hash_finds_moved_lines() -> None:
    memory = mem(start=3, end=5)
    moved = ["new"] * 4 + LINES
    assert locate_anchor(memory.anchors[0], LINES) == LineSpan(3, 5)
    assert locate_anchor(memory.anchors[0], moved) == LineSpan(7, 9)


def test_symbol_range_wins_when_lines_changed() -> None:
    memory = mem(start=3, end=5, symbol="parse")
    changed = [f"other {i}" for i in range(30)]
    assert locate_anchor(memory.anchors[0], changed, LineSpan(20, 25)) == LineSpan(20, 25)
    file_level = mem(start=None, end=None)
    assert locate_anchor(file_level.anchors[0], LINES) == LineSpan(0, 0)
    short = mem(start=3, end=5)
    assert locate_anchor(attrs.evolve(short.anchors[0], content_hash=None), ["x"]) == LineSpan(0, 0)


def test_locate_spans_uses_graph_symbols() -> None:
    memory = mem(start=None, end=None, symbol="Cache.get")
    symbols = [
        SymbolInfo("get", "Cache.get", LineSpan(8, 9)),
        SymbolInfo("Cache", "Cache", LineSpan(7, 9)),
    ]
    assert locate_spans([memory], "a.py", LINES, symbols) == {memory.id: LineSpan(8, 9)}
    assert symbol_at(symbols, 8) == symbols[0]
    assert symbol_at(symbols, 7) == symbols[1]


# --------------------------------------------------------------------------- diagnostics


def policy(**kw: Any) -> Any:
    args: dict[str, Any] = {
        "trust_level": 2,
        "max_per_file": 20,
        "severity": {},
        "agent_severity": {},
        "agent": False,
    }
    args.update(kw)
    return make_policy(**args)


def test_noise_control_filters_and_orders() -> None:
    keep = mem("keep", confidence=0.9)
    weak = mem("weak", confidence=0.5)
    pinned_weak = mem("pinned", confidence=0.3, pinned=True)
    stale = mem("stale", stale_at=NOW)
    gone = mem("gone", deprecated=True)
    not_here = mem("elsewhere", file="b.py")
    preference = mem("pref", type=MemoryType.PREFERENCE)
    verified = mem("verified", confidence=0.7, user_verified=True)
    chosen = select_memories(
        [keep, weak, pinned_weak, stale, gone, not_here, preference, verified],
        "a.py",
        policy(),
        NOW,
    )
    assert [m.content for m in chosen] == ["pinned", "verified", "keep"]
    assert select_memories([keep, weak], "a.py", policy(trust_level=4), NOW) == [keep, weak]
    assert select_memories([keep, verified], "a.py", policy(max_per_file=1), NOW) == [verified]


def test_decayed_confidence_counts() -> None:
    old = attrs.evolve(mem(confidence=0.9), last_accessed_at=NOW - timedelta(days=120))
    assert old.current_confidence(NOW) < 0.65
    assert select_memories([old], "a.py", policy(), NOW) == []


def test_severity_by_type_confidence_and_client() -> None:
    confident = mem(confidence=0.95)
    barely = mem(confidence=0.7)
    decision = mem(type=MemoryType.DECISION, confidence=0.95)
    editor, agent = policy(), policy(agent=True)
    assert severity_for(confident, editor, NOW) == types.DiagnosticSeverity.Warning
    assert severity_for(barely, editor, NOW) == types.DiagnosticSeverity.Information
    assert severity_for(decision, editor, NOW) == types.DiagnosticSeverity.Information
    assert severity_for(confident, agent, NOW) == types.DiagnosticSeverity.Error
    assert severity_for(barely, agent, NOW) == types.DiagnosticSeverity.Warning
    assert severity_for(decision, agent, NOW) == types.DiagnosticSeverity.Hint
    custom = policy(severity={"gotcha": "error", "nonsense": "error", "decision": "loud"})
    assert severity_for(confident, custom, NOW) == types.DiagnosticSeverity.Error
    assert severity_for(decision, custom, NOW) == types.DiagnosticSeverity.Information


def test_diagnostic_carries_id_provenance_and_related_files() -> None:
    memory = mem(
        "use absolute paths",
        confidence=0.9,
        related_files=["b.py"],
        source=MemorySource.AGENT_EXPLICIT,
        provenance=Provenance(session_id="s-42", commit_sha="abcdef1234567"),
    )
    (diag,) = build_diagnostics(
        [memory],
        {memory.id: LineSpan(4, 6)},
        "a.py",
        policy(),
        NOW,
        lambda rel: f"file:///ws/{rel}",
        lambda line: 10,
    )
    assert diag.source == "engram" and diag.code == "gotcha"
    assert diag.data == {"id": memory.id, "type": "gotcha", "citation": memory.citation()}
    assert (diag.range.start.line, diag.range.end.line, diag.range.end.character) == (4, 6, 10)
    for part in ("use absolute paths", "agent_explicit", "3 days ago", "0.90", "s-42", "abcdef1"):
        assert part in diag.message
    assert diag.related_information is not None
    assert diag.related_information[0].location.uri == "file:///ws/b.py"
    assert result_id([diag]) == result_id([diag])
    assert result_id([diag]) != result_id([])


# --------------------------------------------------------------------------- hover


def test_hover_lists_memories_with_citation_and_impact() -> None:
    a, b = mem("first"), mem("second", start=10, end=12)
    spans = {a.id: LineSpan(3, 5), b.id: LineSpan(10, 12)}
    assert memories_at([a, b], spans, 4) == [a]
    assert memories_at([a, b], spans, 20) == []
    text = hover_markdown([a], "2 dependents", NOW, "parse")
    assert text is not None
    assert a.citation() in text and "Gotcha" in text
    # the summary is the file's, and says so: it read as the symbol's (stop 33)
    assert "**Engram impact** of the file holding `parse`: 2 dependents" in text
    assert hover_markdown([], None, NOW) is None
    from engram.model import MemoryRelation, RelationType

    disputed = attrs.evolve(
        a,
        relations=[MemoryRelation(RelationType.CONFLICTS_WITH, target_memory_id="m-other")],
        extra={"team": {"by": "Ana", "file": ".engram-team/x.json"}},
    )
    # the other side is quoted and marked (docs/trust.md "Conflicts")
    text = hover_markdown([disputed], None, NOW, partners={disputed.id: [("m-other", "90s")]})
    assert text is not None
    assert '[CONFLICT with m-other: "90s"' in text and 'shared by "Ana"' in text


def test_impact_summary_from_report() -> None:
    @attrs.define
    class Dep:
        file: str

    @attrs.define
    class Partner:
        file: str
        confidence: float

    @attrs.define
    class Report:
        in_graph: bool = True
        direct_dependents: list[Dep] = attrs.field(factory=list)
        transitive_dependents: list[Dep] = attrs.field(factory=list)
        cochange: list[Partner] = attrs.field(factory=list)
        tests: list[str] = attrs.field(factory=list)

    report = Report(
        direct_dependents=[Dep("x.py"), Dep("y.py")],
        transitive_dependents=[Dep("x.py"), Dep("y.py"), Dep("z.py")],
        cochange=[Partner("c.py", 0.7), Partner("d.py", 0.9)],
        tests=["t.py"],
    )
    text = impact_summary(report)
    assert text == (
        "2 dependents (3 transitive); usually changes with `d.py` (90%), `c.py` (70%); "
        "tests: `t.py`"
    )
    assert impact_summary(Report(in_graph=False)) is None
    assert impact_summary(None) is None


# --------------------------------------------------------------------------- actions


def test_selection_text_and_teach_actions() -> None:
    lines = ["def f():", "    return 1", ""]
    rng = types.Range(types.Position(0, 4), types.Position(1, 12))
    assert selection_text(lines, rng) == "f():\n    return 1"
    actions = build_code_actions(
        rel_path="a.py",
        lines=lines,
        rng=rng,
        diagnostics=[],
        memories_here=[],
        symbol="f",
        impact_available=True,
    )
    titles = [a.title for a in actions]
    assert "Engram: show impact of `f`" in titles
    teach = [a for a in actions if a.title.startswith("Engram: remember selection as")]
    assert len(teach) == 5
    recipe = next(a for a in teach if "recipe" in a.title)
    assert recipe.command is not None
    assert recipe.command.arguments is not None
    assert recipe.command.arguments[0]["extra"]["steps"][0]["canonical_file"] == "a.py"


def test_quick_fixes_for_engram_diagnostics_only() -> None:
    ours = types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 1)),
        message="m",
        source="engram",
        data={"id": "m-1"},
    )
    theirs = types.Diagnostic(
        range=types.Range(types.Position(0, 0), types.Position(0, 1)), message="x", source="ruff"
    )
    empty = types.Range(types.Position(0, 0), types.Position(0, 0))
    actions = build_code_actions(
        rel_path="a.py",
        lines=["x"],
        rng=empty,
        diagnostics=[ours, theirs],
        memories_here=[],
        symbol=None,
        impact_available=False,
    )
    assert len(actions) == 6  # confirm, 4 flags, pin
    assert all(a.kind == types.CodeActionKind.QuickFix and a.diagnostics == [ours] for a in actions)


# --------------------------------------------------------------------------- registry


class FakeContext:
    def __init__(self, engine: Any) -> None:
        self.engine = engine
        self.ledger = SessionLedger()
        self.changed: list[Any] = []

    async def call(self, fn: Any, file: str | None = None) -> Any:
        return fn(self.engine)

    async def in_engine(self, usecase: str, raw: Any, file: str | None = None) -> None:
        return None  # no workspace engine: every command runs on this engine

    async def memories(self, ids: Any, review: int, file: str | None = None) -> Any:
        from engram.app.memories import list_memories

        found = {m.id: m for m in self.engine.store.get_many(ids)} if ids else {}
        return found, list_memories(self.engine, needs_review=True, limit=review)

    async def memories_changed(self, memories: Any, file: str | None = None) -> None:
        self.changed += list(memories)

    def session(self, file: str | None = None) -> SessionLedger:
        return self.ledger

    def folder_of_memory(self, memory_id: str) -> str | None:
        return None  # one folder

    def actor(self) -> Any:
        return None  # a person at an editor

    def status(self, file: str | None = None) -> dict[str, Any]:
        return {"ready": True, "indexing": None}

    async def reindex(self, files: Any, file: str | None = None) -> Any:
        return {"files": files}

    async def show_document(self, path: str, line: int, file: str | None = None) -> bool:
        return True


class FailingStore:
    def get(self, memory_id: str) -> Memory | None:
        return None  # the use case turns this into NotFound

    def list(self, *_args: Any) -> list[Memory]:
        raise EngramError("the store is not available yet")


class FailingEngine:
    """Components that fail the three ways a command can: not found, a user error, a bug."""

    read_only = False
    store = FailingStore()
    person_name = "Tester"  # who "a person" is (app.trust.person_name), set up front

    def filter(self, **_kwargs: Any) -> None:
        return None

    def check_writable(self) -> None:
        raise RuntimeError("boom\nsecond line")


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_registry_maps_errors_to_json_rpc_codes() -> None:
    registry = CommandRegistry()
    register_commands(registry)
    ctx = FakeContext(FailingEngine())
    cases = [
        ("engram.open", [{"id": "m-x"}], INVALID_PARAMS, "no memory with id m-x"),
        ("engram.stats", [], REQUEST_FAILED, "not available"),
        ("engram.confirm", [{"id": "m-x"}], INTERNAL_ERROR, "boom second line"),
        ("engram.nope", [], INVALID_PARAMS, "unknown command"),
        ("engram.search", [{"query": "x", "k": 0}], INVALID_PARAMS, "k must be between"),
        ("engram.search", [{"query": "x"}, {}], INVALID_PARAMS, "one JSON object"),
    ]
    for name, args, code, text in cases:
        with pytest.raises(CommandError) as err:
            run(registry.execute(ctx, name, args))  # type: ignore[arg-type]
        assert err.value.code == code and text in err.value.message, name
        assert "\n" not in err.value.message


def test_registry_accepts_camel_case_and_aliases() -> None:
    registry = CommandRegistry()
    register_commands(registry)
    spec = registry.get("engram.remember")
    assert spec is not None
    given = registry.structure(spec, [{"content": "x", "startLine": 2, "relatedFiles": ["b"]}])
    args = given.args  # the engine checks given.raw again (engram.daemon.calls)
    assert given.raw == {"content": "x", "startLine": 2, "relatedFiles": ["b"]}
    assert (args.text, args.start_line, args.related_files) == ("x", 2, ["b"])
    context = registry.get("engram.context")
    assert context is not None
    assert registry.structure(context, [{"task": "add a command", "budget": 500}]).args.query == (
        "add a command"
    )
    with pytest.raises(ValueError):
        registry.register("engram.search", None, lambda ctx, a: asyncio.sleep(0))


def test_an_args_class_declares_its_synonyms() -> None:
    """``Args.ALIASES`` is read once at registration (typed, not looked up per call)."""
    from engram.lsp.registry import Args

    @attrs.define
    class FindArgs(Args):
        k: int = 10
        file: str | None = None

        ALIASES: ClassVar[dict[str, str]] = {"limit": "k", "uri": "file"}

    @attrs.define
    class PlainArgs:
        limit: int = 1

    async def noop(ctx: Any, args: object) -> None:
        return None

    registry = CommandRegistry()
    registry.register("x.find", FindArgs, noop)
    registry.register("x.plain", PlainArgs, noop)
    find, plain = registry.get("x.find"), registry.get("x.plain")
    assert find is not None and plain is not None
    assert registry.structure(find, [{"limit": 3, "uri": "a.py"}]) == FindArgs(3, "a.py")
    assert registry.structure(plain, [{"limit": 3}]) == PlainArgs(3)  # no synonyms


def test_extension_registers_its_own_command() -> None:
    registry = CommandRegistry()

    @attrs.define
    class EchoArgs:
        word: str

    async def echo(ctx: Any, args: EchoArgs) -> dict[str, str]:
        return {"echo": args.word}

    registry.register("engram.mcp.echo", EchoArgs, echo, summary="test")
    assert run(registry.execute(FakeContext(None), "engram.mcp.echo", [{"word": "hi"}])) == {  # type: ignore[arg-type]
        "echo": "hi"
    }


def test_session_ledger_summary() -> None:
    ledger = SessionLedger()
    a, b = mem("applied"), mem("learned", needs_review=True)
    ledger.applied([a.id, a.id])
    ledger.learned(b.id)
    ledger.corrected(a.id, "confirmed")
    summary = ledger.summary({a.id: a, b.id: b}, [b])
    assert [m["id"] for m in summary["applied"]] == [a.id]
    assert [m["id"] for m in summary["learned"]] == [b.id]
    assert summary["corrected"][0]["correction"] == "confirmed"
    assert summary["needs_review"][0]["citation"] == b.citation()
    assert ledger.counts() == {"applied": 1, "learned": 1, "corrected": 1}


def test_share_sync_and_consolidate_commands(tmp_path: Any) -> None:
    """engram.share / engram.syncTeam / engram.consolidate on a real engine (no model)."""
    from engram.app import Engine
    from engram.config import EmbedConfig, EngramConfig
    from engram.workspace import Workspace

    (tmp_path / ".git").mkdir()  # a workspace root; no commit is made here
    engine = Engine(Workspace.open(tmp_path), EngramConfig(embed=EmbedConfig(model="none")))
    try:
        registry = CommandRegistry()
        register_commands(registry)
        ctx = FakeContext(engine)
        taught = remember(engine, "charge() takes integer cents", file=None).memory
        private = remember(engine, "my shortcut: make fast", tags=["private"]).memory
        shared = run(registry.execute(ctx, "engram.share", []))  # type: ignore[arg-type]
        assert shared["written"] == [f".engram-team/{taught.id}.json"]
        assert [m.id for m in ctx.changed] == [taught.id]
        refused = run(registry.execute(ctx, "engram.share", [{"ids": [private.id]}]))  # type: ignore[arg-type]
        assert refused["written"] == [] and "private" in refused["refused"][0]

        (tmp_path / ".engram-team" / f"{taught.id}.json").unlink()
        synced = run(registry.execute(ctx, "engram.syncTeam", []))  # type: ignore[arg-type]
        # A file gone from the working tree is no committed deletion by a teammate, and this
        # memory is your own: nothing is retired (docs/trust.md, issue 12 point 2).
        assert synced["retired"] == 0 and synced["changed"] == []
        assert engine.store.get(taught.id).deprecated is False

        remember(engine, "Run migrations before deploying", type="decision")
        remember(engine, "Run migrations after deploying", type="decision")
        report = run(registry.execute(ctx, "engram.consolidate", [{"dryRun": True}]))  # type: ignore[arg-type]
        assert report == {"scanned": 4, "merged": [], "conflicts": [], "dry_run": True}
    finally:
        engine.close()


async def test_a_selections_extension_actions_get_the_files_absolute_path(
    tmp_path: Any,
) -> None:
    """The MCP hub's actions for a selection got the file relative to its folder, which a
    multi-root window routes to the first folder: a selection in the second folder was
    offered the first folder's tools, and what a tool taught went to the first's store."""
    from pathlib import Path

    from pygls.workspace import Workspace as PyglsWorkspace

    from engram.lsp import create_server
    from engram.lsp.tracking import open_document

    roots = []
    for name in ("alpha", "beta"):
        root = Path(tmp_path) / name
        (root / "src").mkdir(parents=True)
        (root / ".engram").mkdir()
        (root / "src" / "app.py").write_text("def f():\n    return 1\n")
        roots.append(root)
    server = create_server()
    given: list[str | None] = []

    async def provider(ctx: Any, file: str | None, selection: str) -> list[Any]:
        given.append(file)
        return []

    server.registry.add_action_provider(provider)
    for root in roots:
        server.session.add_folder(root.as_uri(), root.name)
    server.protocol._workspace = PyglsWorkspace(
        roots[0].as_uri(), types.TextDocumentSyncKind.Incremental
    )
    beta_file = roots[1] / "src" / "app.py"
    uri = beta_file.as_uri()
    server.workspace.put_text_document(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=beta_file.read_text())
    )
    open_document(server, uri)
    code_action = server.protocol.fm.features[types.TEXT_DOCUMENT_CODE_ACTION]
    await code_action(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(uri=uri),
            range=types.Range(types.Position(0, 0), types.Position(1, 5)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert given == [str(beta_file)]
    assert server.session.folder_for_file(given[0]).root == roots[1]
