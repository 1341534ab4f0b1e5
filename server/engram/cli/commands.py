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
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engram.api.render import one_line_summary
from engram.cli.output import (
    emit_json,
    note,
    open_engine,
    progress_bar,
    staged_progress,
    terminal_text,
    workspace_arg,
)
from engram.cli.serve import cmd_serve
from engram.config import KEYWORD_ONLY_REASON
from engram.errors import EngramError, InvalidInput
from engram.model import to_jsonable

if TYPE_CHECKING:  # the use cases cost ~70 ms to import: imported when a command runs
    from engram.app import Engine
    from engram.app.indexing import IndexRun
    from engram.workspace_trust import SettingsTrust

log = logging.getLogger(__name__)

Handler = Callable[[argparse.Namespace], int]


# --------------------------------------------------------------------------- code, observer


def cmd_index(args: argparse.Namespace) -> int:
    """``engram index``: the one index pipeline with every step (docs/cli.md)."""
    from engram.app.index_lock import IndexBusy, IndexHolder
    from engram.app.indexing import STAGES, IndexOptions, run_index, was_interrupted
    from engram.cli.parser import EXIT_BUSY, EXIT_INTERRUPTED

    def waiting(holder: IndexHolder) -> None:
        note(
            f"an index of this workspace is running ({holder.describe()}); waiting for it, "
            "then indexing what changed since (--no-wait does not wait)"
        )

    # --no-embed means no model in this process at all: memories it stores (project facts,
    # rules, team files) wait for the next run with the model (embed_missing), and the
    # process stays small on a big workspace (docs/codegraph.md "At 50,000 files")
    overrides: dict[str, object] | None = {"embed": {"model": "none"}} if args.no_embed else None
    options = IndexOptions(embed_chunks=not args.no_embed, embed_memories=not args.no_embed)
    with open_engine(args, overrides=overrides) as engine, staged_progress(STAGES) as update:
        try:
            run = run_index(engine, options, update, wait=not args.no_wait, on_wait=waiting)
        except IndexBusy as exc:
            note(f"error: {exc}")
            return EXIT_BUSY
        if was_interrupted(run):
            why = "the engine is stopping" if engine.stopping.is_set() else "cancelled"
            note(
                f"index interrupted ({why}): what it stored is kept; the next `engram "
                "index` resumes where it stopped"
            )
            return EXIT_INTERRUPTED
        if args.no_embed:
            run.memories = {"count": int(engine.store.count()), "embedded": 0, "model": None}
        status = ""
        if args.no_embed:
            status = "not embedded (--no-embed): an `engram index` with a model embeds them"
        elif run.memories and not run.memories["model"]:
            status = engine.embedder_status
            if status != KEYWORD_ONLY_REASON:  # a model was asked for and did not load
                status = f"no embedding model ({status})"
    if args.json:
        emit_json(run.to_dict())
    else:
        for line in index_notes(run, status):
            note(line)
    return 0


