"""What the report shows, computed from the store's memories, git history and the code graph.

Everything here is aggregation over columns (NumPy and Arrow, see :class:`MemoryColumns`):
the browser gets a few hundred numbers per chart, never one point per memory, and building
them costs no Python object per memory, so a 100k-memory store makes a report nearly as fast
and exactly as light as a 100-memory one (docs/report.md). Inputs are plain values (an Arrow
frame of the memories, co-change pairs, an impact report's dependents), so the module has no
engine dependency and its tests need no LanceDB.

Long on purpose: every chart's aggregation reads the same columns (:class:`MemoryColumns`)
and feeds one :class:`ReportData`; split, a chart would be read in two places.
"""

from __future__ import annotations

import itertools
import posixpath
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, TypedDict, TypeVar

import attrs
import numpy as np
import numpy.typing as npt

from engram.model import Memory
from engram.quoting import one_line

if TYPE_CHECKING:
    import pyarrow as pa

S = TypeVar("S", bound=np.generic)


class MemoryRow(TypedDict, total=False):
    """Columns of one row of a memory frame (``engram.store.frame``), as Python values."""

    id: str
    type: str
    created_at: datetime
    files: list[str]
    content: str
    shared_by: str | None


#: Modules shown by name in "memories by module"; the rest are summed as "other".
TOP_MODULES = 8
#: Files in the co-change heat map (the files of the strongest pairs, in order).
HEATMAP_FILES = 20
#: Review backlog rows and contradiction rows listed by name.
TABLE_ROWS = 25
#: Confidence histogram bins over [0, 1].
CONFIDENCE_BINS = 20
#: Age buckets (days since a memory was last updated) for the staleness chart.
AGE_EDGES_DAYS: tuple[int, ...] = (0, 7, 30, 90, 180, 365)
NO_FILE = "(no file)"


@attrs.frozen
class Series:
    """One named line/bar series over the shared x axis of its chart."""

    name: str
    values: list[int]


@attrs.frozen
class TimeSeries:
    """Counts per period (``periods``: each bucket's start, an ISO date, or ``YYYY-MM-DD
    HH:00`` when ``unit`` is ``hour``)."""

    unit: str
    periods: list[str]
    series: list[Series]


@attrs.frozen
class Histogram:
    """Counts per bin, one series per state (active, in review, stale, deprecated)."""

    labels: list[str]
    series: list[Series]


@attrs.frozen
class ReviewItem:
    id: str
    type: str
    created: str
    file: str
    text: str
    #: ``shared by "Ana" (from …), unreviewed`` for a teammate's memory, "" for the person's
    #: own: the table says whose words the text is (until stop 31 it did not)
    shared_by: str = ""


@attrs.frozen
class Contradiction:
    first_id: str
    first_text: str
    second_id: str
    second_text: str
    shared_by: str


@attrs.frozen
class CoChangeMatrix:
    """Co-change between ``files``: commits together (``support``) and the Jaccard index of
    their commit sets (``jaccard``, 0..1), both symmetric."""

    files: list[str]
    support: list[list[int]]
    jaccard: list[list[float]]


@attrs.frozen
class GraphNode:
    file: str
    #: -1 for what the module imports, 0 for the module, n for dependents n imports away,
    #: and ``None`` for a file that only co-changes with it
    depth: int | None
    memories: int


@attrs.frozen
class GraphEdge:
    source: str
    target: str
    kind: str  # "import" or "cochange"
    weight: float


@attrs.frozen
class ImpactGraph:
    module: str | None
    nodes: list[GraphNode]
    edges: list[GraphEdge]
    note: str = ""


@attrs.frozen
class ReportData:
    """Every figure of ``engram report``, ready to draw."""

    workspace: str
    generated_at: str
    totals: dict[str, int]
    by_type: TimeSeries
    by_module: TimeSeries
    confidence: Histogram
    staleness: Histogram
    review_backlog: TimeSeries
    review_items: list[ReviewItem]
    review_total: int
    contradictions: list[Contradiction]
    contradictions_total: int
    cochange: CoChangeMatrix
    impact: ImpactGraph


# ---------------------------------------------------------------------------- the memories


