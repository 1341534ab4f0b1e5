"""What the report shows, computed from the store's memories, git history and the code graph.

Everything here is aggregation in Python: the browser gets a few hundred numbers per chart,
never one point per memory, so a 100k-memory store makes a report as light as a 100-memory
one (docs/report.md: the render time budget). Inputs are plain values (memories, co-change
pairs, an impact report's dependents), so the module has no store or engine dependency and
its tests need no LanceDB.
"""

from __future__ import annotations

import itertools
import posixpath
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta

import attrs

from engram.model import Memory, RelationType, shared_by_text

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
    """Counts per period (``periods`` are ISO dates of each bucket's start)."""

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


# ---------------------------------------------------------------------------- time buckets


def _bucket_unit(start: datetime, end: datetime) -> str:
    span = end - start
    if span <= timedelta(days=45):
        return "day"
    if span <= timedelta(days=400):
        return "week"
    return "month"


def _bucket(moment: datetime, unit: str) -> str:
    day = moment.astimezone(UTC).date()
    if unit == "day":
        return day.isoformat()
    if unit == "week":
        return (day - timedelta(days=day.weekday())).isoformat()
    return day.replace(day=1).isoformat()


def _periods(first: datetime, last: datetime, unit: str) -> list[str]:
    """Every bucket from ``first`` to ``last`` (so gaps show as zero, not as a jump)."""
    out: list[str] = []
    day = datetime.fromisoformat(_bucket(first, unit)).date()
    end = datetime.fromisoformat(_bucket(last, unit)).date()
    while day <= end:
        out.append(day.isoformat())
        if unit == "day":
            day += timedelta(days=1)
        elif unit == "week":
            day += timedelta(days=7)
        else:
            day = (day.replace(day=28) + timedelta(days=4)).replace(day=1)
    return out


def _time_series(
    stamped: Sequence[tuple[datetime, str]], now: datetime, order: Sequence[str] | None = None
) -> TimeSeries:
    """Counts of ``(moment, group)`` pairs per period and group (cumulative is left to the eye)."""
    if not stamped:
        return TimeSeries("day", [_bucket(now, "day")], [])
    first = min(m for m, _ in stamped)
    last = max(max(m for m, _ in stamped), first)
    unit = _bucket_unit(first, last)
    periods = _periods(first, last, unit)
    index = {p: i for i, p in enumerate(periods)}
    counts: dict[str, list[int]] = {}
    for moment, group in stamped:
        row = counts.setdefault(group, [0] * len(periods))
        row[index[_bucket(moment, unit)]] += 1
    names = list(order) if order is not None else sorted(counts, key=lambda g: -sum(counts[g]))
    return TimeSeries(unit, periods, [Series(g, counts[g]) for g in names if g in counts])


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


def _state(memory: Memory) -> str:
    if memory.deprecated:
        return "deprecated"
    if memory.is_stale:
        return "stale"
    if memory.needs_review:
        return "in review"
    return "active"


STATES = ("active", "in review", "stale", "deprecated")


def _histogram(labels: list[str], rows: Iterable[tuple[int, str]]) -> Histogram:
    counts = {s: [0] * len(labels) for s in STATES}
    for index, state in rows:
        counts[state][index] += 1
    return Histogram(labels, [Series(s, counts[s]) for s in STATES if any(counts[s])])


def _confidence(memories: Sequence[Memory], now: datetime) -> Histogram:
    labels = [
        f"{i / CONFIDENCE_BINS:.2f}–{(i + 1) / CONFIDENCE_BINS:.2f}" for i in range(CONFIDENCE_BINS)
    ]
    rows = (
        (min(CONFIDENCE_BINS - 1, int(m.current_confidence(now) * CONFIDENCE_BINS)), _state(m))
        for m in memories
    )
    return _histogram(labels, rows)


def _age_labels() -> list[str]:
    edges = AGE_EDGES_DAYS
    labels = [f"{a}–{b} days" for a, b in itertools.pairwise(edges)]
    return [*labels, f"over {edges[-1]} days"]