def index_notes(run: IndexRun, embedder_status: str) -> list[str]:
    """One line per step for the person at the terminal."""
    from engram.app.indexing import graph_summary, partly_indexed

    notes = [f"code graph: {graph_summary(run.code)}"]
    partial = partly_indexed(run.code)
    if partial:
        notes.append(
            f"{len(partial)} files only partly indexed (engram doctor lists them): "
            + "; ".join(partial[:3])
            + (f" and {len(partial) - 3} more" if len(partial) > 3 else "")
        )
    outside = list(run.code.outside_workspace)
    if outside:
        notes.append(
            f"skipped {len(outside)} links to files outside the workspace "
            f"(never read): {', '.join(outside[:5])}"
        )
    if run.chunks is not None:
        notes.append(f"code search: {one_line_summary(run.chunks)}")
    if run.seeded and any(run.seeded.values()):
        # a repository's rules and manifests are its word: they wait in review (docs/trust.md)
        notes.append(
            f"learned {run.seeded['facts']} project facts and {run.seeded['rules']} "
            "rules from manifests and agent rule files, in review until you confirm them "
            "(engram list --review)"
        )
    history = run.history
    if history is not None and history.skipped:
        notes.append(f"skipped git history: {history.skipped}")
    elif history is not None:
        notes.append(f"git history: {one_line_summary(history.mined)}")
        if history.renamed:
            notes.append(f"{history.renamed} memories followed renamed files")
        if history.code_changed:
            notes.append(
                f"{history.code_changed} memories need review: the code under them "
                "changed in a commit (engram list --review)"
            )
    team = run.team
    if team is not None and (team.added or team.updated or team.retired or team.skipped):
        notes.append(
            f"team memories: {team.added} added, {team.updated} updated, "
            f"{team.retired} retired"
            + (f", {len(team.skipped)} files skipped" if team.skipped else "")
        )
        # named, so one bad file is found and fixed
        notes += [f"skipped {reason}" for reason in team.skipped[:5]]
    result = run.memories
    if result is not None and result["model"] is None:
        notes.append(f"memories: {result['count']} stored; {embedder_status}")
    elif result is not None:
        notes.append(
            f"memories: {result['count']} stored, {result['embedded']} newly embedded "
            f"with {result['model']}"
        )
    return notes


def _read_events(raw: str) -> list[object]:
    text = raw.strip()
    if not text:
        raise InvalidInput("no event on stdin (expected a JSON object or JSON lines)")
    try:
        doc = json.loads(text)
        return doc if isinstance(doc, list) else [doc]
    except json.JSONDecodeError:
        pass
    events: list[object] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError as exc:
            raise InvalidInput(f"stdin line {number} is not JSON: {exc.msg}") from exc
    return events


_SAFE_SESSION = re.compile(r"[^A-Za-z0-9_.-]")


def _drain_inbox(engine: Engine, events: list[object]) -> list[object]:
    """The hook payloads queued in the inbox (oldest first per session).

    ``engram hook`` appends every payload to ``.engram/agents/inbox/<session>.jsonl``; at
    Stop/SessionEnd it runs ``observe --drain-inbox`` in the background. The file is
    renamed before reading so payloads appended meanwhile go to a fresh file. Every
    session's file is drained, not only the ones ``events`` name: a SessionEnd that came
    while the previous drain still ran could start no drain of its own (one job of a kind
    at a time) and would otherwise wait forever (docs/agents.md, "A live Claude Code
    session").
    """
    inbox = engine.workspace.engram_dir / "agents" / "inbox"
    sessions = {
        _SAFE_SESSION.sub("_", str(e.get("session_id") or "default"))[:128]
        for e in events
        if isinstance(e, dict)
    }
    if inbox.is_dir():
        sessions |= {p.stem for p in inbox.glob("*.jsonl") if not p.is_symlink()}
    queued: list[object] = []
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


#: After a drain, how long the job waits for payloads that came while it ran (a SessionEnd
#: right after Stop finds this job running and starts none), and how often it looks again.
DRAIN_GRACE_S = 0.25
DRAIN_PASSES = 2


def cmd_digest(args: argparse.Namespace) -> int:
    from engram.app.indexing import rebuild_digest

    with open_engine(args) as engine:
        if not args.rebuild:
            raise InvalidInput("nothing to do: use 'engram digest --rebuild'")
        count = rebuild_digest(engine)
    note(f"digest rebuilt with {count} memories")
    return 0