@attrs.frozen
class MemoryColumns:
    """The memories a report counts, as columns (``MemoryStore.frame()``'s layout).

    Why columns: a report counts every memory of the store, and at 100k memories one
    Python object per memory (decoding, attribute access, a ``Counter`` update) is what
    made building it take minutes; NumPy/Arrow over columns takes well under a second.
    Only the few rows a table lists by name (the review backlog's oldest, contradictions)
    become Python values.
    """

    #: ``engram.store.frame.frame_schema`` rows
    table: pa.Table
    types: npt.NDArray[np.int64]
    type_names: list[str]
    modules: npt.NDArray[np.int64]
    module_names: list[str]
    needs_review: npt.NDArray[np.bool_]
    deprecated: npt.NDArray[np.bool_]
    stale: npt.NDArray[np.bool_]
    #: a flag is outstanding (``Memory.flagged``): hidden like a deprecated memory
    flagged: npt.NDArray[np.bool_]
    pinned: npt.NDArray[np.bool_]
    shared: npt.NDArray[np.bool_]
    confidence: npt.NDArray[np.float64]
    #: NaN: never decays
    half_life_days: npt.NDArray[np.float64]
    #: microseconds since the epoch, UTC
    created_us: npt.NDArray[np.int64]
    updated_us: npt.NDArray[np.int64]
    accessed_us: npt.NDArray[np.int64]

    def __len__(self) -> int:
        return len(self.types)

    @property
    def shown(self) -> npt.NDArray[np.bool_]:
        """What an editor or agent may receive: neither deprecated (retired, forgotten)
        nor flagged (docs/trust.md). The status bar, the Memory view and ``engram stats``
        count the same memories (a walk's report said 7 memories beside the status bar's
        5 and a Memory view listing 4)."""
        return ~self.deprecated & ~self.flagged

    @classmethod
    def of(cls, table: pa.Table) -> MemoryColumns:
        """Columns of a frame (``MemoryStore.frame()``)."""
        import pyarrow as pa
        import pyarrow.compute as pc

        table = table.combine_chunks()

        def np_of(name: str, dtype: type[S]) -> npt.NDArray[S]:
            column = table.column(name)
            if pa.types.is_timestamp(column.type):
                column = column.cast(pa.int64())
            return np.asarray(column.to_numpy(zero_copy_only=False), dtype=dtype)

        types = pc.dictionary_encode(table.column("type")).combine_chunks()
        # a memory's module is the folder of its first file: one ``module_of`` per file,
        # not per memory
        files = table.column("files").combine_chunks()
        n = table.num_rows
        offsets = np.asarray(files.offsets.to_numpy(), np.int64)[: n + 1]
        has_file = offsets[1:] > offsets[:-1]
        firsts = files.values.take(pa.array(offsets[:-1][has_file]))
        encoded = pc.dictionary_encode(firsts)
        file_modules = [module_of(f) for f in encoded.dictionary.to_pylist()]
        module_names = sorted({*file_modules, *([NO_FILE] if not has_file.all() else [])})
        code_of = {name: i for i, name in enumerate(module_names)}
        modules = np.full(n, code_of.get(NO_FILE, -1), np.int64)
        per_file = np.asarray([code_of[m] for m in file_modules], np.int64)
        modules[has_file] = per_file[np.asarray(encoded.indices.to_numpy(), np.int64)]
        return cls(
            table=table,
            types=np.asarray(types.indices.to_numpy(), np.int64),
            type_names=[str(t) for t in types.dictionary.to_pylist()],
            modules=modules,
            module_names=module_names,
            needs_review=np_of("needs_review", np.bool_),
            deprecated=np_of("deprecated", np.bool_),
            stale=np_of("stale", np.bool_),
            flagged=np_of("flagged", np.bool_),
            pinned=np_of("pinned", np.bool_),
            shared=np.asarray(table.column("shared_by").is_valid().to_numpy(), np.bool_),
            confidence=np_of("confidence", np.float64),
            half_life_days=np_of("half_life_days", np.float64),
            created_us=np_of("created_at", np.int64),
            updated_us=np_of("updated_at", np.int64),
            accessed_us=np_of("last_accessed_at", np.int64),
        )

    @classmethod
    def from_memories(cls, memories: Sequence[Memory]) -> MemoryColumns:
        """Columns of decoded memories (tests, small inputs)."""
        from engram.lifecycle.trust import hiding
        from engram.store.frame import frame_from_memories

        return cls.of(frame_from_memories(memories, hiding()))

    def rows(self, rows: Sequence[int], *names: str) -> list[MemoryRow]:
        """A few rows as Python values (for the tables that list memories by name)."""
        import pyarrow as pa

        picked = self.table.select(list(names)).take(pa.array(list(rows), pa.int64()))
        out: list[MemoryRow] = picked.to_pylist()  # the frame's schema (store.frame)
        return out


