"""Impact analysis: what a change to a file (or one of its symbols) is likely to touch.

Three kinds of evidence, each optional, so the answer stays useful when one is missing:

* the **structural graph** (imports, calls, inheritance; closure table, docs/codegraph.md),
* **co-change** from git history (any :class:`CoChangeSource`, e.g. ``engram.history``),
* **co-access** from observed sessions (any :class:`CoAccessSource`),

plus **naming conventions** (``test_x.py``, ``x.test.ts``, ``x_test.go``, ``XTest.java``) for
files no import reaches. The sources are combined with a noisy-OR: agreeing evidence
raises a file's score, and a file supported by one source alone still ranks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject

import math
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

import attrs

from engram.codegraph.graph import MAX_DEPTH, CodeGraph, ReferenceSite
from engram.codegraph.symbols import Symbol

#: How much one unit of evidence counts, per source (noisy-OR inputs, 0..1).
GRAPH_STRENGTH = 0.55
COCHANGE_STRENGTH = 0.9
COACCESS_STRENGTH = 0.5
NAMING_STRENGTH = 0.6

#: Languages whose methods are always called on something (``obj.m()``, ``self.m()``,
#: ``this.m()``, ``Self::m()``): a bare ``m()`` there calls a function of that name. Java calls
#: its own and inherited methods bare, so there a bare call may be the method's.
_METHODS_NEVER_CALLED_BARE = frozenset({"python", "go", "javascript", "typescript", "rust"})

_TEST_DIR_RE = re.compile(r"(^|/)(tests?|__tests__|spec|specs|testing)(/|$)")
_TEST_NAME_RE = re.compile(
    r"(^test_.*\.py$|_test\.py$|^conftest\.py$|\.(test|spec)\.[cm]?[jt]sx?$|_test\.go$"
    r"|(Test|Tests|IT)\.java$|_test\.rs$)"
)


@runtime_checkable
class CoChangeSource(Protocol):
    """Files that historically change together with ``file``: ``(partner, confidence, support)``.

    Implemented by ``engram.history.GitHistory``; confidence is P(partner | file) in 0..1.
    """

    def cochange_partners(self, file: str, k: int = 10) -> list[tuple[str, float, int]]: ...


class CoChangeRanking(Protocol):
    """The learned co-change ranking (``engram.history.GitHistory.rank_with_prior``):
    ``(file, P(file changes | target changes), support)`` best first, with the structural
    evidence as its prior. Passed explicitly (``ranking=``), never probed for."""

    def rank_with_prior(
        self,
        file: str,
        prior: Mapping[str, float] | None = None,
        k: int = 10,
        *,
        structure_of: Callable[[str], Mapping[str, float]] | None = None,
    ) -> list[tuple[str, float, int]]: ...


@runtime_checkable
class CoAccessSource(Protocol):
    """Files opened or edited together with ``file`` in agent sessions: ``(partner, weight)``."""

    def coaccess_partners(self, file: str, k: int = 10) -> list[tuple[str, float]]: ...


def is_test_file(path: str) -> bool:
    """True for files that follow a common test layout or naming convention."""
    return bool(_TEST_DIR_RE.search(path) or _TEST_NAME_RE.search(posixpath.basename(path)))


def test_names_for(path: str) -> list[str]:
    """Basenames a test of ``path`` would have by convention, per language."""
    base = posixpath.basename(path)
    stem, ext = posixpath.splitext(base)
    if stem.endswith(".d"):
        stem = stem[:-2]
    if ext in (".py", ".pyi"):
        return [f"test_{stem}.py", f"{stem}_test.py", f"tests_{stem}.py"]
    if ext in (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs", ".mts", ".cts"):
        exts = (".js", ".jsx", ".ts", ".tsx", ".mjs", ".cjs")
        return [f"{stem}.{kind}{e}" for kind in ("test", "spec") for e in exts]
    if ext == ".go":
        return [f"{stem}_test.go"]
    if ext == ".java":
        return [f"{stem}Test.java", f"{stem}Tests.java", f"{stem}IT.java"]
    if ext == ".rs":
        return [f"{stem}_test.rs", f"test_{stem}.rs"]
    return []


def source_names_for_test(path: str) -> list[str]:
    """The reverse mapping: which source basenames a test file is named after."""
    base = posixpath.basename(path)
    for pattern, replacement in (
        (r"^test_(.+)\.py$", r"\1.py"),
        (r"^(.+)_test\.py$", r"\1.py"),
        (r"^(.+)\.(test|spec)(\.[cm]?[jt]sx?)$", r"\1\3"),
        (r"^(.+)_test\.go$", r"\1.go"),
        (r"^(.+?)(Test|Tests|IT)\.java$", r"\1.java"),
        (r"^(.+)_test\.rs$", r"\1.rs"),
    ):
        if re.match(pattern, base):
            name = re.sub(pattern, replacement, base)
            if name.endswith((".js", ".ts")):
                stem = name.rsplit(".", 1)[0]
                return [f"{stem}{e}" for e in (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs")]
            return [name]
    return []


@attrs.define
class Dependent:
    file: str
    depth: int
    weight: float
    path: list[str]


@attrs.define
class CoChangePartner:
    file: str
    confidence: float
    support: int


@attrs.define
class SymbolReference:
    file: str
    kind: str
    line: int


@attrs.define
class RankedFile:
    file: str
    score: float
    reasons: list[str]


@attrs.define
class ImpactReport:
    target: str
    symbol: str | None = None
    symbol_info: Symbol | None = None
    in_graph: bool = True
    direct_dependents: list[Dependent] = attrs.field(factory=list)
    transitive_dependents: list[Dependent] = attrs.field(factory=list)
    symbol_references: list[SymbolReference] = attrs.field(factory=list)
    dependencies: list[str] = attrs.field(factory=list)
    cochange: list[CoChangePartner] = attrs.field(factory=list)
    tests: list[str] = attrs.field(factory=list)
    ranked_files: list[RankedFile] = attrs.field(factory=list)
    score: float = 0.0
    notes: list[str] = attrs.field(factory=list)

    @property
    def impacted_files(self) -> list[str]:
        """Every file the report names, target first: the engine attaches memories to these."""
        seen: dict[str, None] = {self.target: None}
        for dep in (*self.direct_dependents, *self.transitive_dependents):
            seen.setdefault(dep.file, None)
        for partner in self.cochange:
            seen.setdefault(partner.file, None)
        for test in self.tests:
            seen.setdefault(test, None)
        return list(seen)

    def to_dict(self) -> JsonObject:
        data = attrs.asdict(self)
        data["impacted_files"] = self.impacted_files
        return data


def _owner(method: Symbol) -> str:
    """The type a method belongs to: ``Command`` of ``Command.Execute`` (of ``a.B.run``, ``B``)."""
    return method.qualname.rsplit(".", 1)[0].rsplit(".", 1)[-1]


def _of_method(site: ReferenceSite, owner: str, others: set[str]) -> bool | None:
    """Whether a reference by a method's name is the method's: ``True`` where the graph can
    tell (a call on the type, ``Command.Execute(c)``), ``None`` where it is the name only (a
    call on a variable or field: the graph records its name, not its type), ``False`` where
    it is something else of that name (a function, another type's method)."""
    if site.kind in ("extends", "implements"):
        return False  # a base class of that name, not a method
    never_bare = site.language in _METHODS_NEVER_CALLED_BARE
    if site.kind == "imports":
        return False if never_bare else None  # a method is not imported by its name
    if site.obj is None:
        return False if never_bare else None  # `Execute()`: a function of that name
    if site.obj_is_module:
        return False  # `cobra.Execute()`: the package's function
    receiver = site.obj.strip("()*&").rsplit(".", 1)[-1]
    if receiver == owner:
        return True
    return False if receiver in others else None  # `Other.Execute(o)`: the other type's


def method_references(graph: CodeGraph, method: Symbol) -> tuple[list[SymbolReference], int]:
    """The references of ``method`` from other files, and how many of them are by its name
    only. The graph resolves a call by its name (``c.Execute()`` is a call of some
    ``Execute``), so a method's references were every reference by that name to its file:
    the functions and other types' methods of that name too (docs/codegraph.md "What it
    stores", its paragraph "Qualified names"). Those the graph can tell are not the
    method's are left out."""
    owner = _owner(method)
    # where a package is a folder (Go), a call by the name resolves to one file of the
    # package that defines it, the first: go-chi/chi's `r.ServeHTTP` calls all went to
    # chain.go's ChainHandler.ServeHTTP, and `impact mux.go:Mux.ServeHTTP` found one
    # reference of 125 (stop 33). The calls resolved to a sibling defining the name are
    # this method's as much (by the name only), unless the call names the other type.
    holders = [method.file]
    others: set[str] = set()
    for file in [method.file, *graph.package_files(method.file)]:
        same = [s for s in graph.symbols_in(file) if s.name == method.name]
        if file != method.file and same:
            holders.append(file)
        others.update(
            _owner(s) for s in same if s.kind == "method" and s.qualname != method.qualname
        )
    others.discard(owner)
    sites = [
        site
        for holder in holders
        for site in graph.reference_sites(holder, method.name)
        if site.file != method.file
    ]
    kept: dict[tuple[str, str, int], bool] = {}
    for site in sites:
        verdict = _of_method(site, owner, others)
        if verdict is not False:
            key = (site.file, site.kind, site.line)
            kept[key] = kept.get(key, False) or verdict is True
    refs = [SymbolReference(*key) for key in sorted(kept)]
    return refs, sum(1 for typed in kept.values() if not typed)


def _noisy_or(parts: Sequence[float]) -> float:
    product = 1.0
    for part in parts:
        product *= 1.0 - max(0.0, min(1.0, part))
    return 1.0 - product


def naming_partners(target: str, graph: CodeGraph) -> dict[str, str]:
    """Files related to ``target`` by name alone: its tests, or the source a test is named for."""
    partners: dict[str, str] = {}
    tests, sources = test_names_for(target), source_names_for_test(target)
    found = graph.paths_with_basenames([*tests, *sources])  # one indexed lookup
    for name in tests:
        for path in found.get(name, []):
            if path != target:
                partners[path] = "test by naming convention"
    for name in sources:
        for path in found.get(name, []):
            if path != target and not is_test_file(path):
                partners[path] = "source named by this test"
    return partners


def rank_related_files(
    target: str,
    graph: CodeGraph | None,
    cochange: CoChangeSource | None = None,
    k: int = 10,
    coaccess: CoAccessSource | None = None,
    ranking: CoChangeRanking | None = None,
) -> list[tuple[str, float]]:
    """Files most likely to need changing with ``target``, best first: ``(file, score)``.

    This is the ranking ``engram impact`` shows and the co-change evaluation scores. With
    ``ranking`` (the history's learned ranking) history decides and the structural
    evidence is its prior; without it, ``cochange``'s partners are one more evidence.
    """
    ranked = _rank(target, graph, cochange, coaccess, k, ranking=ranking)
    return [(r.file, r.score) for r in ranked]


def structural_evidence(target: str, graph: CodeGraph) -> dict[str, list[tuple[float, str]]]:
    """Graph and naming evidence that ``file`` changes with ``target``: strengths and why.

    Dependents decay with depth and with their fan-in (a hub imported everywhere says
    little about this change); files ``target`` depends on count a little less; test/source
    naming partners count whether or not an import reaches them.
    """
    evidence: dict[str, list[tuple[float, str]]] = {}

    def add(file: str, strength: float, reason: str) -> None:
        if file != target and strength > 0:
            evidence.setdefault(file, []).append((strength, reason))

    dependents = {d[0]: d for d in graph.dependents(target, max_depth=2)}
    dependencies = graph.neighbours([target], depth=1)
    fan_in = graph.fan_in(list({*dependents, *dependencies}))
    for file, (_, depth, weight, _) in dependents.items():
        specificity = 1.0 / (1.0 + math.log1p(fan_in.get(file, 0)) / 4)
        nearness = 0.5 ** (depth - 1)
        add(
            file,
            GRAPH_STRENGTH * weight * specificity * nearness,
            f"depends on target (depth {depth})",
        )
    for file, weight in dependencies.items():
        if file in dependents:
            continue
        specificity = 1.0 / (1.0 + math.log1p(fan_in.get(file, 0)) / 2)
        add(file, GRAPH_STRENGTH * 0.8 * weight * specificity, "target depends on it")
    for file, reason in naming_partners(target, graph).items():
        add(file, NAMING_STRENGTH, reason)
    return evidence


def structure_prior(target: str, graph: CodeGraph) -> dict[str, float]:
    """:func:`structural_evidence` combined per file (noisy-OR), in 0..1."""
    return {
        file: _noisy_or([s for s, _ in parts])
        for file, parts in structural_evidence(target, graph).items()
    }


def _rank(
    target: str,
    graph: CodeGraph | None,
    cochange: CoChangeSource | None,
    coaccess: CoAccessSource | None,
    k: int,
    partners: list[tuple[str, float, int]] | None = None,
    *,
    ranking: CoChangeRanking | None = None,
) -> list[RankedFile]:
    evidence: dict[str, list[float]] = {}
    reasons: dict[str, list[str]] = {}

    def add(file: str, strength: float, reason: str) -> None:
        if file == target or strength <= 0:
            return
        evidence.setdefault(file, []).append(strength)
        reasons.setdefault(file, []).append(reason)

    if graph is not None:
        for file, parts in structural_evidence(target, graph).items():
            for strength, reason in parts:
                add(file, strength, reason)
    if ranking is not None:
        # History decides where it is long; the structural evidence above becomes its prior
        # (and carries files with no history). Scores are P(file changes | target changes).
        structure = {file: _noisy_or(parts) for file, parts in evidence.items()}
        evidence = {}
        structure_of = None if graph is None else (lambda f: structure_prior(f, graph))
        ranked_partners = ranking.rank_with_prior(
            target, structure, max(k * 3, 30), structure_of=structure_of
        )
        for file, probability, support in ranked_partners:
            add(file, probability, f"co-changed {support}x" if support else "changes often")
    elif cochange is not None:
        if partners is None:
            partners = cochange.cochange_partners(target, max(k * 3, 30))
        for file, confidence, support in partners:
            # low support is weak evidence even at high confidence (ROSE)
            certainty = 1.0 - 1.0 / (1.0 + support)
            add(file, COCHANGE_STRENGTH * confidence * certainty + 0.05, f"co-changed {support}x")
    if coaccess is not None:
        for file, weight in coaccess.coaccess_partners(target, max(k * 3, 30)):
            add(file, COACCESS_STRENGTH * weight, "opened together")
    ranked = [
        RankedFile(file, round(_noisy_or(parts), 6), reasons[file])
        for file, parts in evidence.items()
    ]
    ranked.sort(key=lambda r: (-r.score, r.file))
    return ranked[:k]


class ImpactAnalyzer:
    """Impact reports over one graph, with optional history and co-access sources."""

    def __init__(
        self,
        graph: CodeGraph,
        cochange: CoChangeSource | None = None,
        coaccess: CoAccessSource | None = None,
        ranking: CoChangeRanking | None = None,
    ) -> None:
        self.graph = graph
        self.cochange = cochange
        self.coaccess = coaccess
        #: the learned co-change ranking (the engine passes its GitHistory, as ``cochange``)
        self.ranking = ranking

    def import_neighbours(self, target: str) -> dict[str, float]:
        """The import graph alone (both directions, depth 1): the evaluation's baseline row."""
        return self.graph.import_neighbours(target)

    def rank_related_files(self, target: str, k: int = 10) -> list[tuple[str, float]]:
        return rank_related_files(
            target, self.graph, self.cochange, k, self.coaccess, ranking=self.ranking
        )

    def impact(self, file: str, symbol: str | None = None, k: int = 20) -> ImpactReport:
        """Dependents, co-change partners, tests, a ranking and one score for ``file``."""
        graph = self.graph
        report = ImpactReport(target=file, symbol=symbol)
        report.in_graph = graph.has_file(file)
        if not report.in_graph:
            report.notes.append(f"{file} is not in the code graph (not indexed or not source)")
        dependents = graph.dependents(file) if report.in_graph else []
        if symbol and report.in_graph:
            report.symbol_info = graph.find_symbol(file, symbol)
            if report.symbol_info is None:
                report.notes.append(f"symbol {symbol!r} not found in {file}; file-level impact")
            info = report.symbol_info
            if info is not None and info.kind == "method" and "." in info.qualname:
                report.symbol_references, by_name = method_references(graph, info)
                if by_name:
                    report.notes.append(
                        f"{by_name} of {len(report.symbol_references)} references are calls "
                        f"of {info.name!r} on a variable or field, matched by the name: a call "
                        f"of another type's {info.name} (or through an interface) looks the same"
                    )
            else:
                refs = graph.symbol_dependents(file, symbol)
                report.symbol_references = [SymbolReference(f, k, n) for f, k, n in refs]
            users = {ref.file for ref in report.symbol_references}
            if users:
                # the symbol's users, then what depends on them
                by_file = {d[0]: d for d in dependents}
                narrowed: dict[str, tuple[str, int, float, list[str]]] = {}
                for user in sorted(users):  # one answer whatever the hash seed
                    narrowed[user] = by_file.get(user, (user, 1, 0.8, [file, user]))
                    if narrowed[user][1] != 1:
                        narrowed[user] = (user, 1, narrowed[user][2], [file, user])
                    for dep_file, depth, weight, path in graph.dependents(user, MAX_DEPTH - 1):
                        if dep_file == file or dep_file in narrowed:
                            continue
                        narrowed[dep_file] = (dep_file, depth + 1, weight * 0.8, [file, *path])
                dependents = sorted(narrowed.values(), key=lambda d: (d[1], -d[2], d[0]))
            elif report.symbol_info is not None:
                report.notes.append(
                    f"no resolved references to {symbol!r} from other files; file-level impact"
                )
        for dep_file, depth, weight, path in dependents:
            entry = Dependent(dep_file, depth, round(weight, 6), path)
            if depth == 1:
                report.direct_dependents.append(entry)
            else:
                report.transitive_dependents.append(entry)
        if report.in_graph:
            report.dependencies = sorted(graph.dependencies(file))
        partners: list[tuple[str, float, int]] = []
        if self.cochange is not None:
            try:
                partners = self.cochange.cochange_partners(file, 30)
            except Exception as exc:  # history is optional evidence, never a failure
                report.notes.append(f"co-change unavailable: {exc}")
        else:
            report.notes.append("no git history source: co-change not considered")
        report.cochange = [CoChangePartner(p, round(c, 4), s) for p, c, s in partners[:10]]
        tests = {d.file for d in (*report.direct_dependents, *report.transitive_dependents)
                 if d.depth <= 2 and is_test_file(d.file)}  # fmt: skip
        tests.update(p for p in naming_partners(file, graph) if is_test_file(p))
        report.tests = sorted(tests)
        report.ranked_files = _rank(
            file, graph, self.cochange, self.coaccess, k, partners, ranking=self.ranking
        )
        mass = sum(d.weight for d in report.direct_dependents)
        mass += 0.5 * sum(d.weight for d in report.transitive_dependents)
        mass += sum(p.confidence for p in report.cochange)
        report.score = round(1.0 - math.exp(-mass / 5.0), 4)
        return report
