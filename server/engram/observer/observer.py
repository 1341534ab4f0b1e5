"""The :class:`Observer`: events in, signals and a checkpointed scratchpad, validated promotion out.

Integration with the engine (``engram.app`` already does this):

* ``engram.app.observe.observer_of`` builds ``Observer(EngineSink(engine), workspace=…,
  config=engine.config.observer, llm=engine.config.llm)`` lazily; the sink satisfies
  :class:`MemorySink` (``remember_many``, ``list`` and ``memories_for_file``).
  A settings change reaches it through :meth:`Observer.reconfigure`.
* ``engram.app.observe.observe(engine, event_dict)`` returns ``observer.observe(event_dict)`` — an
  :class:`~engram.observer.results.ObserveResult` (``to_dict()`` for JSON). Bad events
  raise :class:`~engram.observer.events.InvalidEvent` (an ``InvalidInput``) with one line.
* Session end: an event ``{"kind": "session_end", "session_id": ..., "outcome": ...}``
  finalises the session; the orchestrator may also call ``observer.finalize(id, outcome)``.
* Session summary for ``engram.sessionSummary`` / ``engram list --review``:
  ``observer.session_summary(session_id=None)`` (``None`` = the last finished session).
* Mid-session injection: ``observer.scratchpad_notes(session_id, file)``.
* Impact ranking: ``observer.coaccess_partners(file, k)``; cold start:
  ``observer.seed_coaccess(GitHistory(ws).coaccess_seed())``.

Per-event work is bounded (no store reads, no embeddings, one small file append); all
promotion work happens at validation events and at finalisation.

Long on purpose: the observer's session lifecycle (events in, checkpoints, promotion at
validation, summaries) is one state machine over the scratchpad.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

import attrs

from engram.config import LlmConfig, ObserverConfig
from engram.errors import EngramError
from engram.jsontypes import JsonObject
from engram.llm import LlmClient, PostJson
from engram.model import Memory, MemoryType
from engram.observer.events import (
    EventKind,
    InvalidEvent,
    ObservedEvent,
    event_from_checkpoint,
    parse_event,
)
from engram.observer.llm import rewrite_contents
from engram.observer.methodology import MethodologyPlugin, PluginRegistry
from engram.observer.patterns import module_of
from engram.observer.promotion import (
    Candidate,
    cross_session_candidates,
    failure_dead_ends,
    filter_candidates,
    session_candidates,
    to_memory,
    unit_candidates,
    work_state_candidate,
)
from engram.observer.results import ObserveResult, PromotionReport, SessionSummary
from engram.observer.scratchpad import ScratchpadStore
from engram.observer.sessions import (
    TRIGGER_COMMIT,
    TRIGGER_QA,
    TRIGGER_SESSION_END,
    TRIGGER_TASK_DONE,
    TRIGGER_TESTS,
    SessionGate,
    gate_table,
    resolve_gate,
)
from engram.observer.signals import (
    PARALLEL_WINDOW_S,
    ScratchpadNote,
    SessionState,
    Signal,
    SignalDetector,
)
from engram.observer.stats import ObserverStats
from engram.workspace import Workspace, WorkspaceError

log = logging.getLogger(__name__)

OUTCOME_ALIASES = {
    "success": "success",
    "succeeded": "success",
    "passed": "success",
    "done": "success",
    "validated": "success",
    "completed": "success",
    "failure": "failure",
    "failed": "failure",
    "error": "failure",
    "abandoned": "abandoned",
    "incomplete": "abandoned",
    "interrupted": "abandoned",
    "cancelled": "abandoned",
    "canceled": "abandoned",
}


class Remembered(Protocol):
    """One stored memory as the engine reports it (``engram.app.remember.RememberResult``)."""

    @property
    def memory(self) -> Memory: ...

    @property
    def merged(self) -> bool: ...


@runtime_checkable
class MemorySink(Protocol):
    """What the observer needs from the engine (``engram.app.observe.EngineSink``)."""

    def remember_many(self, memories: Sequence[Memory]) -> Sequence[Remembered | Memory]: ...

    def list(self, *, type: str, limit: int) -> Sequence[Memory]: ...

    def memories_for_file(self, rel: str) -> Sequence[Memory]:
        """The memories anchored to or related to ``rel`` (novelty checks; must be fast)."""
        ...


def _trigger_of(signal: Signal) -> str | None:
    if signal.kind != "validation" or not signal.data.get("passed"):
        return None
    return {
        "test_run": TRIGGER_TESTS,
        "commit": TRIGGER_COMMIT,
        "task_done": TRIGGER_TASK_DONE,
        "review": TRIGGER_TASK_DONE,
        "qa": TRIGGER_QA,
    }.get(str(signal.data.get("kind")))


#: Validations that promote at once; passing tests promote at the end of the turn.
_PROMOTE_NOW = frozenset({TRIGGER_COMMIT, TRIGGER_TASK_DONE, TRIGGER_QA})


@attrs.define
class _Session:
    state: SessionState
    learned: list[Memory] = attrs.field(factory=list)
    discarded: int = 0


class Observer:
    """Watches sessions and promotes what survived validation. Thread-safe."""

    def __init__(
        self,
        sink: MemorySink,
        *,
        workspace: Workspace | None = None,
        config: ObserverConfig | None = None,
        llm: LlmConfig | None = None,
        state_dir: Path | None = None,
        stats: ObserverStats | None = None,
        registry: PluginRegistry | None = None,
        clock: Callable[[], float] = time.time,
        llm_post: PostJson | None = None,
    ) -> None:
        self.sink = sink
        self.workspace = workspace
        self.config = config or ObserverConfig()
        # the one LLM client (engram.llm): endpoint, key and redaction decided there
        self.llm: LlmClient | None = LlmClient.from_config(llm, post=llm_post)
        self._clock = clock
        self._llm_post = llm_post
        if state_dir is None:
            if self.workspace is None:
                raise EngramError("the observer needs a workspace or a state directory")
            state_dir = self.workspace.engram_dir / "observer"
            self.workspace.ensure_engram_dir()
        self.state_dir = state_dir
        self.scratchpads = ScratchpadStore(state_dir)
        self._stats = stats
        self.gates = gate_table(self.config.session_gates)
        #: a registry handed in is the caller's: a settings change never replaces it
        self._own_registry = registry is None
        self.registry = registry or self._load_plugins(self.config.plugins)
        self._lock = threading.RLock()
        _ = self.stats  # open (or create) the statistics now, not inside the first event
        self._sessions: dict[str, _Session] = {}
        self._last_summary: SessionSummary | None = None
        self.detector = SignalDetector(
            known_sequences=lambda: self.stats.known_sequences(),
            conflicts=self._check_conflict,
            step_limit=lambda s: resolve_gate(self.gates, s.session_type).step_limit,
        )

    # ------------------------------------------------------------------ components

    @property
    def stats(self) -> ObserverStats:
        if self._stats is None:
            self.state_dir.mkdir(parents=True, exist_ok=True)
            self._stats = ObserverStats(
                self.state_dir / "observer.sqlite",
                half_life_days=self.config.coaccess_half_life_days,
            )
        return self._stats

    def _load_plugins(self, specs: Sequence[str]) -> PluginRegistry:
        registry = PluginRegistry()
        registry.load_entry_points()
        registry.load_specs(specs, self.workspace.root if self.workspace is not None else None)
        return registry

    def reconfigure(self, config: ObserverConfig, llm: LlmConfig | None) -> None:
        """New settings for the next event (``Engine.reconfigure``), keeping what runs.

        Sessions in progress keep their scratchpads and the session type and methodology
        they started with; the gate table, the plugins, the co-access half-life, the
        event budget and the LLM client (``observer.llm_rewrite`` with ``[llm]``) follow
        the new settings. ``enabled`` is read per request from the engine's config.
        """
        client = LlmClient.from_config(llm, post=self._llm_post)
        registry = (
            self._load_plugins(config.plugins)
            if self._own_registry and config.plugins != self.config.plugins
            else self.registry
        )
        with self._lock:
            self.config = config
            self.llm = client
            self.gates = gate_table(config.session_gates)
            self.registry = registry
            if self._stats is not None:
                self._stats.half_life_s = config.coaccess_half_life_days * 86400.0

    def close(self) -> None:
        with self._lock:
            if self._stats is not None:
                self._stats.close()
                self._stats = None

    def _check_conflict(
        self, file: str, session_id: str, agent_id: str | None, ts: float
    ) -> tuple[str, str | None] | None:
        return self.stats.check_edit(file, session_id, agent_id, ts, PARALLEL_WINDOW_S)

    def gate_for(self, state: SessionState) -> SessionGate:
        return resolve_gate(self.gates, state.session_type)

    def plugin_for(self, state: SessionState) -> MethodologyPlugin:
        return self.registry.get(state.methodology)

    # ------------------------------------------------------------------ observe

    def observe(self, raw: JsonObject | ObservedEvent) -> ObserveResult:
        """Validate one event, update its session, checkpoint it, and promote if it validated.

        Raises :class:`InvalidEvent` (one line) for an event that cannot be used.
        """
        started = time.perf_counter()
        event = raw if isinstance(raw, ObservedEvent) else parse_event(raw)
        event = self._normalise_paths(event)
        ts = float(event.ts) if event.ts is not None else self._clock()
        with self._lock:
            if event.kind is EventKind.SESSION_START:
                self._sweep_idle(exclude=event.session_id)
            session = self._session(event.session_id, create=True)
            assert session is not None
            state = session.state
            try:
                signals = self.detector.apply(state, event, ts)
            except Exception:  # a detector bug must never break the editor or the agent
                log.exception("observer signal detection failed for one event")
                signals = []
            record: JsonObject = {"ts": ts, "event": event.to_dict()}
            kept = [s.to_dict() for s in signals if s.kind == "parallel_conflict"]
            if kept:
                record["signals"] = kept
            self.scratchpads.append(event.session_id, record)
            elapsed = (time.perf_counter() - started) * 1000.0
            if elapsed > self.config.event_budget_ms:
                log.debug(
                    "observer event took %.2f ms (budget %.1f)",
                    elapsed,
                    self.config.event_budget_ms,
                )
            result = ObserveResult(
                accepted=True,
                session_id=event.session_id,
                step=state.step,
                signals=signals,
                elapsed_ms=elapsed,
            )
            gate = self.gate_for(state)
            triggers = [t for t in (_trigger_of(s) for s in signals) if gate.validated_by(t or "")]
            if triggers:
                state.validated_upto = state.step
            unit_done = any(s.kind == "work_unit" and s.data.get("passed") for s in signals)
            if event.kind is EventKind.SESSION_END:
                report = self._finalize(session, event.outcome)
                result.promotion = report
                result.summary = self._last_summary
            elif gate.partial_promotion and (unit_done or set(triggers) & _PROMOTE_NOW):
                # a commit, a finished task or QA closes a piece of work: promote it now
                result.promotion = self._promote(session, "validated", state.step)
            elif (
                gate.partial_promotion
                and event.kind is EventKind.TURN_END
                and state.validated_upto > state.promoted_upto
            ):
                # passing tests validate the work so far; it is promoted when the agent
                # hands back, so that a commit in the same turn is linked to it
                result.promotion = self._promote(session, "validated", state.validated_upto)
        return result

    def _normalise_paths(self, event: ObservedEvent) -> ObservedEvent:
        if not event.files or self.workspace is None:
            return event
        files: list[str] = []
        for path in event.files:
            try:
                rel = self.workspace.relative(path)
            except (WorkspaceError, OSError, ValueError):
                continue  # outside the workspace: never stored, never learned from
            if rel != "." and rel not in files:
                files.append(rel)
        return attrs.evolve(event, files=files)

    # ------------------------------------------------------------------ sessions

    def _session(self, session_id: str, *, create: bool) -> _Session | None:
        session = self._sessions.get(session_id)
        if session is not None:
            return session
        if self.scratchpads.exists(session_id):
            session = self._reload(session_id)
        elif create:
            session = _Session(
                SessionState(
                    session_id=session_id,
                    session_type=self.config.session_type,
                    methodology=self.config.methodology,
                )
            )
        if session is not None:
            self._sessions[session_id] = session
        return session

    def _reload(self, session_id: str) -> _Session:
        """Rebuild a session from its checkpoint (after a crash, or in a new CLI process)."""
        state = SessionState(
            session_id=session_id,
            session_type=self.config.session_type,
            methodology=self.config.methodology,
        )
        session = _Session(state)
        conflicts: dict[tuple[int, str], tuple[str, str | None]] = {}
        replay = SignalDetector(
            known_sequences=lambda: self.stats.known_sequences(),
            conflicts=lambda f, _s, _a, _t: conflicts.get((state.step, f)),
            step_limit=lambda s: resolve_gate(self.gates, s.session_type).step_limit,
        )
        for record in self.scratchpads.load(session_id):
            mark = record.get("promoted")
            if mark is not None:
                state.promoted_upto = max(state.promoted_upto, mark["upto"])
                state.promoted_keys.update(mark["keys"])
                state.promoted_ids.extend(mark["ids"])
                continue
            try:
                event = event_from_checkpoint(record["event"])
            except Exception as exc:
                log.warning("skipping an unreadable checkpoint record of %s: %s", session_id, exc)
                continue
            for sig in record.get("signals", []):
                files, data, step = sig.get("files"), sig.get("data"), sig.get("step", 0)
                if sig.get("kind") == "parallel_conflict" and isinstance(files, list) and files:
                    data = data if isinstance(data, dict) else {}
                    agent = data.get("other_agent")
                    conflicts[(step if isinstance(step, int) else 0, str(files[0]))] = (
                        str(data.get("other_session")),
                        agent if isinstance(agent, str) else None,
                    )
            try:
                signals = replay.apply(state, event, record.get("ts", 0.0))
            except Exception:
                log.exception("replaying a checkpoint event failed")
                continue
            gate = self.gate_for(state)
            if any(gate.validated_by(_trigger_of(s) or "") for s in signals):
                state.validated_upto = state.step
        return session

    def active_sessions(self) -> list[str]:
        with self._lock:
            ids = {sid for sid, _ in self.scratchpads.active()}
            ids.update(sid for sid, s in self._sessions.items() if not s.state.finalized)
        return sorted(ids)

    def _sweep_idle(self, exclude: str) -> list[PromotionReport]:
        limit = self.config.idle_finalize_hours * 3600.0
        if limit <= 0:
            return []
        now = time.time()
        reports = []
        for session_id, mtime in self.scratchpads.active():
            if session_id == exclude or now - mtime < limit:
                continue
            session = self._session(session_id, create=False)
            if session is not None:
                reports.append(self._finalize(session, None))
        return reports

    # ------------------------------------------------------------------ injection

    def scratchpad_notes(self, session_id: str, file: str | None = None) -> list[ScratchpadNote]:
        """Notes of a running session, for injection right away (docs/observer.md): the agent's own
        notes plus provisional findings (self-corrections, resolved errors, dead ends).
        Provisional ones have ids ending in ``#p…``; nothing here is permanent yet."""
        with self._lock:
            session = self._session(session_id, create=False)
            if session is None:
                return []
            state = session.state
            rel = None
            if file is not None:
                try:
                    rel = self.workspace.relative(file) if self.workspace else file
                except WorkspaceError:
                    return []
            notes = [n for n in state.notes if not n.dropped_reason]
            provisional: list[ScratchpadNote] = []
            for i, rec in enumerate(state.self_corrections):
                provisional.append(
                    ScratchpadNote(
                        f"{session_id}#p{i}",
                        rec.sentence,
                        "gotcha",
                        rec.step,
                        list(rec.files),
                        state.tainted_at(rec.step),
                    )
                )
            for i, rec in enumerate(state.dead_ends):
                provisional.append(
                    ScratchpadNote(
                        f"{session_id}#pd{i}",
                        f"Dead end: {rec.sentence}",
                        "dead_end",
                        rec.step,
                        list(rec.files),
                        state.tainted_at(rec.step),
                    )
                )
            for i, err in enumerate(state.errors.values()):
                if err.resolved_step is not None and err.fix_files:
                    provisional.append(
                        ScratchpadNote(
                            f"{session_id}#pe{i}",
                            f"{err.headline} was fixed by changing {', '.join(err.fix_files[:3])}",
                            "error_pattern",
                            err.resolved_step,
                            list(err.fix_files),
                            state.tainted_at(err.resolved_step),
                        )
                    )
            out = notes + provisional
            if rel is not None:
                out = [n for n in out if rel in n.files or not n.files]
            return out

    # ------------------------------------------------------------------ promotion

    def finalize(self, session_id: str, outcome: str | None = None) -> PromotionReport:
        """End a session: promote (success), keep dead ends (failure) or record where it
        stopped (abandoned). ``outcome=None`` infers it from the validation events."""
        with self._lock:
            session = self._session(session_id, create=False)
            if session is None or session.state.finalized:
                return PromotionReport(session_id, "skipped", error="no such running session")
            return self._finalize(session, outcome)

    def _infer_outcome(self, state: SessionState, gate: SessionGate) -> str:
        if TRIGGER_SESSION_END in gate.triggers:
            return "success"
        if not state.validations:
            return "abandoned"
        last = state.validations[-1]
        if not last.passed and last.kind in ("test_run", "qa", "build", "task_done"):
            return "failure"
        last_edit = max(state.edited.values(), default=0)
        for record in reversed(state.validations):
            trigger = {
                "test_run": TRIGGER_TESTS,
                "commit": TRIGGER_COMMIT,
                "task_done": TRIGGER_TASK_DONE,
                "review": TRIGGER_TASK_DONE,
                "qa": TRIGGER_QA,
            }.get(record.kind)
            if record.passed and trigger and gate.validated_by(trigger):
                return "success" if record.step >= last_edit else "abandoned"
        return "abandoned"

    def _finalize(self, session: _Session, outcome: str | None) -> PromotionReport:
        state = session.state
        gate = self.gate_for(state)
        resolved = OUTCOME_ALIASES.get((outcome or "").strip().lower()) if outcome else None
        final = resolved or self._infer_outcome(state, gate)
        signal_keys = _signal_keys(state)
        try:
            self.stats.record_session(
                session_id=state.session_id,
                session_type=state.session_type,
                outcome=final,
                started=state.started_ts or self._clock(),
                ended=state.last_ts or self._clock(),
                steps=state.step,
                validated=final == "success",
                accessed=list(state.file_access),
                edited=list(state.edited),
                pairs=list(state.pairs),
                signal_keys=signal_keys,
                labels=state.labels,
            )
        except Exception as exc:  # statistics are an optimisation; the session still ends
            log.warning("could not record observer statistics: %s", exc)
        plugin = self.plugin_for(state)
        partial: PromotionReport | None = None
        if final != "success" and state.validated_upto > state.promoted_upto:
            # the part that was validated before things went wrong still counts
            partial = self._promote(session, "validated", state.validated_upto, recorded=True)
        lo = state.promoted_upto
        if gate.max_memories <= 0 and not gate.triggers:
            report = PromotionReport(state.session_id, "skipped", upto_step=state.step)
        elif final == "success":
            report = self._promote(session, "success", state.step, cross=True, recorded=True)
        elif final == "failure":
            extra = failure_dead_ends(state, lo)
            dead = [
                c
                for c in session_candidates(state, lo, state.step, None, True)
                if c.type is MemoryType.DEAD_END
            ]
            report = self._promote(
                session, "failure", state.step, only=dead + extra, recorded=True, any_signal=True
            )
        else:
            extra = []
            ws = work_state_candidate(state, plugin)
            if ws is not None:
                extra.append(ws)
            dead = [
                c
                for c in session_candidates(state, lo, state.step, None, True)
                if c.type is MemoryType.DEAD_END
            ]
            report = self._promote(
                session, "abandoned", state.step, only=dead + extra, recorded=True, any_signal=True
            )
        if partial is not None:
            report.promoted = partial.promoted + report.promoted
            report.merged_ids = partial.merged_ids + report.merged_ids
            report.discarded = partial.discarded + report.discarded
            report.elapsed_ms += partial.elapsed_ms
            report.write_ms += partial.write_ms
        state.finalized = True
        summary = self._summary(session, final)
        self._last_summary = summary
        try:
            self.scratchpads.write_summary(state.session_id, summary.to_dict())
            self.scratchpads.archive(state.session_id)
        except OSError as exc:
            log.warning("could not archive the scratchpad of %s: %s", state.session_id, exc)
        self._sessions.pop(state.session_id, None)
        return report

    def _promote(
        self,
        session: _Session,
        label: str,
        upto: int,
        *,
        cross: bool = False,
        recorded: bool = False,
        only: list[Candidate] | None = None,
        any_signal: bool = False,
    ) -> PromotionReport:
        state = session.state
        started = time.perf_counter()
        gate = self.gate_for(state)
        plugin = self.plugin_for(state)
        lo = state.promoted_upto
        if only is not None:
            candidates = list(only)
        else:
            candidates = session_candidates(state, lo, upto, self.stats, recorded)
            candidates += unit_candidates(state, plugin, lo, upto)
            if cross:
                try:
                    candidates += cross_session_candidates(state, self.stats)
                except Exception as exc:
                    log.warning("cross-session candidates failed: %s", exc)
        if any_signal:
            gate = attrs.evolve(gate, signals=("*",), max_memories=max(gate.max_memories, 3))
        already = sum(
            1
            for m in session.learned
            if m.type not in (MemoryType.WORK_STATE, MemoryType.WORK_UNIT_OUTCOME)
        )
        cap = max(0, gate.max_memories - already)
        lookup = _ExistingLookup(self.sink)
        kept, dropped = filter_candidates(candidates, state, gate, lookup, cap=cap)
        commits = [v for v in state.validations if v.kind == "commit" and v.commit_sha]

        def commit_for(cand: Candidate) -> str | None:
            later = [c for c in commits if c.step >= cand.step] or commits
            for commit in later:
                if not commit.files or set(commit.files) & set(cand.files):
                    return commit.commit_sha
            return None

        memories = [to_memory(c, state, plugin, commit_for) for c in kept]
        elapsed = (time.perf_counter() - started) * 1000.0
        report = PromotionReport(
            state.session_id,
            label,
            discarded=dropped,
            tainted=state.tainted,
            upto_step=upto,
            elapsed_ms=elapsed,
        )
        if memories and self.config.llm_rewrite and self.llm is not None:
            rewritten = rewrite_contents(self.llm, [m.content for m in memories])
            if rewritten:
                memories = [
                    attrs.evolve(m, content=t, citation_text="")
                    for m, t in zip(memories, rewritten, strict=True)
                ]
        written = time.perf_counter()
        if memories:
            try:
                results = list(self.sink.remember_many(memories))
                stored = [r if isinstance(r, Memory) else r.memory for r in results]
                report.merged_ids = [
                    r.memory.id for r in results if not isinstance(r, Memory) and r.merged
                ]
                report.promoted = [m for m in stored if isinstance(m, Memory)]
            except EngramError as exc:
                report.error = str(exc)
                log.warning("promotion of %d memories failed: %s", len(memories), exc)
        report.write_ms = (time.perf_counter() - written) * 1000.0
        if report.error is None:
            keys = [c.key for c in kept]
            state.promoted_keys.update(keys)
            state.promoted_upto = max(state.promoted_upto, upto)
            ids = [m.id for m in report.promoted]
            state.promoted_ids.extend(ids)
            session.learned.extend(report.promoted)
            session.discarded += len(dropped)
            ledger = [
                (c.key, m.id)
                for c, m in zip(kept, report.promoted, strict=False)
                if c.cross_session
            ]
            if ledger:
                self.stats.mark_promoted(ledger, self._clock())
            if not state.finalized:
                self.scratchpads.append(
                    state.session_id, {"promoted": {"upto": upto, "keys": keys, "ids": ids}}
                )
        return report

    # ------------------------------------------------------------------ summary

    def _summary(self, session: _Session, outcome: str) -> SessionSummary:
        state = session.state
        learned = session.learned
        phase = state.phase
        if phase:
            phase = self.plugin_for(state).map_phase(phase).value
        duration = (state.last_ts or 0.0) - (state.started_ts or 0.0)
        commits = [v.commit_sha for v in state.validations if v.kind == "commit" and v.commit_sha]
        dead_ends = [m.content for m in learned if m.type is MemoryType.DEAD_END]
        review = sum(1 for m in learned if m.needs_review)
        parts = [f"{state.step} steps", f"{len(state.edited)} files edited"]
        if learned:
            parts.append(f"learned {len(learned)} memories ({review} to review)")
        else:
            parts.append("nothing promoted")
        if state.applied:
            parts.append(f"{len(state.applied)} memories applied")
        if commits:
            parts.append(f"{len(commits)} commit(s)")
        if state.tainted:
            parts.append("web content seen: what it learned needs review")
        if state.web_instructions:
            parts.append(f"{len(state.web_instructions)} web instruction(s) ignored")
        text = f"Session {outcome}: " + ", ".join(parts) + "."
        return SessionSummary(
            session_id=state.session_id,
            session_type=state.session_type,
            methodology=state.methodology,
            phase=phase,
            outcome=outcome,
            steps=state.step,
            duration_s=max(0.0, duration),
            applied=list(state.applied),
            learned=list(learned),
            discarded=session.discarded,
            dead_ends=dead_ends,
            notes=[n for n in state.notes],
            signal_counts=dict(state.signal_counts),
            tainted=state.tainted,
            web_sources=list(state.web_sources),
            blocked_instructions=list(state.web_instructions),
            files_edited=list(state.edited),
            commits=commits,
            text=text,
        )

    def session_summary(self, session_id: str | None = None) -> JsonObject | None:
        """The summary of a finished session (``None``: the last one), as a dict; for a
        running session, a live summary of what it has so far."""
        with self._lock:
            if session_id is not None:
                session = self._sessions.get(session_id)
                if session is not None and not session.state.finalized:
                    return self._summary(session, "running").to_dict()
            if session_id is None and self._last_summary is not None:
                return self._last_summary.to_dict()
            return self.scratchpads.read_summary(session_id)

    # ------------------------------------------------------------------ co-access graph

    def coaccess_partners(self, file: str, k: int = 10) -> list[tuple[str, float]]:
        """Files accessed together with ``file`` (workspace-relative), best first, in [0, 1]."""
        rel = file
        if self.workspace is not None:
            try:
                rel = self.workspace.relative(file)
            except WorkspaceError:
                return []
        return self.stats.coaccess_partners(rel, k, now=self._clock())

    def seed_coaccess(self, edges: Iterable[tuple[str, str, float]]) -> int:
        """Cold-start co-access from git co-commits (``GitHistory.coaccess_seed()``)."""
        return self.stats.seed(edges)