# ---------------------------------------------------------------------------- time buckets

_US_PER_DAY = 86_400 * 1_000_000
_US_PER_HOUR = 3_600 * 1_000_000


def _bucket_unit(span_days: float) -> str:
    # a history of a day or two (a first session, a fresh index's seeds) in hours: in days
    # it was one bar, and the axis around it read "23:59:59.9996"
    if span_days <= 2:
        return "hour"
    if span_days <= 45:
        return "day"
    if span_days <= 400:
        return "week"
    return "month"


def _buckets(created_us: npt.NDArray[np.int64], unit: str) -> npt.NDArray[np.datetime64]:
    """The start of each moment's bucket (UTC hour or day, Monday of its week, first of its
    month)."""
    if unit == "hour":
        hours: npt.NDArray[np.datetime64] = (created_us // _US_PER_HOUR).astype("datetime64[h]")
        return hours
    days = (created_us // _US_PER_DAY).astype("datetime64[D]")
    if unit == "day":
        return days
    if unit == "week":
        # 1970-01-01 was a Thursday: weekday (Monday 0) is (days + 3) mod 7
        weekday = ((days.astype(np.int64) + 3) % 7).astype("m8[D]")
        monday: npt.NDArray[np.datetime64] = days - weekday
        return monday
    month = days.astype("datetime64[M]")
    first_of_month: npt.NDArray[np.datetime64] = month.astype("datetime64[D]")
    return first_of_month


def _period_text(period: np.datetime64, unit: str) -> str:
    """An ISO date, or ``YYYY-MM-DD HH:00`` for an hour (what a date axis reads)."""
    text = str(period)
    return text.replace("T", " ") + ":00" if unit == "hour" else text


def _periods(first: np.datetime64, last: np.datetime64, unit: str) -> npt.NDArray[np.datetime64]:
    """Every bucket from ``first`` to ``last`` (so gaps show as zero, not as a jump)."""
    if unit == "hour":
        return np.arange(first, last + np.timedelta64(1, "h"), dtype="datetime64[h]")
    if unit == "day":
        return np.arange(first, last + np.timedelta64(1, "D"), dtype="datetime64[D]")
    if unit == "week":
        return np.arange(first, last + np.timedelta64(1, "D"), 7, dtype="datetime64[D]")
    months = np.arange(
        first.astype("datetime64[M]"), last.astype("datetime64[M]") + 1, dtype="datetime64[M]"
    )
    return months.astype("datetime64[D]")


def _time_series(
    created_us: npt.NDArray[np.int64],
    groups: npt.NDArray[np.int64],
    names: Sequence[str],
    now: datetime,
    order: Sequence[int] | None = None,
) -> TimeSeries:
    """Counts per period and group (``groups`` index ``names``); groups by size unless
    ``order`` names them (cumulative is left to the eye)."""
    if not len(created_us):
        return TimeSeries("day", [now.astimezone(UTC).date().isoformat()], [])
    first_us, last_us = int(created_us.min()), int(created_us.max())
    unit = _bucket_unit((last_us - first_us) / _US_PER_DAY)
    buckets = _buckets(created_us, unit)
    periods = _periods(buckets.min(), buckets.max(), unit)
    column = np.searchsorted(periods, buckets)
    width = len(periods)
    counts = np.bincount(groups * width + column, minlength=len(names) * width)
    counts = counts.reshape(len(names), width)
    totals = counts.sum(axis=1)
    if order is None:
        order = sorted(np.flatnonzero(totals).tolist(), key=lambda g: (-totals[g], names[g]))
    return TimeSeries(
        unit,
        [_period_text(p, unit) for p in periods],
        [Series(names[g], counts[g].tolist()) for g in order if totals[g]],
    )


# ---------------------------------------------------------------------------- modules


def module_of(path: str | None, depth: int = 2) -> str:
    """The folder a file belongs to, at most ``depth`` levels deep (``server/engram``).

    A file at the root is its own module; a memory without files is ``(no file)``.
    """
    if not path:
        return NO_FILE
    folder = posixpath.dirname(path)
    if not folder:
        return path
    return "/".join(folder.split("/")[:depth])


STATES = ("active", "in review", "stale", "deprecated")


def _states(cols: MemoryColumns) -> npt.NDArray[np.int64]:
    """Each memory's state as an index into :data:`STATES` (deprecated, or any other state
    never shown, over stale over in review)."""
    state = np.zeros(len(cols), np.int64)
    state[cols.needs_review] = 1
    state[cols.stale] = 2
    state[~cols.shown] = 3
    return state


def _histogram(
    labels: list[str], bins: npt.NDArray[np.int64], states: npt.NDArray[np.int64]
) -> Histogram:
    width = len(labels)
    counts = np.bincount(states * width + bins, minlength=len(STATES) * width)
    counts = counts.reshape(len(STATES), width)
    return Histogram(
        labels, [Series(s, counts[i].tolist()) for i, s in enumerate(STATES) if counts[i].any()]
    )


def current_confidence(cols: MemoryColumns, now: datetime) -> npt.NDArray[np.float64]:
    """``Memory.current_confidence`` of every memory at once: decayed by half-life since
    last access; pinned memories and those without a half-life keep their confidence."""
    now_us = int(now.timestamp() * 1_000_000)
    days = np.maximum(0.0, (now_us - cols.accessed_us) / _US_PER_DAY)
    decays = ~cols.pinned & (cols.half_life_days > 0)
    out = cols.confidence.copy()
    out[decays] = cols.confidence[decays] * np.power(
        0.5, days[decays] / cols.half_life_days[decays]
    )
    return out


def _confidence(cols: MemoryColumns, states: npt.NDArray[np.int64], now: datetime) -> Histogram:
    labels = [
        f"{i / CONFIDENCE_BINS:.2f}–{(i + 1) / CONFIDENCE_BINS:.2f}" for i in range(CONFIDENCE_BINS)
    ]
    bins = np.minimum(
        CONFIDENCE_BINS - 1, (current_confidence(cols, now) * CONFIDENCE_BINS).astype(np.int64)
    )
    return _histogram(labels, bins, states)


def _age_labels() -> list[str]:
    edges = AGE_EDGES_DAYS
    labels = [f"{a}–{b} days" for a, b in itertools.pairwise(edges)]
    return [*labels, f"over {edges[-1]} days"]


def _staleness(cols: MemoryColumns, states: npt.NDArray[np.int64], now: datetime) -> Histogram:
    now_us = int(now.timestamp() * 1_000_000)
    days = np.maximum(0.0, (now_us - cols.updated_us) / _US_PER_DAY)
    # the first edge a memory's age is below; past the last edge, the last bucket
    bins = np.searchsorted(np.asarray(AGE_EDGES_DAYS[1:], np.float64), days, side="right")
    return _histogram(_age_labels(), bins.astype(np.int64), states)


def _one_line(text: str, limit: int = 120) -> str:
    flat = one_line(text)  # bidi and zero-width characters too: a teammate's text
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _contradictions(cols: MemoryColumns) -> tuple[list[Contradiction], int]:
    """Open conflicts: ``conflicts_with`` links whose two ends are both still shown, each
    pair once (its smaller id first)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    links = cols.table.column("conflicts_with").combine_chunks()
    owners = np.asarray(pc.list_parent_indices(links).to_numpy(), np.int64)
    if not len(owners):
        return [], 0
    ids = cols.table.column("id")
    targets = pc.index_in(links.values, value_set=ids.combine_chunks())
    target = np.asarray(targets.fill_null(-1).to_numpy(zero_copy_only=False), np.int64)
    shown = cols.shown
    keep = (target >= 0) & shown[owners] & shown[np.maximum(target, 0)] & (owners != target)
    if not keep.any():
        return [], 0
    id_list = ids.take(pa.array(np.concatenate([owners[keep], target[keep]])))
    names = np.asarray(id_list.to_pylist(), dtype=object).reshape(2, -1)
    rows = np.stack([owners[keep], target[keep]])
    swap = names[0] > names[1]
    names[:, swap] = names[::-1, swap]
    rows[:, swap] = rows[::-1, swap]
    pairs = sorted({(a, b, int(ra), int(rb)) for a, b, ra, rb in zip(*names, *rows, strict=True)})
    listed = pairs[:TABLE_ROWS]
    needed = sorted({r for _, _, ra, rb in listed for r in (ra, rb)})
    detail = dict(zip(needed, cols.rows(needed, "content", "shared_by"), strict=True))
    out = [
        Contradiction(
            a,
            _one_line(detail[ra]["content"]),
            b,
            _one_line(detail[rb]["content"]),
            detail[ra]["shared_by"] or detail[rb]["shared_by"] or "",
        )
        for a, b, ra, rb in listed
    ]
    return out, len(pairs)


def cochange_matrix(
    pairs: Sequence[tuple[str, str, int, float]], limit: int = HEATMAP_FILES
) -> CoChangeMatrix:
    """The files of the most frequent pairs (most frequent first) and every pair among them."""
    files: list[str] = []
    for a, b, _, _ in sorted(pairs, key=lambda p: (-p[2], -p[3], p[0], p[1])):
        for f in (a, b):
            if f not in files and len(files) < limit:
                files.append(f)
        if len(files) >= limit:
            break
    index = {f: i for i, f in enumerate(files)}
    support = [[0] * len(files) for _ in files]
    jaccard = [[0.0] * len(files) for _ in files]
    for a, b, count, weight in pairs:
        if a in index and b in index:
            i, j = index[a], index[b]
            support[i][j] = support[j][i] = int(count)
            jaccard[i][j] = jaccard[j][i] = round(float(weight), 4)
    return CoChangeMatrix(files, support, jaccard)


@attrs.frozen
class ImpactInput:
    """The parts of an :class:`engram.codegraph.ImpactReport` the picture needs."""

    module: str
    #: ``(file, depth, weight, path)`` with ``path`` from the module to ``file``
    dependents: list[tuple[str, int, float, list[str]]]
    dependencies: list[str]
    #: ``(file, confidence)``
    cochange: list[tuple[str, float]]
    note: str = ""


#: Nodes drawn per ring of the impact graph (the strongest first); more would be a hairball.
MAX_NODES_PER_DEPTH = 25


def impact_graph(impact: ImpactInput | None, memories_per_file: Counter[str]) -> ImpactGraph:
    if impact is None:
        return ImpactGraph(None, [], [], "no module in the code graph yet: run `engram index`")
    nodes: dict[str, GraphNode] = {impact.module: GraphNode(impact.module, 0, 0)}
    edges: list[GraphEdge] = []
    per_depth: Counter[int] = Counter()
    for dep in impact.dependencies[:MAX_NODES_PER_DEPTH]:
        nodes.setdefault(dep, GraphNode(dep, -1, 0))
        edges.append(GraphEdge(impact.module, dep, "import", 1.0))
    for file, depth, weight, path in sorted(impact.dependents, key=lambda d: (d[1], -d[2], d[0])):
        if file in nodes or per_depth[depth] >= MAX_NODES_PER_DEPTH:
            continue
        parent = path[-2] if len(path) >= 2 else impact.module
        if parent not in nodes:
            continue
        per_depth[depth] += 1
        nodes[file] = GraphNode(file, depth, 0)
        edges.append(GraphEdge(file, parent, "import", round(weight, 4)))
    for file, confidence in impact.cochange[:MAX_NODES_PER_DEPTH]:
        nodes.setdefault(file, GraphNode(file, None, 0))
        edges.append(GraphEdge(impact.module, file, "cochange", round(confidence, 4)))
    out = [attrs.evolve(n, memories=memories_per_file.get(n.file, 0)) for n in nodes.values()]
    return ImpactGraph(impact.module, out, edges, impact.note)


def pick_module(
    memories_per_file: Counter[str], graph_files: Iterable[str], fan_in: dict[str, int]
) -> str | None:
    """The module a report centres its impact graph on when none is asked for.

    The indexed file with the most memories (what people learned most about), ties broken
    by how many files import it; with no memories, the most imported file.
    """
    known = set(graph_files)
    if not known:
        return None
    candidates = [f for f in memories_per_file if f in known]
    if candidates:
        return max(candidates, key=lambda f: (memories_per_file[f], fan_in.get(f, 0), f))
    ranked = sorted(fan_in.items(), key=lambda kv: (-kv[1], kv[0]))
    return ranked[0][0] if ranked else sorted(known)[0]


def memories_per_file(cols: MemoryColumns) -> Counter[str]:
    """Memories still shown on each file (anchor or related), counted by Arrow."""
    import pyarrow as pa
    import pyarrow.compute as pc

    files = cols.table.column("files").filter(pa.array(cols.shown))
    counted = pc.value_counts(pc.list_flatten(files))
    return Counter(
        dict(
            zip(
                counted.field("values").to_pylist(),
                counted.field("counts").to_pylist(),
                strict=True,
            )
        )
    )


def build_report(
    *,
    workspace: str,
    memories: MemoryColumns,
    #: ``(file_a, file_b, commits together, jaccard)`` (``GitHistory.top_pairs``)
    cochange_pairs: Sequence[tuple[str, str, int, float]],
    impact: ImpactInput | None,
    now: datetime | None = None,
    per_file: Counter[str] | None = None,
) -> ReportData:
    """Aggregate everything a report draws (see the module docstring); ``per_file`` is
    :func:`memories_per_file` when the caller has it already."""
    now = now or datetime.now(UTC)
    cols = memories
    shown = cols.shown
    states = _states(cols)

    module_totals = np.bincount(cols.modules, minlength=len(cols.module_names))
    ranked = sorted(
        np.flatnonzero(module_totals).tolist(),
        key=lambda m: (-module_totals[m], cols.module_names[m]),
    )
    top = ranked[:TOP_MODULES]
    module_names = [*(cols.module_names[m] for m in top), "other"]
    module_group = np.full(len(cols.module_names), len(top), np.int64)
    module_group[top] = np.arange(len(top))
    order = list(range(len(module_names) if len(ranked) > len(top) else len(top)))

    backlog = np.flatnonzero(shown & cols.needs_review)
    candidates = backlog
    if len(backlog) > TABLE_ROWS:  # the oldest by creation; ties at the cut kept, by id below
        cut = np.partition(cols.created_us[backlog], TABLE_ROWS - 1)[TABLE_ROWS - 1]
        candidates = backlog[cols.created_us[backlog] <= cut]
    oldest = sorted(
        cols.rows(candidates.tolist(), "id", "type", "created_at", "files", "content", "shared_by"),
        key=lambda row: (row["created_at"], row["id"]),
    )[:TABLE_ROWS]
    review_items = [
        ReviewItem(
            row["id"],
            row["type"],
            row["created_at"].astimezone(UTC).date().isoformat(),
            row["files"][0] if row["files"] else "",
            _one_line(row["content"]),
            row.get("shared_by") or "",
        )
        for row in oldest
    ]
    contradictions, contradictions_total = _contradictions(cols)
    totals = {
        # the memories shown, as the status bar counts them; the rest are "retired"
        "memories": int(np.count_nonzero(shown)),
        "active": int(np.count_nonzero(shown & ~cols.needs_review & ~cols.stale)),
        "in_review": len(backlog),
        "stale": int(np.count_nonzero(shown & cols.stale)),
        "deprecated": int(np.count_nonzero(~shown)),
        "contradictions": contradictions_total,
        "shared": int(np.count_nonzero(shown & cols.shared)),
    }
    return ReportData(
        workspace=workspace,
        generated_at=now.astimezone(UTC).isoformat(timespec="seconds"),
        totals=totals,
        by_type=_time_series(cols.created_us, cols.types, cols.type_names, now),
        by_module=_time_series(
            cols.created_us, module_group[cols.modules], module_names, now, order
        ),
        confidence=_confidence(cols, states, now),
        staleness=_staleness(cols, states, now),
        review_backlog=_time_series(
            cols.created_us[backlog], cols.types[backlog], cols.type_names, now
        ),
        review_items=review_items,
        review_total=len(backlog),
        contradictions=contradictions,
        contradictions_total=contradictions_total,
        cochange=cochange_matrix(cochange_pairs),
        impact=impact_graph(impact, per_file if per_file is not None else memories_per_file(cols)),
    )
