"""From scratchpad to permanent memory: candidates, the filter pipeline, templates
(docs/observer.md).

Candidates come from two places:

* the session's own records (notes, self-corrections, dead ends, repeated errors,
  backtracks, conflicts, work units), limited to the steps being promoted, so that a
  validated work unit promotes its part and later steps wait for their own validation;
* cross-session statistics (co-access coupling, prefetch sets, recipes, context cost,
  calibration), only when a whole session finishes validated.

The pipeline then applies, in order: the session type's signal filter, frequency
thresholds (docs/observer.md minimum sessions), the web-content trust gate (instructions found in
fetched content are dropped, anything learned after web content needs review), novelty
against existing memories (rapidfuzz on the memories of the same files and type), the
score ``0.4·frequency + 0.3·recency + 0.3·novelty`` with its thresholds, and the
per-session cap. Wording comes from fixed templates so the same evidence always gives
the same sentence (which also lets the engine merge re-learned memories).

Long on purpose: every candidate source and the one filter pipeline they share stay together
so a promotion rule is read once (docs/observer.md).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from engram.jsontypes import JsonObject
from engram.model import (
    CodeAnchor,
    Memory,
    MemoryScope,
    MemorySource,
    MemoryType,
    Provenance,
    WorkUnitRef,
)
from engram.observer.methodology import MethodologyPlugin
from engram.observer.patterns import echoes, module_of
from engram.observer.sessions import SessionGate
from engram.observer.signals import SIGNAL_PRIORITY, BacktrackRecord, SessionState
from engram.observer.stats import ObserverStats

#: Minimum sessions (or in-session occurrences) per signal class (docs/observer.md table).
MIN_SESSIONS: dict[str, int] = {
    "co_access": 3,
    "self_correction": 1,
    "dead_end_language": 1,
    "dead_end": 1,
    "error_retry": 2,
    "parallel_conflict": 1,
    "read_abandon": 3,
    "repeated_grep": 2,
    "tool_sequence": 3,
    "file_access": 3,
    "step_overrun": 3,
    "backtrack": 2,
    "config_touch": 2,
    "token_spike": 3,
    "context_cost": 3,
    "note": 1,
    "work_unit": 1,
    "work_state": 1,
}
SCORE_THRESHOLD = 0.6
LOW_BAR_THRESHOLD = 0.3  # dead ends and explicit notes: valuable even once (docs/observer.md)
NOVELTY_DUPLICATE = 88.0  # rapidfuzz ratio at which a candidate is "already known"
CAUSAL_SHARE = 0.8  # co-accessed in >80% of a file's sessions -> causal_dependency
PREFETCH_SHARE = 0.5  # read in >50% of a module's sessions -> prefetch_pattern
TAINT_FACTOR = 0.7  # docs/observer.md trust gate
#: Records, not inferences: they describe what happened and are not capped or reviewed.
RECORD_TYPES = frozenset({MemoryType.WORK_STATE, MemoryType.WORK_UNIT_OUTCOME})
VALIDATION_LABELS = frozenset({"Bash:test", "Bash:commit"})


@attrs.define
class Candidate:
    key: str
    type: MemoryType
    content: str
    signal: str
    step: int
    files: list[str] = attrs.field(factory=list)
    occurrences: int = 1
    sessions: int = 1
    source: MemorySource = MemorySource.OBSERVER_INFERRED
    anchor: bool = False
    cross_session: bool = False
    extra: JsonObject = attrs.field(factory=dict)
    score: float = 0.0
    novelty: float = 1.0
    reinforces: str | None = None
    tainted: bool = False
    after_web: bool = False

    @property
    def min_required(self) -> int:
        return MIN_SESSIONS.get(self.signal, 1)

    @property
    def threshold(self) -> float:
        if self.type is MemoryType.DEAD_END or self.signal == "note":
            return LOW_BAR_THRESHOLD
        return SCORE_THRESHOLD

    @property
    def priority(self) -> float:
        return SIGNAL_PRIORITY.get(self.signal, 0.7)


@attrs.define
class Discarded:
    key: str
    type: str
    reason: str
    content: str = ""

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


def _files_text(files: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(files[:limit])
    return shown + (f" and {len(files) - limit} more" if len(files) > limit else "")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --------------------------------------------------------------------------- in-session


def session_candidates(
    state: SessionState, lo: int, hi: int, stats: ObserverStats | None, recorded: bool
) -> list[Candidate]:
    """Candidates from records whose step lies in (lo, hi]."""

    def within(step: int) -> bool:
        return lo < step <= hi

    def sessions_of(kind: str, key: str) -> int:
        if stats is None:
            return 1
        seen, _ = stats.signal_sessions(kind, key)
        return seen if recorded else seen + 1

    out: list[Candidate] = []
    for note in state.notes:
        if not within(note.step):
            continue
        if note.dropped_reason:
            continue
        try:
            mtype = MemoryType(note.type)
        except ValueError:
            mtype = MemoryType.GOTCHA
        out.append(
            Candidate(
                f"note:{note.id}",
                mtype,
                note.content,
                "note",
                note.step,
                list(note.files),
                source=MemorySource.AGENT_EXPLICIT,
                anchor=bool(note.files),
            )
        )
    for record in state.self_corrections:
        if not within(record.step):
            continue
        where = f" (noticed while working on {_files_text(record.files)})" if record.files else ""
        out.append(
            Candidate(
                f"self_correction:{record.sentence.lower()}",
                MemoryType.GOTCHA,
                _clip(record.sentence, 300) + where,
                "self_correction",
                record.step,
                list(record.files),
                anchor=bool(record.files),
                extra={"sentence": record.sentence},
            )
        )
    for record in state.dead_ends:
        if not within(record.step):
            continue
        approach = f"changing {_files_text(record.files)}" if record.files else "this approach"
        task = f" for '{_clip(state.task, 80)}'" if state.task else ""
        content = f"Dead end{task}: {approach} did not work. {_clip(record.sentence, 300)}"
        if record.last_error:
            content += f" Last error: {_clip(record.last_error, 160)}"
        out.append(
            Candidate(
                f"dead_end:{record.sentence.lower()}",
                MemoryType.DEAD_END,
                content,
                "dead_end_language",
                record.step,
                list(record.files),
                anchor=bool(record.files),
                extra={"approach_tried": approach, "why_failed": record.sentence},
            )
        )
    for err in state.errors.values():
        if not within(err.last_step):
            continue
        sessions = sessions_of("error", err.fingerprint)
        what = f"`{_clip(err.command, 80)}`" if err.command else err.tool
        content = f"{what} fails with: {_clip(err.headline, 200)}"
        if err.resolved_step is not None and err.fix_files:
            content += f". Fixed by changing {_files_text(err.fix_files)}"
        elif err.resolved_step is not None:
            content += ". It passed again after a retry"
        out.append(
            Candidate(
                f"error_pattern:{err.fingerprint}",
                MemoryType.ERROR_PATTERN,
                content + ".",
                "error_retry",
                err.last_step,
                list(err.fix_files),
                occurrences=err.count,
                sessions=sessions,
                anchor=len(err.fix_files) == 1,
                extra={"fingerprint": err.fingerprint, "retries": err.count},
            )
        )
    by_file: dict[str, list[BacktrackRecord]] = {}
    for backtrack in state.backtracks:
        if within(backtrack.step):
            by_file.setdefault(backtrack.file, []).append(backtrack)
    for file, records in by_file.items():
        occurrences = sum(2 if r.how == "revert" else 1 for r in records)
        last = records[-1]
        kinds = "reverted" if any(r.how == "revert" for r in records) else "redone"
        content = (
            f"Edits to {file} were {kinds} {len(records)} time(s) before they held: the first "
            "assumption about this code was wrong"
        )
        if last.after:
            content += f"; the change that held: `{_clip(last.after, 80)}`"
        out.append(
            Candidate(
                f"backtrack:{file}",
                MemoryType.GOTCHA,
                content + ".",
                "backtrack",
                last.step,
                [file],
                occurrences=occurrences,
                sessions=sessions_of("backtrack", file),
                anchor=True,
            )
        )
    for step, file, other in state.conflicts:
        if within(step):
            out.append(
                Candidate(
                    f"parallel_conflict:{file}",
                    MemoryType.GOTCHA,
                    f"{file} was edited by two agents at once ({state.session_id} and {other}); "
                    "serialise work on it or split it.",
                    "parallel_conflict",
                    step,
                    [file],
                    anchor=True,
                )
            )
    for pattern, count in state.greps.items():
        target = state.grep_targets.get(pattern)
        if count < 2 or not target:
            continue
        sessions = sessions_of("repeated_grep", pattern)
        out.append(
            Candidate(
                f"repeated_grep:{pattern}",
                MemoryType.MODULE_INSIGHT,
                f"Searching for '{_clip(pattern, 60)}' took {count} tries; it lives in {target}.",
                "repeated_grep",
                hi,
                [target],
                occurrences=count,
                sessions=sessions,
            )
        )
    for file, reads in state.reads_without_edit.items():
        if reads < 3:
            continue
        sessions = sessions_of("read_abandon", file)
        out.append(
            Candidate(
                f"read_abandon:{file}",
                MemoryType.MODULE_INSIGHT,
                f"{file} is read again and again without being edited ({sessions} sessions): "
                "it is hard to follow; read its entry points first.",
                "read_abandon",
                state.file_first_step.get(file, hi),
                [file],
                occurrences=1,
                sessions=sessions,
            )
        )
    for config, step in state.config_touched.items():
        others = [f for f in state.edited if f != config]
        if not others or not within(step):
            continue
        out.append(
            Candidate(
                f"config_touch:{config}",
                MemoryType.CAUSAL_DEPENDENCY,
                f"Changes to {config} went together with changes to {_files_text(others)}.",
                "config_touch",
                step,
                [config, *others[:4]],
                sessions=sessions_of("config_touch", config),
            )
        )
    for step, tokens, files in state.token_spikes:
        if not files or not within(step):
            continue
        file = files[0]
        out.append(
            Candidate(
                f"context_cost:{file}",
                MemoryType.CONTEXT_COST,
                f"Reading {file} costs about {tokens} tokens of context; "
                "read only the part you need.",
                "token_spike",
                step,
                [file],
                sessions=sessions_of("token_spike", file),
                extra={"tokens": tokens},
            )
        )
    if state.overrun_step is not None and within(state.overrun_step):
        module = _main_module(state)
        if module:
            limit = state.planned_steps or 0
            out.append(
                Candidate(
                    f"task_calibration:{module}",
                    MemoryType.TASK_CALIBRATION,
                    f"Work in {module}/ takes longer than planned: {state.step} steps"
                    + (f" against {limit} planned" if limit else "")
                    + "; plan for more steps here.",
                    "step_overrun",
                    state.overrun_step,
                    sorted(state.edited)[:5],
                    sessions=sessions_of("step_overrun", module),
                )
            )
    return out


def unit_candidates(
    state: SessionState, plugin: MethodologyPlugin, lo: int, hi: int
) -> list[Candidate]:
    """work_unit_outcome records for units validated in (lo, hi]."""
    out = []
    for unit in state.units.values():
        if unit.end_step is None or not (lo < unit.end_step <= hi) or not unit.passed:
            continue
        retries = sum(
            max(0, r.count - 1)
            for r in state.errors.values()
            if unit.start_step <= r.first_step <= unit.end_step
        )
        steps = unit.end_step - unit.start_step + 1
        ref = plugin.work_unit_ref(unit.hierarchy, unit.label or None)
        out.append(
            Candidate(
                f"work_unit_outcome:{state.session_id}:{unit.key}",
                MemoryType.WORK_UNIT_OUTCOME,
                f"{ref.label} succeeded in {steps} steps"
                + (f", changing {_files_text(unit.files)}" if unit.files else "")
                + (f", after {retries} retried error(s)" if retries else "")
                + ".",
                "work_unit",
                unit.end_step,
                list(unit.files),
                extra={
                    "succeeded": True,
                    "steps_taken": steps,
                    "retry_count": retries,
                    "work_unit": attrs.asdict(ref),
                },
            )
        )
    return out


def _main_module(state: SessionState) -> str | None:
    counts: dict[str, int] = {}
    for _, file in state.edit_steps:
        module = module_of(file)
        counts[module] = counts.get(module, 0) + 1
    if not counts:
        return None
    return max(sorted(counts), key=lambda m: counts[m])


# --------------------------------------------------------------------------- cross-session


def cross_session_candidates(state: SessionState, stats: ObserverStats) -> list[Candidate]:
    """Coupling, prefetch sets, recipes and context cost from all finished sessions.

    Called after this session was recorded; each key is promoted once (ledger)."""
    out: list[Candidate] = []
    step = state.step
    for a, b in sorted(state.pairs):
        together = stats.pair_sessions(a, b)
        for first, second in ((a, b), (b, a)):
            total = stats.file_sessions(first)
            if total < MIN_SESSIONS["co_access"] or together / total <= CAUSAL_SHARE:
                continue
            key = "causal_dependency:" + "|".join(sorted((a, b)))
            if stats.promoted(key):
                break
            out.append(
                Candidate(
                    key,
                    MemoryType.CAUSAL_DEPENDENCY,
                    f"{first} and {second} go together: {second} was worked on with {first} "
                    f"in {together} of {total} sessions; when you change one, check the other.",
                    "co_access",
                    step,
                    [first, second],
                    occurrences=together,
                    sessions=total,
                    cross_session=True,
                    extra={"share": round(together / total, 3)},
                )
            )
            break
    for module in sorted({module_of(f) for f in state.edited}):
        total = stats.module_sessions(module)
        if total < MIN_SESSIONS["file_access"]:
            continue
        always = [f for f, n in stats.module_files(module) if n / total > PREFETCH_SHARE]
        if len(always) < 2:
            continue
        always = always[:6]
        key = f"prefetch_pattern:{module}:" + "|".join(sorted(always))
        if stats.promoted(key):
            continue
        out.append(
            Candidate(
                key,
                MemoryType.PREFETCH_PATTERN,
                f"When working in {module}/, read {_files_text(always, 6)} first: they were "
                f"read in most of the {total} sessions that changed {module}/.",
                "file_access",
                step,
                always,
                sessions=total,
                cross_session=True,
                extra={"always_read_files": always, "module": module},
            )
        )
        tokens_sessions, tokens = stats.signal_sessions("context_tokens", module)
        if tokens_sessions >= MIN_SESSIONS["context_cost"] and tokens / tokens_sessions >= 10000:
            avg = int(tokens / tokens_sessions)
            key = f"context_cost:{module}:{avg // 5000}"
            if not stats.promoted(key):
                out.append(
                    Candidate(
                        key,
                        MemoryType.CONTEXT_COST,
                        f"A session that changes {module}/ uses about {avg} tokens of context "
                        f"(average of {tokens_sessions} sessions).",
                        "context_cost",
                        step,
                        [],
                        sessions=tokens_sessions,
                        cross_session=True,
                        extra={"module": module, "avg_tokens": avg},
                    )
                )
    labels = tuple(state.labels)
    known = [
        tuple(k.split(":", 1)[1].split(" > ")) for k in stats.promoted_like("workflow_recipe:")
    ]
    for gram, sessions in stats.frequent_sequences(MIN_SESSIONS["tool_sequence"]):
        # a recipe is a route to green: at least 3 kinds of step, ending in a test or commit
        if len(set(gram)) < 3 or gram[-1] not in VALIDATION_LABELS:
            continue
        if not _contains(labels, gram) or any(_overlaps(gram, k) for k in known):
            continue
        key = "workflow_recipe:" + " > ".join(gram)
        out.append(
            Candidate(
                key,
                MemoryType.WORKFLOW_RECIPE,
                f"Workflow that worked in {sessions} validated sessions: {' → '.join(gram)}.",
                "tool_sequence",
                step,
                [],
                sessions=sessions,
                cross_session=True,
                extra={"steps": list(gram)},
            )
        )
        break  # one recipe per session: the longest, most repeated one
    return out


def _overlaps(gram: Sequence[str], other: Sequence[str]) -> bool:
    """Two recipes overlap when they share a 4-step run (the same routine)."""
    return any(_contains(other, gram[i : i + 4]) for i in range(len(gram) - 3))


def _contains(seq: Sequence[str], gram: Sequence[str]) -> bool:
    n = len(gram)
    return any(tuple(seq[i : i + n]) == tuple(gram) for i in range(len(seq) - n + 1))


# --------------------------------------------------------------------------- end of session


def work_state_candidate(state: SessionState, plugin: MethodologyPlugin) -> Candidate | None:
    """Where an unvalidated session stopped, so the next one can resume (docs/observer.md work
    state)."""
    edited = list(state.edited)
    if not edited and not state.notes:
        return None
    open_errors = [r.headline for r in state.errors.values() if r.resolved_step is None]
    facts = {
        "files_modified": edited,
        "last_step": state.labels[-1] if state.labels else None,
        "open_errors": open_errors[:3],
        "work_unit": state.current_unit,
        "tests_passed": sum(1 for v in state.validations if v.kind == "test_run" and v.passed),
        "tests_failed": sum(1 for v in state.validations if v.kind == "test_run" and not v.passed),
    }
    methodology_state = plugin.extract_work_state(facts)
    task = f" on '{_clip(state.task, 80)}'" if state.task else ""
    content = f"Unfinished work{task}: {plugin.format_work_state(methodology_state)}."
    pending = [n.content for n in state.notes if not n.dropped_reason][:2]
    if pending:
        content += " Notes: " + "; ".join(_clip(p, 100) for p in pending)
    return Candidate(
        f"work_state:{state.session_id}",
        MemoryType.WORK_STATE,
        content,
        "work_state",
        state.step,
        edited[:10],
        extra={"methodology_state": methodology_state, "methodology": plugin.id},
    )


def failure_dead_ends(state: SessionState, lo: int) -> list[Candidate]:
    """A failed session's strategy as a dead end, when it was more than a typo: several
    edits and an error that was never resolved (docs/observer.md "only if genuinely wrong
    strategy")."""
    open_errors = [r for r in state.errors.values() if r.resolved_step is None and r.last_step > lo]
    edits = [s for s, _ in state.edit_steps if s > lo]
    if any(r.step > lo for r in state.dead_ends):
        return []  # the agent said in its own words what did not work; that is the record
    if not open_errors or len(edits) < 3:
        return []
    worst = max(open_errors, key=lambda r: (r.count, r.last_step))
    files = state.files_edited_between(lo + 1, state.step)
    task = f" for '{_clip(state.task, 80)}'" if state.task else ""
    return [
        Candidate(
            f"dead_end:failed:{state.session_id}",
            MemoryType.DEAD_END,
            f"Dead end{task}: changing {_files_text(files)} did not work; the session failed "
            f"with: {_clip(worst.headline, 200)}",
            "dead_end",
            state.step,
            files[:6],
            occurrences=worst.count,
            anchor=len(files) == 1,
            extra={
                "approach_tried": f"changing {', '.join(files[:6])}",
                "why_failed": worst.headline,
            },
        )
    ]


# --------------------------------------------------------------------------- pipeline


ExistingLookup = Callable[[MemoryType, Sequence[str]], Sequence[Memory]]


def filter_candidates(
    candidates: Sequence[Candidate],
    state: SessionState,
    gate: SessionGate,
    existing: ExistingLookup,
    *,
    cap: int | None = None,
) -> tuple[list[Candidate], list[Discarded]]:
    """The promotion filter pipeline; returns (kept, discarded with reasons)."""
    from rapidfuzz import fuzz, process

    kept: list[Candidate] = []
    dropped: list[Discarded] = []
    seen: set[str] = set()
    for cand in candidates:
        if cand.key in seen or cand.key in state.promoted_keys:
            continue
        seen.add(cand.key)

        def drop(reason: str, cand: Candidate = cand) -> None:
            dropped.append(Discarded(cand.key, cand.type.value, reason, cand.content[:160]))

        if cand.type not in RECORD_TYPES and not gate.allows(cand.signal):
            drop(f"{state.session_type} sessions do not promote {cand.signal} signals")
            continue
        if max(cand.occurrences, cand.sessions) < cand.min_required:
            drop(
                f"seen {max(cand.occurrences, cand.sessions)}x, needs {cand.min_required} "
                f"({cand.signal})"
            )
            continue
        if state.web_instructions and echoes(cand.content, state.web_instructions):
            drop("repeats an instruction found in web content")
            continue
        cand.tainted = state.tainted
        cand.after_web = state.tainted_at(cand.step)
        pool = existing(cand.type, cand.files)
        if pool:
            match = process.extractOne(
                cand.content,
                [m.content for m in pool],
                scorer=fuzz.ratio,
                processor=str.lower,
            )
            if match is not None:
                best = float(match[1])
                cand.novelty = max(0.0, 1.0 - best / 100.0) if best >= 50 else 1.0
                if best >= NOVELTY_DUPLICATE:
                    cand.reinforces = pool[int(match[2])].id
                    if cand.cross_session:
                        drop(f"already known as {cand.reinforces}")
                        continue
        ratio = max(cand.occurrences, cand.sessions) / max(1, cand.min_required)
        frequency = min(1.0, 0.5 + 0.25 * (ratio - 1.0))
        recency = 1.0
        cand.score = round(0.4 * frequency + 0.3 * recency + 0.3 * cand.novelty, 4)
        if cand.type not in RECORD_TYPES and cand.score < cand.threshold:
            drop(f"score {cand.score:.2f} below {cand.threshold}")
            continue
        kept.append(cand)
    records = [c for c in kept if c.type in RECORD_TYPES]
    ranked = sorted(
        (c for c in kept if c.type not in RECORD_TYPES),
        key=lambda c: (-(c.priority * c.score), c.step, c.key),
    )
    limit = gate.max_memories if cap is None else cap
    for cand in ranked[limit:]:
        dropped.append(
            Discarded(cand.key, cand.type.value, f"over the cap of {limit}", cand.content[:160])
        )
    return records + ranked[: max(0, limit)], dropped


def to_memory(
    cand: Candidate,
    state: SessionState,
    plugin: MethodologyPlugin,
    commit_for: Callable[[Candidate], str | None],
) -> Memory:
    """The permanent record for a kept candidate."""
    inferred = cand.source is MemorySource.OBSERVER_INFERRED
    confidence = 0.3 + 0.5 * cand.priority * cand.score
    if cand.source is MemorySource.AGENT_EXPLICIT:
        confidence = 0.7
    if cand.type in RECORD_TYPES:
        confidence = 0.8
    if cand.after_web:
        confidence *= TAINT_FACTOR
    needs_review = cand.tainted or (inferred and cand.type not in RECORD_TYPES)
    flags = ["web_tainted"] if cand.tainted else []
    unit_ref: WorkUnitRef | None = None
    if state.current_unit or state.units:
        key = state.current_unit or next(reversed(state.units))
        unit = state.units.get(key)
        if unit is not None:
            unit_ref = plugin.work_unit_ref(unit.hierarchy, unit.label or None)
    work_unit = cand.extra.get("work_unit")
    if cand.type is MemoryType.WORK_UNIT_OUTCOME and isinstance(work_unit, dict):
        unit_ref = WorkUnitRef(**work_unit)
    scope = MemoryScope.MODULE if cand.files else MemoryScope.GLOBAL
    if cand.type is MemoryType.WORK_UNIT_OUTCOME:
        scope = MemoryScope.WORK_UNIT
    anchors = [CodeAnchor(file=cand.files[0])] if cand.anchor and cand.files else []
    extra = dict(cand.extra)
    extra.update(
        {
            "signal": cand.signal,
            "observer_key": cand.key,
            "score": cand.score,
            "session_type": state.session_type,
        }
    )
    if cand.reinforces:
        extra["reinforces"] = cand.reinforces
    if cand.tainted:
        extra["trust"] = {"contaminated": True, "source": state.web_sources[:3]}
    return Memory(
        content=cand.content,
        type=cand.type,
        source=cand.source,
        scope=scope,
        confidence=round(max(0.05, min(0.95, confidence)), 3),
        tags=["observer", cand.signal],
        related_files=list(dict.fromkeys(cand.files)),
        anchors=anchors,
        provenance=Provenance(
            session_id=state.session_id, commit_sha=commit_for(cand), methodology=plugin.id
        ),
        work_unit=unit_ref,
        needs_review=needs_review,
        flags=flags,
        extra=extra,
    )


__all__ = [
    "MIN_SESSIONS",
    "Candidate",
    "Discarded",
    "cross_session_candidates",
    "failure_dead_ends",
    "filter_candidates",
    "session_candidates",
    "to_memory",
    "unit_candidates",
    "work_state_candidate",
]