class _ExistingLookup:
    """Existing memories for novelty: the same files' memories (``memories_for_file``) when
    the signal names files, otherwise a bounded list of the same type."""

    def __init__(self, sink: MemorySink) -> None:
        self.sink = sink
        self._by_file: dict[str, list[Memory]] = {}
        self._by_type: dict[MemoryType, list[Memory]] = {}

    def __call__(self, mtype: MemoryType, files: Sequence[str]) -> list[Memory]:
        if files:
            pool: dict[str, Memory] = {}
            for file in files[:4]:
                if file not in self._by_file:
                    try:
                        self._by_file[file] = list(self.sink.memories_for_file(file))
                    except Exception as exc:
                        log.debug("novelty lookup for %s failed: %s", file, exc)
                        self._by_file[file] = []
                for memory in self._by_file[file]:
                    pool.setdefault(memory.id, memory)
            return [m for m in pool.values() if m.type is mtype]
        if mtype not in self._by_type:
            try:
                self._by_type[mtype] = list(self.sink.list(type=mtype.value, limit=2000))
            except Exception as exc:
                log.debug("novelty lookup for %s failed: %s", mtype.value, exc)
                self._by_type[mtype] = []
        return self._by_type[mtype]


def _signal_keys(state: SessionState) -> dict[tuple[str, str], int]:
    """Per-session signal counts by key, folded into the cross-session statistics."""
    keys: dict[tuple[str, str], int] = {}
    for fingerprint, record in state.errors.items():
        keys[("error", fingerprint)] = record.count
    for backtrack in state.backtracks:
        key = ("backtrack", backtrack.file)
        keys[key] = keys.get(key, 0) + 1
    for file, reads in state.reads_without_edit.items():
        if reads >= 3:
            keys[("read_abandon", file)] = reads
    for pattern, count in state.greps.items():
        if count >= 2:
            keys[("repeated_grep", pattern)] = count
    for file in state.config_touched:
        keys[("config_touch", file)] = 1
    for _, _, files in state.token_spikes:
        for file in files[:1]:
            keys[("token_spike", file)] = keys.get(("token_spike", file), 0) + 1
    modules = {module_of(f) for f in state.edited}
    if state.overrun_step is not None:
        for module in modules:
            keys[("step_overrun", module)] = 1
    if state.tokens_total:
        for module in modules:
            keys[("context_tokens", module)] = state.tokens_total
    return keys


__all__ = ["InvalidEvent", "MemorySink", "Observer"]
