"""The ``engram`` subcommands. Imported only after argv was parsed.

Each command opens the :class:`~engram.app.Engine`, calls one use case and renders the
result: human text on stdout by default, exactly one JSON document with ``--json``, and
notes for the user (redactions, merges, skipped work, progress) on stderr so that stdout
stays machine-readable for hooks and scripts.
"""

from __future__ import annotations

import argparse
import json
import logging
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.cli import render
from engram.cli.serve import cmd_serve
from engram.errors import EngramError, InvalidInput, NotAvailable
from engram.model import memory_json, to_jsonable

if TYPE_CHECKING:  # the use cases cost ~70 ms to import: imported when a command runs
    from engram.app import Engine

log = logging.getLogger(__name__)

Handler = Callable[[argparse.Namespace], int]


def _workspace_arg(args: argparse.Namespace) -> str | None:
    value = getattr(args, "workspace", None)
    return str(value) if value else None


def open_engine(
    args: argparse.Namespace,
    *,
    read_only: bool = False,
    overrides: dict[str, object] | None = None,
) -> AbstractContextManager[Engine]:
    """The engine a command runs on, for a ``with`` block.

    Inside the engine process (``engram.daemon``) that is the warm engine it lends to the
    command (never closed by it; ``overrides`` only keep a fresh process small, as
    ``index --no-embed`` does, and the warm engine holds its model already); elsewhere a
    fresh one, closed when the block ends.
    """
    from engram.app.engine import LENT_ENGINE, Engine

    lent = LENT_ENGINE.get()
    if lent is not None:
        wanted = _workspace_arg(args)
        if wanted is not None and Path(wanted).expanduser().resolve() != lent.workspace.root:
            raise EngramError(f"this engine serves {lent.workspace.root}, not {wanted}")
        return nullcontext(lent)
    return Engine.open(_workspace_arg(args), overrides, read_only=read_only)


def note(message: str) -> None:
    """A one-line message for the person at the terminal (never on stdout)."""
    sys.stderr.write(f"engram: {message}\n")


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[..., None]]:
    """Progress on stderr: a rich bar on a terminal, else plain periodic lines
    (``engram.cli.progress``; docs/cli.md). The callback accepts (message, done, total)."""
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    if not console.is_terminal:
        with _progress_lines(label) as lines:
            yield lines
        return
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = progress.add_task(label, total=None)

    def update(message: Any = None, done: Any = None, total: Any = None, **_: Any) -> None:
        fields: dict[str, Any] = {}
        if isinstance(message, str) and message:
            fields["description"] = f"{label}: {message}"
        if isinstance(done, int | float):
            fields["completed"] = done
        if isinstance(total, int | float):
            fields["total"] = total
        progress.update(task, **fields)

    with progress:
        yield update


