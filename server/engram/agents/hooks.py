"""Agent hooks: what ``engram hook <agent> <event>`` answers, within a hook's time budget.

Claude Code (and Codex CLI, which takes the same fields) runs a hook as a fresh process per
event and reads JSON from its stdout. This module answers from the SQLite digest
(:mod:`engram.store.digest`) only — no LanceDB, no model — so a cold hook stays well under
1.5 s and a warm one near 100 ms. Heavy work (observer promotion, digest rebuild) is
handed to a detached background ``engram`` process so the agent is never blocked.

Start-up is most of a hook's time, so the answering path imports the standard library's
``json``, ``re`` and ``sqlite3`` and a few small Engram modules, nothing more (no
``argparse``, ``attrs``, ``typing``, ``logging`` or ``subprocess``: ``engram.cli.entry``
calls :func:`hook_entry` before anything else; tests/agents/test_hook_imports.py pins the
set). What need not hold up the answer — queueing the payload for the observer (which
imports the secret redaction, dozens of regular expressions) and starting background jobs
— runs in a forked child after the answer is written (:func:`hook_main` ``detach``,
:mod:`engram.agents.deferred`), in the order the hooks came.

Every memory handed to the agent is recorded per session: the same memory is never
injected twice in one session, and at session end the engine learns which memories were
used in a session that then succeeded (docs/agents.md, feedback).

Long on purpose: the whole answering path of every hook event is here, because each module
a hook imports is start-up time paid on every tool call (the pinned set above); splitting
the events' renderings into modules of their own would add imports to that path.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from pathlib import Path

from engram.agents.deferred import run_all, run_detached
from engram.marks import conflict_markers, together
from engram.quoting import one_line, quote_shared
from engram.store.digest import Digest, prompt_terms
from engram.tokens import estimate_tokens
from engram.workspace import Workspace, WorkspaceError

#: ``typing`` and ``collections.abc`` cost a hook process milliseconds; mypy reads them
TYPE_CHECKING = False
if TYPE_CHECKING:
    import logging
    from collections.abc import Callable, Sequence

    from engram.jsontypes import JsonObject
    from engram.store.digest import Brief

    #: work that need not hold up the agent's answer (run after it, in order)
    Deferred = list[Callable[[], None]]
    #: ``Brief -> the shown memories it conflicts with`` (read from the digest).
    Partners = Callable[[Brief], Sequence[Brief]]


def _log() -> logging.Logger:
    import logging  # only when there is something to say: a hook imports no logging

    return logging.getLogger(__name__)


#: What PostToolUse injects for a file: the things that bite (docs/agents.md proactive injection).
# (type names as strings: the hook path does not import the model)
FILE_INJECTION_TYPES: tuple[str, ...] = (
    "gotcha",
    "dead_end",
    "error_pattern",
    "decision",
    "requirement",
)
#: What SessionStart injects: where work stopped, then project-wide knowledge.
SESSION_TYPES: tuple[str, ...] = (
    "work_state",
    "decision",
    "preference",
    "requirement",
    "workflow_recipe",
    "gotcha",
    "dead_end",
    "pattern",
)
#: What UserPromptSubmit may inject when the prompt is about it.
PROMPT_TYPES: tuple[str, ...] = (
    "gotcha",
    "dead_end",
    "error_pattern",
    "decision",
    "requirement",
    "pattern",
    "preference",
    "workflow_recipe",
)
FILE_TOOLS = frozenset(
    {"Read", "Edit", "Write", "MultiEdit", "NotebookEdit", "NotebookRead", "apply_patch"}
)
#: PreToolUse for these hands the file's gotchas over *before* the change is made.
EDIT_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
#: A prompt memory must share this many distinct words with the prompt (fewer when the prompt
#: itself has fewer): relevance first, never a memory that only shares one common word.
MIN_PROMPT_MATCHES = 2
#: a file a prompt names; the part before the suffix bounded (a path's 255 characters): a
#: run of name characters with no dot was scanned to its end from each of its characters, so
#: a pasted line of 40,000 cost 10 s, the hook's whole time (stop 33)
_FILE_MENTION = re.compile(r"[\w./-]{1,255}\.[A-Za-z0-9]{1,8}\b")
_SAFE_SESSION = re.compile(r"[^A-Za-z0-9._-]")


class HookBudget:
    """Tokens each kind of hook answer may take (plain class: a hook imports no ``attrs``)."""

    __slots__ = ("file_tokens", "prompt_tokens", "session_tokens")

    def __init__(
        self, file_tokens: int = 400, session_tokens: int = 1200, prompt_tokens: int = 400
    ) -> None:
        self.file_tokens = file_tokens
        self.session_tokens = session_tokens
        self.prompt_tokens = prompt_tokens

    def __repr__(self) -> str:
        return (
            f"HookBudget(file_tokens={self.file_tokens}, session_tokens="
            f"{self.session_tokens}, prompt_tokens={self.prompt_tokens})"
        )


class SessionLedger:
    """The memories handed to one agent session, persisted so each hook process sees them."""

    __slots__ = ("accessed", "credited", "handed", "path", "tokens", "told")

    def __init__(
        self,
        path: Path,
        handed: list[str] | None = None,
        tokens: int = 0,
        accessed: list[str] | None = None,
        credited: list[str] | None = None,
        told: bool = False,
    ) -> None:
        self.path = path
        self.handed: list[str] = handed if handed is not None else []
        self.tokens = tokens
        #: the session was told how to confirm or flag (:data:`FOOTER`): once is enough
        self.told = told
        #: handed ids whose injection was counted as an access (docs/agents.md), and those
        #: credited because the session then succeeded; both settled by the background drain.
        self.accessed: list[str] = accessed if accessed is not None else []
        self.credited: list[str] = credited if credited is not None else []

    @classmethod
    def load(cls, workspace: Workspace, session_id: str) -> SessionLedger:
        path = workspace.engram_dir / "agents" / "sessions" / f"{safe_session(session_id)}.json"
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
            return cls(
                path,
                list(raw.get("handed", [])),
                int(raw.get("tokens", 0)),
                list(raw.get("accessed", [])),
                list(raw.get("credited", [])),
                raw.get("told") is True,
            )
        except (OSError, ValueError, TypeError):
            return cls(path)

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        data = {
            "handed": self.handed,
            "tokens": self.tokens,
            "accessed": self.accessed,
            "credited": self.credited,
            "told": self.told,
        }
        tmp.write_text(json.dumps(data), "utf-8")
        os.replace(tmp, self.path)


def safe_session(session_id: str) -> str:
    """A session id as a file name."""
    return _SAFE_SESSION.sub("_", session_id)[:128] or "default"


def render_memory(memory: Brief, others: Sequence[Brief] = (), here: str | None = None) -> str:
    """One line an agent reads: type, text and the citation it can confirm or flag by;
    ``others``: the shown memories it conflicts with, marked (``engram.marks``); ``here``:
    the file the lines are headed with, whose name a line does not repeat (``line 3``)."""
    where = ""
    if memory.file and memory.line is not None:
        line = memory.line + 1
        where = f" (line {line})" if memory.file == here else f" ({memory.file}:{line})"
    marks = conflict_markers([(o.id, o.content) for o in others])
    mark = f" {marks}" if marks else ""
    if memory.from_team:  # a teammate's words: quoted data with its origin (security.md)
        text = quote_shared(
            memory.content, memory.shared_by, memory.team_file, reviewed=memory.reviewed
        )
        return f"- {memory.type.upper()}{where}{mark}: {text} [{memory.id}]"
    review = " [unverified]" if memory.needs_review else ""
    # one line, as said: an agent's own memory with a line break wrote a second "- CRITICAL"
    # line, without the [unverified] mark, into an agent's context (stop 30)
    text = one_line(memory.content)
    return f"- {memory.type.upper()}{where}{review}{mark}: {text} [{memory.id}]"


def digest_partners(digest: Digest) -> Partners:
    def partners(memory: Brief) -> Sequence[Brief]:
        return [b for b in digest.shown(memory.conflicts) if b.id != memory.id]

    return partners


#: How an agent acts on what a hook handed it: said once per session (``SessionLedger.told``).
FOOTER = "Confirm or flag one with `engram confirm ID` / `engram flag ID --kind incorrect`."


def pack(
    header: str,
    memories: Sequence[Brief],
    budget: int,
    seen: set[str],
    partners: Partners | None = None,
    *,
    here: str | None = None,
    footer: bool = True,
) -> tuple[str, list[str]]:
    """Lines for ``memories`` not in ``seen`` (already handed out), within ``budget`` tokens.

    A memory linked as a conflict comes with the other side right after it, both marked,
    or not at all (docs/trust.md "Conflicts"): the pair fits the budget together or is left
    out together, even when the other side was handed out earlier in the session.
    ``here``: the file the header names (its lines say ``line N``, not the path again);
    ``footer``: end with :data:`FOOTER` when it fits.
    """
    lines: list[str] = []
    used = estimate_tokens(header) + 1
    ids: list[str] = []
    for memory in memories:
        if memory.id in seen or memory.id in ids:
            continue
        group = together([memory], lambda b: b.id, partners or (lambda _: ()))
        group = [b for b in group if b.id not in ids]
        rendered = [render_memory(b, partners(b) if partners else (), here) for b in group]
        cost = sum(estimate_tokens(line) + 1 for line in rendered)
        if used + cost > budget:
            continue
        lines.extend(rendered)
        used += cost
        ids.extend(b.id for b in group)
    if not lines:
        return "", []
    text = "\n".join([header, *lines])
    if footer and used + estimate_tokens(FOOTER) + 1 <= budget:
        text += "\n" + FOOTER
    return text, ids


_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add) File: (.+)$", re.MULTILINE)


def _tool_files(payload: JsonObject) -> list[str]:
    """Files a tool call touched: Claude Code's ``file_path``, or Codex's apply_patch headers."""
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return []
    files: list[str] = []
    if payload.get("tool_name") in FILE_TOOLS:
        for key in ("file_path", "notebook_path", "path"):
            value = tool_input.get(key)
            if isinstance(value, str) and value:
                files.append(value)
    for value in tool_input.values():
        if isinstance(value, str) and "*** " in value:
            files.extend(m.strip() for m in _PATCH_FILE.findall(value))
    return list(dict.fromkeys(files))


def _output(event: str, context: str) -> JsonObject | None:
    if not context:
        return None
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": context}}


def _spawn_background(workspace: Workspace, args: list[str], stdin_text: str) -> bool:
    """Run ``engram ARGS`` detached, so slow work never holds up the agent.

    At most one background job of a kind runs per workspace (``engram.jobs``: the child
    holds ``.engram/agents/<job>.lock``), so a burst of Stop events (Claude Code sends one
    per turn) starts one drain, not one per turn. False when one was already running.
    """
    from engram.jobs import start  # subprocess and all: only in the deferred child

    started = start(
        workspace, args[0], args, log_name="hooks.log", stdin_text=stdin_text, detach=True
    )
    return started is not None


#: How long SessionStart waits for a digest rebuild before answering from what it has.
SESSION_REBUILD_TIMEOUT_S = 40.0


def _rebuild_now(workspace: Workspace) -> bool:
    """Rebuild the digest in a child ``engram`` process and wait (SessionStart only).

    The digest lacks memories the store has (a writer killed before it mirrored, see
    docs/agents.md); the session brief must not silently leave them out. Returns False when
    the rebuild failed or took too long; the caller then starts a background one.
    """
    import subprocess

    from engram.interpreter import python_argv

    try:
        done = subprocess.run(
            [
                *python_argv(),
                "-m",
                "engram",
                "digest",
                "--rebuild",
                "--workspace",
                str(workspace.root),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=workspace.root,
            timeout=SESSION_REBUILD_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        _log().warning("digest rebuild for SessionStart did not finish: %s", exc)
        return False
    return done.returncode == 0


def _queue_observation(workspace: Workspace, payload: JsonObject) -> None:
    """Append the hook payload, secrets redacted, to the session's observer inbox.

    Tool output is whatever the agent saw (a ``cat .env``, a failing ``curl`` with its
    token): nothing of it reaches the disk unredacted (docs/security.md).
    """
    from engram.redaction import redact_value  # dozens of patterns: in the deferred child

    session = safe_session(str(payload.get("session_id") or "default"))
    inbox = workspace.engram_dir / "agents" / "inbox"
    inbox.mkdir(parents=True, exist_ok=True)
    with (inbox / f"{session}.jsonl").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(redact_value(_clipped(payload)), default=str) + "\n")


#: The most of one string of a hook's payload that is queued, and so redacted (stop 33): a
#: Read's payload holds the file the agent read (Claude Code allows 2,000 lines of 2,000
#: characters), a Write's the file it wrote; what the observer learns from is in far less.
MAX_QUEUED_CHARS = 100_000


def _clipped(value: object) -> object:
    """``value`` with each string cut to :data:`MAX_QUEUED_CHARS`, at its last white space
    (a token cut in two could leave a secret's head too short to be recognised)."""
    if isinstance(value, str):
        if len(value) <= MAX_QUEUED_CHARS:
            return value
        head = value[:MAX_QUEUED_CHARS]
        cut = max(head.rfind(" "), head.rfind("\n"), head.rfind("\t"))
        return head[: max(cut, 0)] + " [… cut by Engram]"
    if isinstance(value, dict):
        return {key: _clipped(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_clipped(item) for item in value]
    return value


def run_claude_code_hook(
    workspace: Workspace,
    payload: JsonObject,
    budget: HookBudget | None = None,
    *,
    background: bool = True,
    deferred: Deferred | None = None,
) -> JsonObject | None:
    """Answer one Claude Code hook payload; ``None`` means print nothing.

    ``deferred``: where to put the work that need not hold up the answer (queueing the
    payload, background jobs), in the order it must run; without it that work runs here.
    """
    budget = budget or HookBudget()
    later: Deferred = deferred if deferred is not None else []
    event = str(payload.get("hook_event_name") or "")
    session_id = str(payload.get("session_id") or "default")
    if not workspace.engram_dir.exists():
        # Engram was never used here: every hook stays cheap and writes nothing; a session
        # starting in a repository says once why it will hear nothing
        starting = event == "SessionStart" and _session_begins(payload)
        if starting and os.path.exists(os.path.join(workspace.root, ".git")):
            return _not_indexed(workspace)
        return None
    digest = Digest(workspace)
    try:
        # SessionStart briefs the whole session, so it waits for a rebuild (bounded); other
        # events answer at once and let a background rebuild catch up
        stale = background and digest.is_stale()
        if stale and not (event == "SessionStart" and _rebuild_now(workspace)):
            later.append(lambda: _spawn_none(workspace, ["digest", "--rebuild"], ""))
        later.append(lambda: _queue_observation(workspace, payload))
        ledger = SessionLedger.load(workspace, session_id)
        if event == "SessionStart":
            # where *this* user's last session stopped: never a teammate's work state
            work = [b for b in digest.by_type(["work_state"], limit=6) if not b.from_team][:3]
            rest = digest.by_type(
                [t for t in SESSION_TYPES if t != "work_state"],
                # module knowledge comes when the agent touches the module's files
                scopes=["global"],
                limit=40,
            )
            text, ids = pack(
                "Engram memory for this repository (learned in earlier sessions):",
                [*work, *rest],
                budget.session_tokens,
                set(ledger.handed),
                digest_partners(digest),
                footer=not ledger.told,
            )
            if not text and _session_begins(payload) and _never_indexed(workspace, digest):
                return _not_indexed(workspace)
        elif event == "UserPromptSubmit":
            text, ids = _prompt_context(
                workspace, digest, str(payload.get("prompt") or ""), budget, ledger
            )
        elif (event == "PostToolUse" and _tool_files(payload)) or (
            event == "PreToolUse" and payload.get("tool_name") in EDIT_TOOLS
        ):
            text, ids = _file_context(workspace, digest, payload, budget, ledger)
        elif event in ("Stop", "SessionEnd"):
            if background:
                drain = ["observe", "--format", "claude-code", "--drain-inbox"]
                later.append(lambda: _spawn_none(workspace, drain, json.dumps(payload)))
            return None
        else:
            return None
        if ids:
            ledger.handed.extend(ids)
            ledger.tokens += estimate_tokens(text)
            ledger.told = ledger.told or text.endswith(FOOTER)
            ledger.save()
        return _output(event, text)
    finally:
        digest.close()
        if deferred is None:
            _run_all(later)


def _session_begins(payload: JsonObject) -> bool:
    """A new session, not one resumed, cleared or compacted (``source``, which Claude Code
    and Codex send with SessionStart): the not-indexed line is said once per session."""
    return str(payload.get("source") or "startup") == "startup"


def _never_indexed(workspace: Workspace, digest: Digest) -> bool:
    """Nothing to brief with and no index ever ran (no code graph): ``.engram/`` made by an
    editor or ``engram setup``, not by Engram at work. Two cheap looks, no store opened."""
    graph = workspace.engram_dir / "graph.sqlite"
    return digest.count() == 0 and not graph.exists()


def _not_indexed(workspace: Workspace) -> JsonObject:
    """What SessionStart says in a repository Engram never indexed (a new user got silence
    there and took it for Engram at work): one line for the person, shown by the agent
    (``systemMessage``), nothing for the model; the index itself is theirs to run (a hook
    never does heavy work). docs/agents.md, "What the plugin does"."""
    return {
        "systemMessage": (
            "Engram has no memories for this repository yet: run `engram index` in "
            f"{workspace.root} once, and later sessions start with what it learns."
        )
    }


def _spawn_none(workspace: Workspace, args: list[str], stdin_text: str) -> None:
    _spawn_background(workspace, args, stdin_text)


def _run_all(work: Deferred) -> None:
    for step in work:
        step()


def _file_context(
    workspace: Workspace,
    digest: Digest,
    payload: JsonObject,
    budget: HookBudget,
    ledger: SessionLedger,
) -> tuple[str, list[str]]:
    """The gotchas of the files a tool call reads or is about to change, within budget: a
    part per file, its lines without the file's name again, the footer once at the end."""
    texts: list[str] = []
    ids: list[str] = []
    seen = set(ledger.handed)
    remaining = budget.file_tokens - (0 if ledger.told else estimate_tokens(FOOTER) + 1)
    before = payload.get("hook_event_name") == "PreToolUse"
    for raw in _tool_files(payload)[:5]:
        try:
            rel = workspace.relative(raw)
        except WorkspaceError:
            continue
        memories = digest.for_file(rel, FILE_INJECTION_TYPES, limit=20)
        header = (
            f"Engram memory for {rel} (read before changing it):"
            if before
            else f"Engram memory for {rel}:"
        )
        part, part_ids = pack(
            header, memories, remaining, seen, digest_partners(digest), here=rel, footer=False
        )
        if part:
            texts.append(part)
            ids.extend(part_ids)
            seen.update(part_ids)
            remaining -= estimate_tokens(part) + 1
    if texts and not ledger.told:
        texts.append(FOOTER)
    return "\n".join(texts), ids


def _prompt_context(
    workspace: Workspace, digest: Digest, prompt: str, budget: HookBudget, ledger: SessionLedger
) -> tuple[str, list[str]]:
    """Memories the prompt is about: the files it names, then the memories sharing its words.

    Only real matches: a memory must share ``MIN_PROMPT_MATCHES`` distinct words with the
    prompt (or all of them, for a one-word prompt); nothing is better than noise here.
    """
    found: list[Brief] = []
    for mention in dict.fromkeys(_FILE_MENTION.findall(prompt)):
        try:
            rel = workspace.relative(mention)
        except WorkspaceError:
            continue
        found += digest.for_file(rel, FILE_INJECTION_TYPES, limit=5)
    need = min(MIN_PROMPT_MATCHES, len(prompt_terms(prompt)))
    if need:
        found += [b for b, hits in digest.search(prompt, PROMPT_TYPES, limit=8) if hits >= need]
    return pack(
        "Engram memory relevant to this request:",
        found,
        budget.prompt_tokens,
        set(ledger.handed),
        digest_partners(digest),
        footer=not ledger.told,
    )


def hook_main(
    agent: str, stdin_text: str, workspace_arg: str | None, *, detach: bool = False
) -> int:
    """The ``engram hook`` entry point: never fails the agent (exit 0, errors logged).

    ``detach``: run the deferred work (queueing the payload, background jobs) in a forked
    child once the answer is written, so the agent does not wait for it (the ``engram hook``
    process; in-process callers leave it False and the work runs before this returns).
    """
    later: Deferred = []
    workspace: Workspace | None = None
    # where a failure is logged: the workspace the agent works in (the payload's ``cwd``),
    # which need not be this process's working directory
    where: str | None = workspace_arg
    try:
        payload = json.loads(stdin_text) if stdin_text.strip() else {}
        if not isinstance(payload, dict):
            raise ValueError("hook payload is not a JSON object")
        root = workspace_arg or payload.get("cwd") or os.getcwd()
        where = root if workspace_arg else str(_git_root(root))
        workspace = Workspace.open(where)
        if agent not in ("claude-code", "codex"):
            raise ValueError(f"unknown agent {agent!r}; expected claude-code or codex")
        result = run_claude_code_hook(workspace, payload, deferred=later)
        if result is not None:
            sys.stdout.write(json.dumps(result))
            sys.stdout.flush()
    except Exception as exc:  # a hook must never block or break the agent
        _log_failure(where, exc)
    if later and workspace is not None:
        if detach:
            run_detached(workspace, later, lambda exc: _log_failure(where, exc))
        else:
            run_all(later, lambda exc: _log_failure(where, exc))
    return 0


def hook_entry(args: Sequence[str]) -> int | None:
    """``engram hook AGENT [--workspace DIR]`` before the CLI's parser is imported
    (``engram.cli.entry``); ``None`` for any other command line (``--help``, a typo), which
    the full parser then answers or refuses."""
    if len(args) < 2 or args[0] != "hook":
        return None
    agent: str | None = None
    workspace: str | None = None
    rest = list(args[1:])
    while rest:
        item = rest.pop(0)
        if item in ("--workspace", "-w") and rest:
            workspace = rest.pop(0)
        elif item.startswith("--workspace=") and workspace is None:
            workspace = item.split("=", 1)[1]
        elif not item.startswith("-") and agent is None:
            agent = item
        else:
            return None
    if agent is None:
        return None
    return hook_main(agent, sys.stdin.read(), workspace, detach=True)


def _git_root(start: str) -> Path:
    from engram.gitroot import find_workspace_root

    return find_workspace_root(Path(start))


def _log_failure(where: str | None, exc: Exception) -> None:
    """Append ``exc`` to ``<workspace>/.engram/logs/hooks.log`` of the workspace ``where``
    (``--workspace`` or the payload's ``cwd``; this process's working directory when the
    payload could not be read). The agent may start hooks from another directory: logged
    by the process's own directory, a failure went to a folder with no ``.engram/`` (or
    another repository's) and the workspace's log stayed empty."""
    try:
        from engram.workspace import links_out_of_engram_dir

        root = Path(where).resolve() if where else _git_root(os.getcwd())
        log_dir = root / ".engram" / "logs"
        if log_dir.parent.exists() and not links_out_of_engram_dir(root):
            log_dir.mkdir(exist_ok=True)
            with (log_dir / "hooks.log").open("a", encoding="utf-8") as fh:
                from engram.redaction import redact_secrets

                detail = redact_secrets(repr(exc)[:500]).text
                fh.write(f"{time.strftime('%Y-%m-%dT%H:%M:%S')} hook failed: {detail}\n")
    except OSError:
        pass