def _settle_agent_sessions(engine: Engine, payloads: list[object]) -> None:
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
    from engram.app.observe import observe, observer_of, recent_work_state

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
                observer = observer_of(engine)
            except Exception as exc:
                log.warning("engram claude-code hook ignored: %s", exc)
                return 0
            for drain_pass in range(DRAIN_PASSES + 1):
                for payload in events:
                    out = handle_hook(
                        observer, payload, work_state=lambda: recent_work_state(engine)
                    )
                    if out is not None:
                        outputs.append(out)
                if not args.drain_inbox:
                    break
                _settle_agent_sessions(engine, events)
                if drain_pass == DRAIN_PASSES:
                    break
                time.sleep(DRAIN_GRACE_S)
                events = _drain_inbox(engine, [])
                if not events:
                    break
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
    from engram.cli import mcp as mcp_cli
    from engram.cli.parser import OneLineParser

    parser = OneLineParser(prog="engram mcp", description="The lazy MCP hub.")
    parser.add_argument("--workspace", "-w", metavar="DIR", default=workspace_arg(args))
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
    from engram.mcp_server import run_stdio

    run_stdio(workspace_arg(args))
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

    workspace = Workspace.open(workspace_arg(args))
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


def _print_trust(root: Path, trust: SettingsTrust, mcp_files: list[str]) -> None:
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
    elif fmt == "md":
        # Markdown to stdout lands on a terminal like any text output: a stored escape
        # sequence would act there (clear the screen, write the clipboard). JSON escapes
        # them itself, and a file keeps the records exact.
        sys.stdout.write(terminal_text(text))
    else:
        sys.stdout.write(text)
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


def cmd_setup(args: argparse.Namespace) -> int:
    """Write Engram into an agent's configuration, with this installation's absolute command."""
    from engram.agents.setup import AFTER_SETUP, apply_setup, engram_command, plan_setup
    from engram.workspace import Workspace

    root = Workspace.open(workspace_arg(args)).root
    command = engram_command()
    changes = plan_setup(args.agent, root, command=command, plugin=args.plugin)
    if args.print:
        for change in changes:
            print(f"# {change.path} ({change.action if change.changed else 'unchanged'})")
            print(change.content, end="" if change.content.endswith("\n") else "\n")
        return 0
    apply_setup(changes)
    # the repository is set up for Engram: the agent's language server serves a folder only
    # once it has .engram/ (docs/lsp.md "Which folders are served")
    Workspace(root).ensure_engram_dir()
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
    if args.agent in AFTER_SETUP and any(c.changed for c in changes):
        note(AFTER_SETUP[args.agent])
    return 0


#: The CLI's own commands; the declared use cases (``engram.api``) run through
#: :func:`engram.cli.declared.run`.
COMMANDS: dict[str, Handler] = {
    "index": cmd_index,
    "observe": cmd_observe,
    "mcp": cmd_mcp,
    "serve": cmd_serve,
    "mcp-serve": cmd_mcp_serve,
    "trust": cmd_trust,
    "export": cmd_export,
    "import": cmd_import,
    "digest": cmd_digest,
    "setup": cmd_setup,
}


def run_command(args: argparse.Namespace) -> int:
    _quiet_logging()
    declared = getattr(args, "_usecase", None)
    if isinstance(declared, str):
        from engram.api import by_name
        from engram.cli.declared import run

        module = getattr(args, "_usecase_module", None)  # engram.cli.main.USECASE_MODULE_KEY
        return run(by_name(declared, module if isinstance(module, str) else None), args)
    handler = COMMANDS.get(args.command)
    if handler is None:
        raise EngramError(f"unknown command {args.command}")
    return handler(args)


def _quiet_logging() -> None:
    """Library chatter stays out of the way; our own warnings are one line each."""
    import os

    debug = os.environ.get("ENGRAM_DEBUG", "") not in ("", "0", "false", "no")
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="engram: %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    from engram.redaction import RedactingFormatter

    for handler in logging.getLogger().handlers:
        # a handler that already redacts keeps its format: in the engine, a forwarded
        # command runs here too, and engine.log keeps its timestamps and pid
        if not isinstance(handler.formatter, RedactingFormatter):
            handler.setFormatter(RedactingFormatter("engram: %(levelname)s: %(message)s"))
    if not debug:
        for name in ("lancedb", "pylance", "fastembed", "onnxruntime", "httpx", "urllib3"):
            logging.getLogger(name).setLevel(logging.ERROR)
