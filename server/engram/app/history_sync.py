"""History sync: after git history is mined, the memories follow it.

* **renames**: memories anchored to (or related to) a file renamed since the last run
  follow it (``GitHistory.renames_since`` applied with :func:`engram.history.apply_renames`);
* **staleness** (docs/lifecycle.md): an anchor whose lines moved is re-pointed; one whose
  code is gone and that a commit changed since the memory was made is flagged
  ``needs_review`` and its confidence multiplied by :data:`CODE_CHANGED_CONFIDENCE_FACTOR`;
  memories of deleted files get ``stale_at`` (and lose it when the file is back);
* **co-access cold start**: the observer's co-access graph is seeded from co-commits until
  sessions have been observed;
* **co-change ranking**: the impact ranking this repository's history teaches
  (``engram.history.cochange_model``) is fitted here, with the code graph's evidence, so
  ``impact`` only reads it (refitted once the history grew by a tenth; docs/history.md).

Each step is best-effort: history is evidence, so a failure is logged, never raised.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from engram.anchors import AnchorText, relocate
from engram.app.state import EngineState
from engram.errors import EngramError, one_line
from engram.lifecycle import trust as rules
from engram.model import AuditEntry, CodeAnchor, CorrectionKind, Memory
from engram.progress import Progress
from engram.workspace import WorkspaceError, confine

if TYPE_CHECKING:
    from datetime import datetime

    from engram.app.engine import Engine
    from engram.history import GitHistory, MineReport
    from engram.jsontypes import JsonObject

log = logging.getLogger(__name__)

#: Confidence multiplier for a memory whose anchored code was changed by a commit since the
#: memory was made (docs/lifecycle.md): the advice may still hold, so it is marked for review
#: and trusted a little less rather than hidden. Applied once per memory (flag below).
CODE_CHANGED_CONFIDENCE_FACTOR = rules.CODE_CHANGED_FACTOR
#: Flag set on a memory once the code under its anchor changed in a commit.
CODE_CHANGED_FLAG = rules.CODE_CHANGED_FLAG
#: At most this many ``git rev-list`` checks per index run (bounded time on large stores).
MAX_STALENESS_CHECKS = 200


@attrs.define
class HistorySyncReport:
    """What :func:`sync_history` did after mining: memories that followed renames,
    anchors whose code changed (flagged for review), files gone or back, co-access seed."""

    mined: MineReport | None = None
    head: str | None = None
    renamed: int = 0
    relocated: int = 0
    code_changed: int = 0
    stale_marked: int = 0
    unstaled: int = 0
    coaccess_seeded: int = 0
    skipped: str | None = None
    #: a cancel (a stop) came before every step after mining ran: the next run does them
    interrupted: bool = False

    def to_dict(self) -> JsonObject:
        data = attrs.asdict(self, recurse=False)
        data["mined"] = attrs.asdict(self.mined) if self.mined is not None else None
        return data


class MiningAhead:
    """``GitHistory.mine`` in a thread from the start of an index run.

    Why: mining needs git and ``history.sqlite`` only, nothing the graph or the chunks
    write, and it is mostly waiting (on ``git log``, a child process, and on SQLite, both
    outside the GIL): run after the graph and the chunks it added ~16 s to a cold
    ``engram index --no-embed`` at 58k files (issue 18; docs/codegraph.md "The whole cold
    index"). What follows mining (renames, staleness, co-access, co-change) stays where it
    was, after the graph, in :func:`sync_history`. Only the calling thread hears progress
    (:meth:`result` passes it on); :meth:`stop` cancels and joins, so no thread outlives
    the run, and ``cancel`` (the run's) stops it between batches as before.
    """

    def __init__(self, history: GitHistory, cancel: Callable[[], bool] | None = None) -> None:
        self._history = history
        self._cancel = cancel
        self._stop = threading.Event()
        self._heard: tuple[int, int | None, str] | None = None
        self._report: MineReport | None = None
        self._error: Exception | None = None
        self._thread = threading.Thread(target=self._mine, name="engram-history-mining")
        self._thread.start()

    def _mine(self) -> None:
        try:
            self._report = self._history.mine(progress=self._hear, cancel=self._cancelled)
        except Exception as exc:  # handed to the caller by result()
            self._error = exc

    def _hear(self, done: int, total: int | None, message: str = "") -> None:
        self._heard = (done, total, message)

    def _cancelled(self) -> bool:
        return self._stop.is_set() or (self._cancel is not None and self._cancel())

    def result(self, progress: Progress | None = None) -> MineReport:
        """Wait for the mining (passing its progress on), then its report or its error."""
        told = None
        while True:
            self._thread.join(0.25)
            heard = self._heard
            if progress is not None and heard is not None and heard != told:
                progress(*heard)
                told = heard
            if not self._thread.is_alive():
                break
        if self._error is not None:
            raise self._error
        assert self._report is not None
        return self._report

    def stop(self) -> None:
        """Stop (at the next batch: what was mined is kept) and join."""
        self._stop.set()
        self._thread.join()


class SyncAhead:
    """:func:`sync_history`'s steps after mining in a thread from the end of the graph.

    Why: they need the graph and the mined history, not the code-search chunks; after
    the graph a cold ``engram index --no-embed`` waited for the chunk writer's FTS build
    (LanceDB's, on one core) and ran the chunk pass, and only then ran these steps on
    the main thread (~2 s idle at 58k files, ~7 s at load 15), each on one of the two
    cores (docs/codegraph.md "A fifth look"). Run beside them they use the idle one.
    The stages stay in their order for whoever reads the progress: the history stage
    begins after the chunks' and :meth:`result` passes mining's progress on then, as
    :func:`sync_history` did; the steps themselves tell none. ``cancel`` (the run's) is
    heard between and inside the steps as before, and :meth:`stop` (a run that stops or
    fails) asks them and the mining they may wait on to stop, and joins: no thread
    outlives the run, and a run that fails does not wait for the rest of the mining.
    """

    def __init__(
        self, engine: Engine, mined: MiningAhead, cancel: Callable[[], bool] | None = None
    ) -> None:
        self._engine = engine
        self._mined = mined
        self._cancel = cancel
        self._stop = threading.Event()
        self._report: HistorySyncReport | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._sync, name="engram-history-sync")
        self._thread.start()

    def _sync(self) -> None:
        try:
            self._report = sync_history(self._engine, None, self._cancelled, self._mined)
        except BaseException as exc:  # handed to the caller by result()
            self._error = exc

    def _cancelled(self) -> bool:
        return self._stop.is_set() or (self._cancel is not None and self._cancel())

    def result(self, progress: Progress | None = None) -> HistorySyncReport:
        """Pass mining's progress on, wait for the steps, then their report (or error)."""
        if progress is not None:
            # what sync_history told the stage: mining's (its failure is the report's)
            with contextlib.suppress(Exception):
                self._mined.result(progress)
        while self._thread.is_alive():
            self._thread.join(0.25)
        if self._error is not None:
            raise self._error
        assert self._report is not None
        return self._report

    def stop(self) -> HistorySyncReport | None:
        """Ask the steps to stop (at their next look at the cancel) and join; their report
        (``interrupted`` when a step was left), or None after an error.

        The mining is told too: the steps wait for it first, and a run that failed in the
        chunk pass (a full disk, Ctrl-C) waited for all of it, a minute on a long history,
        since only the run's own cancel reached it (``tests/codegraph/test_worker_chunks.py``)."""
        self._stop.set()
        self._mined.stop()  # it stops at its next batch; what it mined is kept
        self._thread.join()
        return self._report


def mining_ahead(engine: Engine, cancel: Callable[[], bool] | None = None) -> MiningAhead | None:
    """:class:`MiningAhead` for ``engine``, or None when there is nothing to mine (no git
    history: :func:`sync_history` says why) or the engine is read-only."""
    if engine.read_only:
        return None
    history = engine.history
    if not history.available:  # opens the repository here, not in the thread
        return None
    return MiningAhead(history, cancel)


def sync_history(
    engine: Engine,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    mined: MiningAhead | None = None,
) -> HistorySyncReport:
    """Mine new commits (or take ``mined``'s), then bring the memories up to date with them
    (see the module)."""
    from engram.history import StepCancelled

    report = HistorySyncReport()
    history = engine.history
    if not history.available:
        report.skipped = str(history.reason or "no git history")
        return report
    try:
        if mined is not None:
            report.mined = mined.result(progress)
        else:
            report.mined = history.mine(progress=progress, cancel=cancel)
    except Exception as exc:
        log.warning("mining git history failed: %s", one_line(exc))
        report.skipped = f"mining failed: {one_line(exc)}"
        return report
    if engine.read_only:
        return report
    head = report.mined.head or history.head_commit()
    report.head = head
    state = EngineState.of(engine.workspace)
    steps: list[tuple[str, Callable[[], None]]] = [
        ("rename following", lambda: _follow_renames(engine, history, head, state, report, cancel)),
        ("staleness check", lambda: _check_code_changes(engine, history, head, report, cancel)),
        ("co-access seed", lambda: _seed_coaccess(engine, history, head, state, report, cancel)),
        ("co-change ranking", lambda: _learn_cochange(engine, history, cancel)),
    ]
    for what, step in steps:
        if cancel is not None and cancel():
            report.interrupted = True
            break
        try:
            step()
        except StepCancelled:  # heard inside the step (the co-change fit, rename following)
            report.interrupted = True
            break
        except EngramError as exc:
            log.info("%s skipped: %s", what, exc)
        except Exception as exc:
            log.warning("%s failed: %s", what, one_line(exc), exc_info=True)
    return report


def _learn_cochange(
    engine: Engine, history: GitHistory, cancel: Callable[[], bool] | None = None
) -> None:
    from engram.codegraph import structure_prior

    graph = engine.codegraph
    history.cochange_model(lambda file: structure_prior(file, graph), cancel)


def _follow_renames(
    engine: Engine,
    history: GitHistory,
    head: str | None,
    state: EngineState,
    report: HistorySyncReport,
    cancel: Callable[[], bool] | None = None,
) -> None:
    """Apply renames made since the last run (all known ones the first time).

    When the old path exists again (a new file took the name), the rename is applied
    only to memories made before it, told by their commit (``provenance.commit_sha``);
    a memory without a commit stays where it is rather than move to the wrong file.
    ``cancel`` is heard while the renames are found and before the store is read (its
    first open takes seconds); nothing is written until they are all known.
    """
    from engram.history import StepCancelled, apply_renames

    last = state.get("renames_applied_commit")
    renames = dict(history.renames_since(last if isinstance(last, str) else None, cancel))
    if cancel is not None and cancel():
        raise StepCancelled
    if renames:
        root = engine.workspace.root
        memories = engine.store.list(engine.filter(include_deprecated=True))
        # only the names a memory mentions are looked up on disk: babel's 39,513 renames
        # took ~2 s of stat calls (at load 12) for its 4 memories
        named = {path for m in memories for path in _paths(m)}
        clear = {
            old: new for old, new in renames.items() if old in named and not (root / old).exists()
        }
        # what a memory mentions once the clear renames moved it
        named |= set(clear.values())
        ambiguous = {
            old: new
            for old, new in renames.items()
            if old in named and old not in clear and (root / old).exists()
        }
        changed = {m.id: m for m in apply_renames(memories, clear)}
        #: the renames each memory made before its commit follows (the clear ones first)
        own_renames: dict[str, dict[str, str]] = {}
        since_commit: dict[str, dict[str, str]] = {}
        for memory in memories if ambiguous else []:
            memory = changed.get(memory.id, memory)
            sha = memory.provenance.commit_sha
            if not sha or not _mentions(memory, ambiguous):
                continue
            if sha not in since_commit:
                since_commit[sha] = dict(history.renames_since(sha, cancel))
            own = {o: n for o, n in ambiguous.items() if since_commit[sha].get(o) == n}
            for renamed in apply_renames([memory], own):
                changed[renamed.id] = renamed
                own_renames[renamed.id] = own
        if changed:
            report.renamed = _move(engine, list(changed), clear, own_renames)
            log.info("%d memories followed renamed files", report.renamed)
    if head:
        state.set("renames_applied_commit", head)


def _move(
    engine: Engine,
    ids: Sequence[str],
    clear: Mapping[str, str],
    own: Mapping[str, Mapping[str, str]],
) -> int:
    """Follow the renames on the memories ``ids`` as they stand, under the writer lock:
    the renames were found and the memories read outside it (git takes seconds on a long
    history), and a memory another process flagged meanwhile, written from that read,
    lost its flag. Renames only move paths, so they are made again on each record."""
    from engram.app import trust as app_trust
    from engram.history import apply_renames

    system = rules.Actor.system()
    now = engine.clock()
    with engine.write_lock, engine.store.locked():
        moved: list[Memory] = []
        entries: list[AuditEntry] = []
        for memory in engine.store.get_many(list(ids)):
            renamed = memory
            for step in (clear, own.get(memory.id, {})):
                renamed = next(iter(apply_renames([renamed], step)), renamed)
            if renamed is memory:
                continue
            stamped = attrs.evolve(renamed, updated_at=now)
            event = rules.Moved(
                actor=system,
                cause="engram index: renamed in git",
                anchors=stamped.anchors,
                related_files=stamped.related_files,
            )
            entries.append(rules.transition(memory, event, now=now).entry)
            moved.append(stamped)
        if moved:
            with app_trust.recorded(engine, entries):
                engine.store.update(moved)
            engine.mirror(moved)
    return len(moved)


def _check_code_changes(
    engine: Engine,
    history: GitHistory,
    head: str | None,
    report: HistorySyncReport,
    cancel: Callable[[], bool] | None = None,
) -> None:
    """Relocate moved anchors, flag memories whose code a commit changed, mark gone files.

    ``cancel`` is heard at every memory (each may read files and ask git): nothing is
    written or counted until they are all looked at, so a stopped check leaves it all to
    the next run.
    """
    from engram.history import StepCancelled

    root = engine.workspace.root
    now = engine.clock()
    memories = [
        m
        for m in engine.store.list(engine.filter(include_deprecated=False))
        if m.anchors or m.related_files
    ]
    finder = AnchorFinder(root)
    checks = 0
    #: each memory with the events its check found, made once every memory was looked at
    found: list[tuple[Memory, list[rules.Event]]] = []
    system = rules.Actor.system()
    for memory in memories:
        if cancel is not None and cancel():
            raise StepCancelled
        events: list[rules.Event] = []
        files = memory.files
        missing = [f for f in files if not (root / f).exists()]
        if missing and memory.stale_at is None:
            events.append(rules.FileGone(actor=system, cause="engram index", file=missing[0]))
        elif (
            not missing
            and memory.stale_at is not None
            and memory.valid_until is None
            and CorrectionKind.OUTDATED.value not in memory.flags
        ):
            events.append(rules.FileBack(actor=system, cause="engram index"))  # renamed, restored
        anchors = list(memory.anchors)
        relocated = False
        code_changed = False
        for index, anchor in enumerate(anchors):
            if anchor.content_hash is None or anchor.start_line is None:
                continue
            if finder.lines(anchor.file) is None:
                continue  # gone or unreadable: the stale_at rule above covers it
            where = finder.find(anchor)
            if where == anchor.start_line:
                continue
            if where is not None:
                length = (anchor.end_line or anchor.start_line) - anchor.start_line
                anchors[index] = attrs.evolve(anchor, start_line=where, end_line=where + length)
                relocated = True
                continue
            if CODE_CHANGED_FLAG in memory.flags or checks >= MAX_STALENESS_CHECKS:
                continue
            sha = memory.provenance.commit_sha
            checks += 1
            changed = history.changed_since(anchor.file, sha) if sha else None
            if changed is not False:  # False: an uncommitted edit in progress
                code_changed = True
        if relocated:
            events.append(rules.Moved(actor=system, cause="engram index", anchors=anchors))
        if code_changed:
            events.append(rules.CodeChanged(actor=system, cause="engram index", commit=head))
        if events:
            found.append((memory, events))
    if found:
        _mark(engine, found, now, report)


def _mark(
    engine: Engine,
    found: Sequence[tuple[Memory, Sequence[rules.Event]]],
    now: datetime,
    report: HistorySyncReport,
) -> None:
    """Make the staleness check's events on the memories as they stand, under the writer
    lock: the check read files and asked git outside it, and a memory another process
    flagged meanwhile, written from that read, lost its flag (and a forgotten one came
    back). A memory whose anchors or files changed meanwhile, or that was forgotten or
    deprecated, is left (what was found is about the old anchors; the next run looks
    again); the others take the events as any record would."""
    from engram.app import trust as app_trust

    counters = {
        rules.FileGone: "stale_marked",
        rules.FileBack: "unstaled",
        rules.Moved: "relocated",
        rules.CodeChanged: "code_changed",
    }
    with engine.write_lock, engine.store.locked():
        fresh = {m.id: m for m in engine.store.get_many([m.id for m, _ in found])}
        updated: list[Memory] = []
        entries: list[AuditEntry] = []
        for read, events in found:
            current = fresh.get(read.id)
            if (
                current is None
                or current.deprecated  # forgotten or deprecated meanwhile: not checked
                or (current.anchors, current.related_files) != (read.anchors, read.related_files)
            ):
                continue
            before = current
            for event in events:
                moved = rules.transition(current, event, now=now)
                if not moved.unchanged:
                    current = moved.memory
                    entries.append(moved.entry)
                    name = counters[type(event)]
                    setattr(report, name, getattr(report, name) + 1)
            if current is not before:
                updated.append(current)
        if updated:
            with app_trust.recorded(engine, entries):
                engine.store.update(updated)
            engine.mirror(updated)


def _seed_coaccess(
    engine: Engine,
    history: GitHistory,
    head: str | None,
    state: EngineState,
    report: HistorySyncReport,
    cancel: Callable[[], bool] | None = None,
) -> None:
    """Cold start of the co-access graph from co-commits (docs/observer.md).

    Seeds while no session has been observed yet, once per new HEAD: the seed is a
    prior the observer blends in at a discount, so refreshing it is harmless, and once
    real sessions exist they speak for themselves. ``cancel`` is heard while the pairs
    are counted (``StepCancelled``: nothing seeded, the next run does it).
    """
    if not engine.config.observer.enabled or not head:
        return
    seeded = state.get("coaccess_seeded_commit")
    if seeded == head:
        return
    from engram.app.observe import observer_of

    observer = observer_of(engine)
    if seeded is not None and int(observer.stats.session_count()) > 0:
        return
    edges = history.coaccess_seed(cancel)
    report.coaccess_seeded = int(observer.seed_coaccess(edges)) if edges else 0
    state.set("coaccess_seeded_commit", head)


def _paths(memory: Memory) -> list[str]:
    """Every path ``memory`` names: its anchors, related files and relation targets."""
    return [
        *(a.file for a in memory.anchors),
        *memory.related_files,
        *(r.target_file for r in memory.relations if r.target_file),
    ]


def _mentions(memory: Memory, paths: Mapping[str, str]) -> bool:
    """Whether any anchor, related file or relation target of ``memory`` is in ``paths``."""
    return (
        any(a.file in paths for a in memory.anchors)
        or any(f in paths for f in memory.related_files)
        or any(r.target_file in paths for r in memory.relations if r.target_file)
    )


class AnchorFinder:
    """The files of a sweep over many memories, each read once, relocated by
    :func:`engram.anchors.relocate` (the rules the editor uses too)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._texts: dict[str, AnchorText | None] = {}

    def lines(self, rel: str) -> Sequence[str] | None:
        text = self._text(rel)
        return text.lines if text is not None else None

    def _text(self, rel: str) -> AnchorText | None:
        if rel not in self._texts:
            try:
                # anchors come from stored and team memories: confined like every read
                content = confine(self.root, rel).read_text(encoding="utf-8", errors="replace")
                self._texts[rel] = AnchorText(content.splitlines())
            except (OSError, WorkspaceError):
                self._texts[rel] = None
        return self._texts[rel]

    def find(self, anchor: CodeAnchor) -> int | None:
        """The anchor's start line now, or ``None`` (the code under it changed)."""
        text = self._text(anchor.file)
        if text is None or anchor.content_hash is None:
            return None
        found = relocate(anchor, text)
        return found.start if found is not None else None


__all__ = [
    "CODE_CHANGED_CONFIDENCE_FACTOR",
    "CODE_CHANGED_FLAG",
    "MAX_STALENESS_CHECKS",
    "AnchorFinder",
    "HistorySyncReport",
    "sync_history",
]