@contextmanager
def _progress_lines(label: str) -> Iterator[Callable[..., None]]:
    """:class:`~engram.cli.progress.ProgressLines` behind the callback's loose signature."""
    import os

    from engram.cli.progress import INTERVAL_SECONDS, ProgressLines

    try:
        interval = float(os.environ.get("ENGRAM_PROGRESS_SECONDS", INTERVAL_SECONDS))
    except ValueError:
        interval = INTERVAL_SECONDS

    def write(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    lines = ProgressLines(label, write, interval=max(0.0, interval))

    def update(message: Any = None, done: Any = None, total: Any = None, **_: Any) -> None:
        if isinstance(done, int | float):
            lines(int(done), int(total) if isinstance(total, int | float) else None,
                  message if isinstance(message, str) else "")  # fmt: skip

    yield update
    lines.finish()  # not after a failure: its error line is the last word


# --------------------------------------------------------------------------- memories


def _read_text_arg(text: str) -> str:
    if text != "-":
        return text
    data = sys.stdin.buffer.read()
    if b"\x00" in data:
        raise InvalidInput("memory text looks binary (it contains NUL bytes)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("memory text on stdin is not UTF-8 text") from exc


_LINE_RANGE = re.compile(r"^\s*(\d+)\s*(?:[-:]\s*(\d+)\s*)?$")


def parse_line_range(value: str | None) -> tuple[int | None, int | None]:
    """``12`` or ``12-20`` (1-based, inclusive) -> 0-based (start, end)."""
    if value is None:
        return None, None
    match = _LINE_RANGE.match(value)
    if not match:
        raise InvalidInput(f"--line must be A or A-B with line numbers from 1, got {value!r}")
    start = int(match.group(1))
    end = int(match.group(2)) if match.group(2) else start
    if start < 1 or end < 1:
        raise InvalidInput("line numbers start at 1")
    if end < start:
        raise InvalidInput(f"line range {value} is backwards")
    return start - 1, end - 1


def cmd_remember(args: argparse.Namespace) -> int:
    text = _read_text_arg(args.text)
    start, end = parse_line_range(args.line)
    from engram.app.remember import remember

    with open_engine(args) as engine:
        result = remember(
            engine,
            text,
            type=args.type,
            source=args.source,
            file=args.file,
            symbol=args.symbol,
            start_line=start,
            end_line=end,
            allow_missing=args.allow_missing,
            tags=args.tag,
            scope=args.scope,
            session_id=args.session,
        )
    if result.redactions:
        from engram.redaction import describe_redactions

        note(f"redacted {describe_redactions(result.redactions)} (rotate any real secret)")
    if result.merged:
        note(
            f"merged into existing memory {result.memory.id} ({result.duplicate_reason}); "
            f"confidence now {result.memory.confidence:.2f}"
        )
    for conflict in result.conflicts:
        note(
            f"contradicts {conflict}; both kept and linked, this one is marked for review "
            "(engram confirm the one that holds, engram flag the other)"
        )
    if args.json:
        emit_json(result.to_dict())
    else:
        print(result.memory.id)
    return 0


def _types(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [v for value in values for v in value.split(",") if v.strip()]


def cmd_search(args: argparse.Namespace) -> int:
    from engram.app import recall

    with open_engine(args) as engine:
        if args.code:
            code_hits = recall.search_code(engine, args.query, k=args.k)
            if args.json:
                emit_json({"query": args.query, "hits": [to_jsonable(h) for h in code_hits]})
            else:
                render.print_code_hits(code_hits)
            return 0
        hits = recall.search(
            engine, args.query, k=args.k, phase=args.phase, file=args.file, types=_types(args.type)
        )
    if args.json:
        emit_json({"query": args.query, "hits": [render.hit_to_dict(h) for h in hits]})
    else:
        render.print_hits(hits)
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from engram.app.memories import list_memories

    session: dict[str, Any] | None = None
    with open_engine(args) as engine:
        memories = list_memories(
            engine,
            type=_types(args.type),
            source=_types(args.source),
            file=args.file,
            needs_review=True if args.review else None,
            include_deprecated=args.all,
            limit=args.limit,
        )
        if args.review:
            session = _last_session_summary(engine)
    if args.json:
        document: dict[str, Any] = {
            "count": len(memories),
            "memories": [memory_json(m) for m in memories],
        }
        if args.review:
            document["session"] = session
        emit_json(document)
    else:
        if session is not None and session.get("text"):
            print(f"Last session ({session.get('session_id')}): {session['text']}")
        render.print_memory_table(memories)
    return 0


def _last_session_summary(engine: Engine) -> dict[str, Any] | None:
    """The last finished observer session's card for ``list --review`` (V5 §13), if any."""
    from engram.app.observe import session_summary

    try:
        summary = session_summary(engine)
    except EngramError as exc:
        note(f"no session summary: {exc}")
        return None
    return summary if summary.get("found") else None


def cmd_show(args: argparse.Namespace) -> int:
    from engram.app.memories import get

    with open_engine(args) as engine:
        memory = get(engine, args.id)
    if args.json:
        emit_json(memory_json(memory))
    else:
        print(render.memory_card(memory))
    return 0


def cmd_forget(args: argparse.Namespace) -> int:
    from engram.app.memories import forget

    with open_engine(args) as engine:
        memory = forget(engine, args.id, cause="engram forget")
    print(f"forgot {memory.id}: {memory.citation_text}")
    from engram.lifecycle.trust import RETENTION, forgotten_until

    until = forgotten_until(memory)
    when = f"until {until:%Y-%m-%d}" if until is not None else f"for {RETENTION.days} days"
    note(f"undo {when} ({RETENTION.days} days): engram restore {memory.id}")
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from engram.app.memories import restore

    with open_engine(args) as engine:
        memory = restore(engine, args.id, cause="engram restore")
    print(f"restored {memory.id}: {memory.citation_text}")
    return 0


def cmd_edit(args: argparse.Namespace) -> int:
    from engram.app.anchors import anchor_for
    from engram.app.trust import edit

    text = _read_text_arg(args.text) if args.text is not None else None
    start, end = parse_line_range(args.line)
    with open_engine(args) as engine:
        anchors = None
        if args.file is not None:
            anchors = [anchor_for(engine, args.file, args.symbol, start, end)]
        elif args.symbol is not None or start is not None:
            raise InvalidInput("a symbol or line range needs a file (--file)")
        memory = edit(
            engine,
            args.id,
            content=text,
            type=args.type,
            anchors=anchors,
            tags=args.tag,
            cause="engram edit",
        )
    if args.json:
        emit_json(memory_json(memory))
    else:
        print(f"edited {memory.id}: {memory.citation_text}")
    return 0


def cmd_log(args: argparse.Namespace) -> int:
    from engram.app.trust import audit_log

    with open_engine(args, read_only=True) as engine:
        entries = audit_log(engine, args.id, limit=args.limit)
    if args.json:
        emit_json({"id": args.id, "entries": [e.to_dict() for e in entries]})
    else:
        render.print_log(entries, with_id=args.id is None)
    return 0


def cmd_confirm(args: argparse.Namespace) -> int:
    from engram.app.memories import confirm

    with open_engine(args) as engine:
        memory = confirm(engine, args.id, cause="engram confirm")
    print(f"confirmed {memory.id} (confidence {memory.confidence:.2f}, verified)")
    return 0


def cmd_flag(args: argparse.Namespace) -> int:
    from engram.app.memories import flag

    with open_engine(args) as engine:
        memory = flag(engine, args.id, args.kind, args.note, cause="engram flag")
    state = []
    if memory.deprecated:
        state.append("deprecated")
    if memory.is_stale:
        state.append("stale")
    if memory.needs_review:
        state.append("needs review")
    state.append(f"confidence {memory.confidence:.2f}")
    print(f"flagged {memory.id} as {args.kind.strip().lower()}: {', '.join(state)}")
    return 0


def cmd_pin(args: argparse.Namespace) -> int:
    from engram.app.memories import pin

    with open_engine(args) as engine:
        memory = pin(engine, args.id, not args.unpin, cause="engram pin")
    print(f"{'pinned' if memory.pinned else 'unpinned'} {memory.id}")
    return 0


def _parse_budget(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        budget = int(value.strip())
    except ValueError as exc:
        raise InvalidInput(f"--budget must be a whole number of tokens, got {value!r}") from exc
    if budget <= 0:
        raise InvalidInput(f"--budget must be positive, got {budget}")
    if budget > 1_000_000:
        raise InvalidInput(f"--budget {budget} is unreasonably large (max 1000000)")
    return budget


def cmd_context(args: argparse.Namespace) -> int:
    if not args.file and not args.query:
        raise InvalidInput("give a FILE or --query TEXT")
    from engram.app.recall import context

    budget = _parse_budget(args.budget)
    with open_engine(args) as engine:
        if args.file:
            path = engine.workspace.resolve(args.file)
            if not path.exists():
                raise InvalidInput(f"{args.file} does not exist in {engine.workspace.root}")
        pack = context(
            engine,
            file=args.file,
            symbol=args.symbol,
            query=args.query,
            phase=args.phase,
            budget_tokens=budget,
        )
    if args.json:
        emit_json(to_jsonable(pack))
    else:
        if pack.text.strip():
            sys.stdout.write(pack.text)  # exactly the text the budget was counted on
        else:
            target = args.file or args.query
            note(
                f"no memories yet for {target}; teach one with "
                f"'engram remember --file {args.file or 'PATH'} \"...\"'"
            )
    return 0


# --------------------------------------------------------------------------- code, observer


def cmd_index(args: argparse.Namespace) -> int:
    from engram.app import indexing
    from engram.app.team import sync_team

    summary: dict[str, Any] = {}
    # --no-embed means no model in this process at all: memories it stores (project facts,
    # rules, team files) wait for the next run with the model (embed_missing), and the
    # process stays small on a big workspace (docs/codegraph.md "At 50,000 files")
    overrides: dict[str, object] | None = {"embed": {"model": "none"}} if args.no_embed else None
    with open_engine(args, overrides=overrides) as engine:
        try:
            with progress_bar("indexing code") as update:
                report = indexing.index(
                    engine,
                    progress=lambda done, total, path: update(str(path or ""), done, total),
                    chunks=False,
                    history=False,
                )
            summary["code"] = to_jsonable(report)
            summary["_report"] = report
            if not args.json:
                note(f"code graph: {_graph_summary(report)}")
                outside = list(getattr(report, "outside_workspace", []) or [])
                if outside:
                    note(
                        f"skipped {len(outside)} links to files outside the workspace "
                        f"(never read): {', '.join(outside[:5])}"
                    )
            with progress_bar("chunking and embedding code") as update:
                chunk_report = indexing.index_chunks(
                    engine,
                    progress=lambda done, total, path: update(str(path or ""), done, total),
                    embed=not args.no_embed,
                )
            summary["chunks"] = to_jsonable(chunk_report)
            if not args.json:
                note(f"code search: {render.one_line_summary(chunk_report)}")
        except NotAvailable as exc:
            summary["code"] = {"skipped": str(exc)}
            note(f"skipped code indexing: {exc}")
        try:
            seeded = indexing.seed_workspace(engine, summary.get("_report"))
            summary["seeded"] = seeded
            if not args.json and any(seeded.values()):
                note(
                    f"learned {seeded['facts']} project facts and {seeded['rules']} rules "
                    "from manifests and agent rule files"
                )
        except NotAvailable as exc:
            summary["seeded"] = {"skipped": str(exc)}
        summary.pop("_report", None)
        summary["history"] = _mine_history(engine, args.json)
        if engine.config.team.auto_sync:
            team = sync_team(engine)
            summary["team"] = team.to_dict()
            if not args.json and (team.added or team.updated or team.retired or team.skipped):
                note(
                    f"team memories: {team.added} added, {team.updated} updated, "
                    f"{team.retired} retired"
                    + (f", {len(team.skipped)} files skipped" if team.skipped else "")
                )
                for reason in team.skipped[:5]:  # named, so one bad file is found and fixed
                    note(f"skipped {reason}")
        try:
            summary["memories"] = (
                {"count": int(engine.store.count()), "embedded": 0, "model": None}
                if args.no_embed
                else _backfill_embeddings(engine, args.json)
            )
        except NotAvailable as exc:
            summary["memories"] = {"skipped": str(exc)}
            note(f"skipped memory embeddings: {exc}")
    if args.json:
        emit_json(summary)
    return 0


def _graph_summary(report: Any) -> str:
    data = to_jsonable(report)
    if not isinstance(data, dict):
        return str(data)
    keys = ("files_seen", "files_indexed", "files_unchanged", "nodes", "edges", "seconds")
    parts = []
    for key in keys:
        value = data.get(key)
        if isinstance(value, float):
            parts.append(f"{key.replace('_', ' ')} {value:.1f}")
        elif isinstance(value, int):
            parts.append(f"{key.replace('_', ' ')} {value}")
    return ", ".join(parts)


def _mine_history(engine: Engine, quiet: bool) -> dict[str, Any]:
    """Mine git history and let the memories follow it (renames, changed code, co-access)."""
    from engram.app.history_sync import sync_history

    with progress_bar("mining git history") as update:
        report = sync_history(engine, progress=update)
    if report.skipped:
        note(f"skipped git history: {report.skipped}")
        return {"skipped": report.skipped}
    followed = {
        "renamed": report.renamed,
        "relocated": report.relocated,
        "code_changed": report.code_changed,
        "stale_marked": report.stale_marked,
        "unstaled": report.unstaled,
        "coaccess_seeded": report.coaccess_seeded,
    }
    if not quiet:
        note(f"git history: {render.one_line_summary(report.mined)}")
        if report.renamed:
            note(f"{report.renamed} memories followed renamed files")
        if report.code_changed:
            note(
                f"{report.code_changed} memories need review: the code under them changed "
                "in a commit (engram list --review)"
            )
    data = to_jsonable(report.mined)
    return {**(data if isinstance(data, dict) else {}), "memories": followed}


def _backfill_embeddings(engine: Engine, quiet: bool) -> dict[str, Any]:
    """Embed memories that have no vector for the current model (after a model switch)."""
    from engram.app.indexing import embed_missing

    with progress_bar("embedding memories") as update:
        result = embed_missing(engine, progress=update)
    if not quiet:
        if result["model"] is None:
            note(
                f"memories: {result['count']} stored; no embedding model ({engine.embedder_status})"
            )
        else:
            note(
                f"memories: {result['count']} stored, {result['embedded']} newly embedded "
                f"with {result['model']}"
            )
    return result


def _split_target(target: str, root: Path) -> tuple[str, str | None]:
    """``path/to/file.py:Symbol`` -> (file, symbol); a path that exists as-is wins."""
    if (root / target).exists() or Path(target).exists() or ":" not in target:
        return target, None
    file, symbol = target.rsplit(":", 1)
    if not file or not symbol.strip():
        raise InvalidInput(f"expected FILE or FILE:SYMBOL, got {target!r}")
    return file, symbol.strip()


def _index_if_empty(engine: Engine) -> None:
    """Impact on a never-indexed workspace would say nothing: index it first, once."""
    from engram.app.indexing import index

    stats = engine.codegraph.stats()
    if int(stats.get("files", 0)) == 0:
        note("the code graph is empty: indexing the workspace first")
        with progress_bar("indexing code") as update:
            index(engine, progress=lambda done, total, path: update(str(path or ""), done, total))


def cmd_impact(args: argparse.Namespace) -> int:
    from engram.app.impact import impact

    with open_engine(args) as engine:
        file, symbol = _split_target(args.target, engine.workspace.root)
        if not engine.workspace.resolve(file).exists():
            raise InvalidInput(f"{file} does not exist in {engine.workspace.root}")
        _index_if_empty(engine)
        report = impact(engine, file, symbol)
    if args.json:
        emit_json(to_jsonable(report))
    else:
        render.print_impact(report)
    return 0


def _read_events(raw: str) -> list[Any]:
    text = raw.strip()
    if not text:
        raise InvalidInput("no event on stdin (expected a JSON object or JSON lines)")
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:
        pass
    events: list[Any] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"stdin line {number} is not JSON: {exc.msg}") from exc
    return events


_SAFE_SESSION = re.compile(r"[^A-Za-z0-9_.-]")


def _drain_inbox(engine: Engine, events: list[Any]) -> list[Any]:
    """The hook payloads queued for the sessions named in ``events`` (oldest first).

    ``engram hook`` appends every payload to ``.engram/agents/inbox/<session>.jsonl``; at
    Stop/SessionEnd it runs ``observe --drain-inbox`` in the background. The file is
    renamed before reading so payloads appended meanwhile go to a fresh file.
    """
    inbox = engine.workspace.engram_dir / "agents" / "inbox"
    sessions = {
        _SAFE_SESSION.sub("_", str(e.get("session_id") or "default"))[:128]
        for e in events
        if isinstance(e, dict)
    } or {"default"}
    queued: list[Any] = []
    for session in sorted(sessions):
        path = inbox / f"{session}.jsonl"
        if not path.exists():
            continue
        draining = path.with_suffix(".draining")
        path.replace(draining)
        for line in draining.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                queued.append(json.loads(line))
            except json.JSONDecodeError:
                continue
        draining.unlink()
    return queued


def cmd_digest(args: argparse.Namespace) -> int:
    from engram.app.indexing import rebuild_digest

    with open_engine(args) as engine:
        if not args.rebuild:
            raise InvalidInput("nothing to do: use 'engram digest --rebuild'")
        count = rebuild_digest(engine)
    note(f"digest rebuilt with {count} memories")
    return 0


def _settle_agent_sessions(engine: Engine, payloads: list[Any]) -> None:
    """After a drain: the memories hooks handed to these sessions get their feedback."""
    from engram.agents.feedback import settle_sessions

    sessions = [
        str(p.get("session_id")) for p in payloads if isinstance(p, dict) and p.get("session_id")
    ]
    try:
        settle_sessions(engine, sessions)
    except Exception as exc:  # feedback is bookkeeping: never fail the drain for it
        log.warning("could not settle agent sessions: %s", exc)


def cmd_observe(args: argparse.Namespace) -> int:
    from engram.app.observe import observe, recent_work_state

    data = sys.stdin.buffer.read()
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput("observer input is not UTF-8 text") from exc
    if args.drain_inbox and not raw.strip():
        raw = "{}"
    events = _read_events(raw)
    outputs: list[Any] = []
    with open_engine(args) as engine:
        if args.drain_inbox:
            # the triggering payload was queued by the hook too: replay the queue instead
            events = _drain_inbox(engine, events)
        if args.format == "claude-code":
            from engram.observer.claude_code import handle_hook

            # the adapter owns the whole hook protocol (context injection on stdout); a
            # broken observer must not fail the agent's hook
            try:
                observer = engine.observer
            except Exception as exc:
                log.warning("engram claude-code hook ignored: %s", exc)
                events = []
            for payload in events:
                out = handle_hook(observer, payload, work_state=lambda: recent_work_state(engine))
                if out is not None:
                    outputs.append(out)
            if args.drain_inbox:
                _settle_agent_sessions(engine, events)
            for out in outputs:
                sys.stdout.write(out if isinstance(out, str) else json.dumps(out) + "\n")
            return 0
        for event in events:
            if not isinstance(event, dict):
                raise InvalidInput("each observer event must be a JSON object")
            outputs.append(observe(engine, event))
    if args.format == "engram" and outputs:
        emit_json(
            [to_jsonable(o) for o in outputs] if len(outputs) > 1 else (to_jsonable(outputs[0]))
        )
    return 0


# --------------------------------------------------------------------------- servers


def cmd_mcp(args: argparse.Namespace) -> int:
    import importlib

    try:
        mcp_cli = importlib.import_module("engram.mcp.cli")
    except ModuleNotFoundError as exc:
        raise NotAvailable("the MCP hub is not available yet (engram.mcp.cli)") from exc
    from engram.cli.main import OneLineParser

    parser = OneLineParser(prog="engram mcp", description="The lazy MCP hub.")
    parser.add_argument("--workspace", "-w", metavar="DIR", default=_workspace_arg(args))
    mcp_cli.configure_parser(parser)
    rest, workspace = _pop_workspace(list(args.mcp_args))
    sub_args = parser.parse_args(rest)
    if workspace is not None:
        sub_args.workspace = workspace
    return int(mcp_cli.run(sub_args) or 0)


def _pop_workspace(argv: list[str]) -> tuple[list[str], str | None]:
    """Take ``--workspace DIR`` / ``-w DIR`` out of ``argv`` wherever it stands, so it works
    after an ``engram mcp`` sub-command as it does everywhere else."""
    rest: list[str] = []
    workspace: str | None = None
    items = iter(argv)
    for item in items:
        if item in ("--workspace", "-w"):
            workspace = next(items, None)
            if workspace is None:
                raise InvalidInput(f"{item} needs a directory")
        elif item.startswith("--workspace="):
            workspace = item.split("=", 1)[1]
        else:
            rest.append(item)
    return rest, workspace


def cmd_mcp_serve(args: argparse.Namespace) -> int:
    import importlib

    try:
        server = importlib.import_module("engram.mcp.server")
    except ModuleNotFoundError as exc:
        raise NotAvailable("the Engram MCP server is not available yet") from exc
    run_stdio = getattr(server, "run_stdio", None)
    if not callable(run_stdio):
        raise NotAvailable("the Engram MCP server is not available yet (run_stdio)")
    run_stdio(_workspace_arg(args))
    return 0


# --------------------------------------------------------------------------- workspace trust

_WORKSPACE_MCP_FILES = (".engram/mcp.json", ".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json")


def cmd_trust(args: argparse.Namespace) -> int:
    """``engram trust``: show what the workspace's settings would run or send; approve it by
    its hash (docs/security.md). No engine: nothing the settings ask for is started here."""
    from engram.approvals import ApprovalStore, user_config_dir
    from engram.config import workspace_settings_trust
    from engram.workspace import Workspace
    from engram.workspace_trust import approve, revoke

    workspace = Workspace.open(_workspace_arg(args))
    approvals = ApprovalStore(user_config_dir())
    trust = workspace_settings_trust(workspace, approvals=approvals)
    mcp_files = [f for f in _WORKSPACE_MCP_FILES if (workspace.root / f).is_file()]
    if args.revoke:
        removed = revoke(workspace.root, approvals)
        if args.json:
            emit_json({"workspace": str(workspace.root), "revoked": removed})
        else:
            print("approval withdrawn" if removed else "nothing was approved for this workspace")
        return 0
    approved = False
    if trust.needs_approval:
        if args.hash is not None:
            if len(args.hash) < 8 or not trust.content_hash.startswith(args.hash.lower()):
                raise InvalidInput(
                    f"the settings' hash is now {trust.content_hash[:12]}, not {args.hash}: "
                    "they changed since you looked; run `engram trust` again"
                )
            approved = True
        elif args.yes:
            approved = True
        elif not args.json and sys.stdin.isatty():
            _print_trust(workspace.root, trust, mcp_files)
            answer = input(f"Trust these settings for {workspace.root}? [y/N] ")
            approved = answer.strip().lower() in ("y", "yes")
            if not approved:
                print("not approved")
                return 0
        if approved:
            approve(workspace.root, trust, approvals)
    if args.json:
        doc = {"workspace": str(workspace.root), **trust.to_dict(), "approved_now": approved}
        if approved:
            doc.update(state="trusted", applies=True)
        doc["mcp_files"] = mcp_files
        emit_json(doc)
        return 0
    if approved:
        print(f"approved {trust.content_hash[:12]} for {workspace.root}:")
        for setting in trust.settings:
            print(f"  {setting.key}: {setting.effect}")
        print("restart the editor's language server for it to take effect")
    elif not (sys.stdin.isatty() and trust.needs_approval):
        _print_trust(workspace.root, trust, mcp_files)
        if trust.needs_approval:
            note(
                "not approved: check the settings above, then run `engram trust --yes` "
                f"(or `engram trust --hash {trust.content_hash[:12]}`)"
            )
    return 0


def _print_trust(root: Path, trust: Any, mcp_files: list[str]) -> None:
    if trust.state == "none":
        print(f"{root}: {trust.summary()}; nothing to trust")
    else:
        state = {
            "trusted": "approved",
            "untrusted": "NOT approved",
            "changed": "CHANGED since you approved it",
        }[trust.state]
        print(f"{root}: settings from {', '.join(trust.sources)} ({state})")
        for setting in trust.settings:
            print(f"  {setting.key} = {json.dumps(setting.value, default=str)}")
            print(f"      would {setting.effect}")
        print(f"  content hash {trust.content_hash}")
    for key in trust.ignored:
        print(f"  {key} is ignored: a workspace never names where the LLM key comes from")
    if mcp_files:
        print(
            f"MCP servers defined in {', '.join(mcp_files)} are approved one by one: "
            "`engram mcp status`, then `engram mcp trust NAME`"
        )


# --------------------------------------------------------------------------- status, files


def cmd_doctor(args: argparse.Namespace) -> int:
    from engram.app.doctor import doctor

    with open_engine(args) as engine:
        checks = doctor(engine)
    if args.json:
        emit_json(
            {
                "ok": all(c.ok or c.level != "error" for c in checks),
                "checks": [c.to_dict() for c in checks],
            }
        )
    else:
        for check in checks:
            mark = "ok  " if check.ok else ("FAIL" if check.level == "error" else "warn")
            print(f"{mark}  {check.name:<16} {check.detail}")
    return 0 if all(c.ok or c.level != "error" for c in checks) else 1


def cmd_stats(args: argparse.Namespace) -> int:
    from engram.app.doctor import stats as store_stats

    with open_engine(args) as engine:
        stats = store_stats(engine)
    if args.json:
        emit_json(stats)
    else:
        print(render.stats_text(stats))
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    fmt = args.format
    if fmt is None:
        fmt = (
            "md" if args.file and str(args.file).lower().endswith((".md", ".markdown")) else "json"
        )
    from engram.app.portability import export

    with open_engine(args) as engine:
        text = export(engine, fmt)
        count = int(engine.store.count())
    if args.file and args.file != "-":
        target = Path(args.file).expanduser()
        if target.is_dir():
            raise InvalidInput(f"{target} is a directory; give a file name")
        if not target.parent.exists():
            raise InvalidInput(f"directory {target.parent} does not exist")
        target.write_text(text, encoding="utf-8")
        note(f"exported {count} memories to {target}")
    else:
        sys.stdout.write(text)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    from engram.app.report import write_report
    from engram.report import CHART_IDS

    with open_engine(args) as engine:
        target, data = write_report(engine, args.file, args.module)
    if args.json:
        emit_json(
            {"path": str(target), "charts": list(CHART_IDS), "module": data.impact.module,
             "totals": data.totals}
        )  # fmt: skip
    else:
        print(target)
    if args.open:
        import webbrowser

        if not webbrowser.open(target.as_uri()):
            note(f"no browser found; open {target.as_uri()}")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    path = Path(args.file).expanduser()
    if not path.exists():
        raise InvalidInput(f"{args.file} does not exist")
    from engram.app.portability import import_file

    with open_engine(args) as engine, progress_bar(f"importing {path.name}") as update:
        report = import_file(engine, path, progress=update)
    if args.json:
        emit_json(report.to_dict())
        return 0
    print(
        f"imported {path.name} ({report.kind}): {report.added} added, {report.merged} merged"
        + (f", {report.unchanged} unchanged" if report.unchanged else "")
        + (f", {len(report.skipped)} skipped" if report.skipped else "")
    )
    if report.redacted:
        from engram.redaction import describe_redactions

        memories = f" in {report.redacted} memories" if report.redacted > 1 else ""
        note(
            f"redacted {describe_redactions(report.redacted_kinds)}{memories} before storing "
            "(rotate any real secret)"
        )
    for reason in report.skipped[:5]:
        note(f"skipped {reason}")
    return 0


def cmd_consolidate(args: argparse.Namespace) -> int:
    from engram.app.maintenance import consolidate

    with open_engine(args) as engine, progress_bar("consolidating memories") as update:
        report = consolidate(engine, dry_run=args.dry_run, progress=update)
    if args.json:
        emit_json(report.to_dict())
        return 0
    would = "would merge" if args.dry_run else "merged"
    link = "would link" if args.dry_run else "linked"
    print(
        f"{report.scanned} memories: {would} {len(report.merged)} near-duplicates, "
        f"{link} {len(report.conflicts)} contradictions for review"
    )
    for line in [*report.merged, *report.conflicts][:10]:
        note(line)
    if report.conflicts and not args.dry_run:
        note("review them: engram list --review (confirm the one that holds, flag the other)")
    return 0


def cmd_share(args: argparse.Namespace) -> int:
    from engram.app.team import share

    with open_engine(args) as engine:
        report = share(engine, args.ids, commit=args.commit)
    if args.json:
        emit_json(report.to_dict())
        return 0
    if report.written:
        print(f"shared {len(report.written)} memories in {report.folder}/")
        for path in report.written[:10]:
            note(f"wrote {path}")
        if report.committed:
            note(f"committed as {report.committed[:10]}; push it with your code")
        else:
            note(f"commit {report.folder}/ and push it (or use --commit)")
    elif report.unchanged:
        print(f"nothing new to share: {len(report.unchanged)} memories already in {report.folder}/")
    else:
        print("nothing to share: confirm a memory first (engram confirm ID), or share it by id")
    for reason in report.refused:
        note(f"not shared {reason}")
    return 1 if report.refused and not (report.written or report.unchanged) else 0


def cmd_sync(args: argparse.Namespace) -> int:
    from engram.app.team import sync_team

    with open_engine(args) as engine:
        report = sync_team(engine)
    if args.json:
        emit_json(report.to_dict())
        return 0
    print(
        f"team memories from {report.folder}/: {report.added} added, {report.updated} updated, "
        f"{report.retired} retired, {report.unchanged} unchanged"
    )
    for reason in report.skipped[:10]:
        note(f"skipped {reason}")
    for conflict in report.conflicts[:10]:
        note(f"contradicts a teammate's memory, yours goes to review: {conflict}")
    return 0


def cmd_prune(args: argparse.Namespace) -> int:
    from engram.app.maintenance import prune

    with open_engine(args) as engine:
        report = prune(engine, dry_run=args.dry_run)
    if args.json:
        emit_json({"dry_run": args.dry_run, **report.to_dict()})
        return 0
    verb = "would" if args.dry_run else "did"
    print(
        f"prune {verb}: mark {len(report.stale_marked)} stale, deprecate "
        f"{len(report.deprecated)}, delete {len(report.deleted)}"
    )
    for memory_id, reason in list(report.reasons.items())[:20]:
        print(f"  {memory_id}  {reason}")
    return 0


def cmd_setup(args: argparse.Namespace) -> int:
    """Write Engram into an agent's configuration, with this installation's absolute command."""
    from engram.agents.setup import apply_setup, engram_command, plan_setup
    from engram.workspace import Workspace

    root = Workspace.open(_workspace_arg(args)).root
    command = engram_command()
    changes = plan_setup(args.agent, root, command=command, plugin=args.plugin)
    if args.print:
        for change in changes:
            print(f"# {change.path} ({change.action if change.changed else 'unchanged'})")
            print(change.content, end="" if change.content.endswith("\n") else "\n")
        return 0
    apply_setup(changes)
    if args.json:
        emit_json(
            {
                "agent": args.agent,
                "command": command,
                "files": [
                    {"path": str(c.path), "action": c.action, "what": c.what} for c in changes
                ],
            }
        )
        return 0
    home = Path.home()
    for change in changes:
        shown = (
            change.path.relative_to(root)
            if change.path.is_relative_to(root)
            else (
                Path("~") / change.path.relative_to(home)
                if change.path.is_relative_to(home)
                else change.path
            )
        )
        print(f"{change.action:9} {shown}: {change.what}")
    if any(c.changed and c.path.is_relative_to(root) for c in changes):
        note(
            "these files name this machine's engram; keep them out of git "
            "(or let each teammate run 'engram setup')"
        )
    return 0


COMMANDS: dict[str, Handler] = {
    "remember": cmd_remember,
    "search": cmd_search,
    "list": cmd_list,
    "show": cmd_show,
    "forget": cmd_forget,
    "restore": cmd_restore,
    "edit": cmd_edit,
    "log": cmd_log,
    "confirm": cmd_confirm,
    "flag": cmd_flag,
    "pin": cmd_pin,
    "context": cmd_context,
    "index": cmd_index,
    "impact": cmd_impact,
    "observe": cmd_observe,
    "mcp": cmd_mcp,
    "serve": cmd_serve,
    "mcp-serve": cmd_mcp_serve,
    "doctor": cmd_doctor,
    "trust": cmd_trust,
    "stats": cmd_stats,
    "export": cmd_export,
    "import": cmd_import,
    "report": cmd_report,
    "digest": cmd_digest,
    "prune": cmd_prune,
    "share": cmd_share,
    "consolidate": cmd_consolidate,
    "sync": cmd_sync,
    "setup": cmd_setup,
}


def run_command(args: argparse.Namespace) -> int:
    _quiet_logging()
    handler = COMMANDS.get(args.command)
    if handler is None:
        raise EngramError(f"unknown command {args.command}")
    return handler(args)


class RedactingFormatter(logging.Formatter):
    """Log lines with secrets redacted: a background child's stderr is a file under
    ``.engram/logs/`` (docs/security.md), and a log line may quote tool output."""

    def format(self, record: logging.LogRecord) -> str:
        from engram.redaction import redact_secrets

        return redact_secrets(super().format(record)).text


def _quiet_logging() -> None:
    """Library chatter stays out of the way; our own warnings are one line each."""
    import os

    debug = os.environ.get("ENGRAM_DEBUG", "") not in ("", "0", "false", "no")
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="engram: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    for handler in logging.getLogger().handlers:
        handler.setFormatter(RedactingFormatter("engram: %(levelname)s: %(message)s"))
    if not debug:
        for name in ("lancedb", "pylance", "fastembed", "onnxruntime", "httpx", "urllib3"):
            logging.getLogger(name).setLevel(logging.ERROR)
