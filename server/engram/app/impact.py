"""Impact: what a change to a file (or one symbol in it) may break.

The code graph's dependents, git co-change partners and, once agent sessions were observed,
the observer's co-access graph (docs/architecture.md, ``engram.codegraph.ImpactAnalyzer``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from engram.app.inputs import validate_symbol

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.codegraph import ImpactReport
    from engram.codegraph.impact import RankedFile
    from engram.observer import Observer

log = logging.getLogger(__name__)


def impact(engine: Engine, file: str, symbol: str | None = None) -> ImpactReport:
    """What a change to ``file`` (or one symbol in it) may break: graph + co-change.

    A symbol is resolved like a memory's anchor (``app.anchors.resolve_symbol``): unknown or
    ambiguous is an error, never a file-level report passed off as the symbol's. When it
    has references, the files that use it come first, ranked by how often they use it
    (issue 12 "Anchors validated").
    """
    from engram.app.anchors import resolve_symbol
    from engram.codegraph import ImpactAnalyzer

    rel = engine.relative(file)
    symbol = validate_symbol(symbol or None)
    found = None
    if symbol:
        found = resolve_symbol(engine, rel, symbol, by_line=False)  # FILE:SYMBOL has no line
        if found is not None:
            symbol = found.qualname
    history = engine.history  # both its partners and its learned ranking
    analyzer = ImpactAnalyzer(
        engine.codegraph, cochange=history, coaccess=_coaccess_source(engine), ranking=history
    )
    report = analyzer.impact(rel, symbol or None)
    if found is not None and report.symbol_info is not None:
        # the definition the anchor rule picked: the graph's lookup returns the first one,
        # a `typing.overload` stub (`symbol_info` of click's Context.lookup_default said
        # lines 776-778, the stub, while a memory anchored to it holds 785-805)
        report.symbol_info = found
    if symbol and report.symbol_references:
        report.ranked_files = rank_by_use(report)
    return report


def rank_by_use(report: ImpactReport) -> list[RankedFile]:
    """Files that reference the symbol first, most uses first (then the file-level ranking).

    A user's score is the file-level score combined (noisy-or) with its use evidence,
    ``1 - 0.5**uses``, and floored above every file that does not use it.
    """
    from engram.codegraph.impact import RankedFile

    uses: dict[str, list[int]] = {}
    for ref in report.symbol_references:
        uses.setdefault(ref.file, []).append(ref.line)
    before = {r.file: r for r in report.ranked_files}
    top_other = max((r.score for r in report.ranked_files if r.file not in uses), default=0.0)
    users: list[RankedFile] = []
    for user, lines in uses.items():
        prior = before.get(user)
        evidence = 1.0 - 0.5 ** len(lines)
        score = 1.0 - (1.0 - (prior.score if prior else 0.0)) * (1.0 - evidence)
        where = ", ".join(str(n) for n in sorted(lines)[:5])
        reason = f"uses {report.symbol} {len(lines)}x (line {where})"
        users.append(RankedFile(user, score, [reason, *(prior.reasons if prior else [])]))
    users.sort(key=lambda r: (-len(uses[r.file]), -r.score, r.file))
    # keep the order visible in the scores: every user above every other file
    floor = top_other
    for index in range(len(users) - 1, -1, -1):
        floor = max(users[index].score, round(floor + 1e-4, 6))
        users[index] = RankedFile(
            users[index].file, round(min(floor, 1.0), 6), users[index].reasons
        )
    others = [r for r in report.ranked_files if r.file not in uses]
    return [*users, *others]


class CoAccessAdapter:
    """The observer's co-access graph as ``engram.codegraph.CoAccessSource``.

    Impact analysis must never fail because the observer's statistics could not be read
    (a locked or damaged SQLite file): errors become "no co-access evidence".
    """

    def __init__(self, observer: Observer) -> None:
        self.observer = observer

    def coaccess_partners(self, file: str, k: int = 10) -> list[tuple[str, float]]:
        try:
            return [(str(f), float(w)) for f, w in self.observer.coaccess_partners(file, k)]
        except Exception as exc:
            log.debug("co-access of %s unavailable: %s", file, exc)
            return []


def _coaccess_source(engine: Engine) -> CoAccessAdapter | None:
    """The observer's co-access graph as impact evidence, once sessions were observed.

    Before the first observed session the graph holds only the cold-start seed, which
    comes from co-commits: impact already counts those as co-change, so it is left out
    rather than counted twice. Nothing is created on disk just to find it empty.
    """
    if not engine.config.observer.enabled:
        return None
    if engine.observer_if_open is None and not (engine.workspace.engram_dir / "observer").is_dir():
        return None
    try:
        from engram.app.observe import observer_of

        observer = observer_of(engine)
        if int(observer.stats.session_count()) == 0:
            return None
        return CoAccessAdapter(observer)
    except Exception as exc:  # co-access is optional evidence, never a failure
        log.info("co-access unavailable for impact: %s", exc)
        return None


__all__ = ["CoAccessAdapter", "impact", "rank_by_use"]