def _staleness(memories: Sequence[Memory], now: datetime) -> Histogram:
    labels = _age_labels()

    def bucket(memory: Memory) -> int:
        days = max(0.0, (now - memory.updated_at).total_seconds() / 86400.0)
        for i, edge in enumerate(AGE_EDGES_DAYS[1:]):
            if days < edge:
                return i
        return len(labels) - 1

    return _histogram(labels, ((bucket(m), _state(m)) for m in memories))


def _one_line(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _contradictions(
    memories: Sequence[Memory], by_id: dict[str, Memory]
) -> tuple[list[Contradiction], int]:
    """Open conflicts: ``conflicts_with`` links whose two ends are both still shown."""
    seen: set[tuple[str, str]] = set()
    out: list[Contradiction] = []
    for memory in memories:
        if memory.deprecated:
            continue
        for rel in memory.relations:
            if rel.relation_type is not RelationType.CONFLICTS_WITH or not rel.target_memory_id:
                continue
            other = by_id.get(rel.target_memory_id)
            if other is None or other.deprecated:
                continue
            key = tuple(sorted((memory.id, other.id)))
            if key in seen:
                continue
            seen.add((key[0], key[1]))
            out.append(
                Contradiction(
                    memory.id,
                    _one_line(memory.content),
                    other.id,
                    _one_line(other.content),
                    shared_by_text(memory) or shared_by_text(other) or "",
                )
            )
    out.sort(key=lambda c: (c.first_id, c.second_id))
    return out[:TABLE_ROWS], len(out)


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


def memories_per_file(memories: Sequence[Memory]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for memory in memories:
        if not memory.deprecated:
            counts.update(memory.files)
    return counts


def build_report(
    *,
    workspace: str,
    memories: Sequence[Memory],
    #: ``(file_a, file_b, commits together, jaccard)`` (``GitHistory.top_pairs``)
    cochange_pairs: Sequence[tuple[str, str, int, float]],
    impact: ImpactInput | None,
    now: datetime | None = None,
) -> ReportData:
    """Aggregate everything a report draws (see the module docstring)."""
    now = now or datetime.now(UTC)
    by_id = {m.id: m for m in memories}
    shown = [m for m in memories if not m.deprecated]

    type_stamps = [(m.created_at, m.type.value) for m in memories]
    module_counts = Counter(module_of(m.files[0] if m.files else None) for m in memories)
    top = [name for name, _ in module_counts.most_common(TOP_MODULES)]
    module_stamps = [
        (m.created_at, mod if mod in top else "other")
        for m in memories
        for mod in [module_of(m.files[0] if m.files else None)]
    ]
    order = [*top, "other"] if len(module_counts) > len(top) else top

    backlog = [m for m in shown if m.needs_review]
    backlog.sort(key=lambda m: (m.created_at, m.id))
    review_items = [
        ReviewItem(
            m.id,
            m.type.value,
            m.created_at.astimezone(UTC).date().isoformat(),
            m.files[0] if m.files else "",
            _one_line(m.content),
        )
        for m in backlog[:TABLE_ROWS]
    ]
    contradictions, contradictions_total = _contradictions(shown, by_id)
    totals = {
        "memories": len(memories),
        "active": sum(1 for m in shown if not m.needs_review and not m.is_stale),
        "in_review": len(backlog),
        "stale": sum(1 for m in shown if m.is_stale),
        "deprecated": len(memories) - len(shown),
        "contradictions": contradictions_total,
        "shared": sum(1 for m in shown if shared_by_text(m)),
    }
    return ReportData(
        workspace=workspace,
        generated_at=now.astimezone(UTC).isoformat(timespec="seconds"),
        totals=totals,
        by_type=_time_series(type_stamps, now),
        by_module=_time_series(module_stamps, now, order),
        confidence=_confidence(memories, now),
        staleness=_staleness(memories, now),
        review_backlog=_time_series([(m.created_at, m.type.value) for m in backlog], now),
        review_items=review_items,
        review_total=len(backlog),
        contradictions=contradictions,
        contradictions_total=contradictions_total,
        cochange=cochange_matrix(cochange_pairs),
        impact=impact_graph(impact, memories_per_file(memories)),
    )
