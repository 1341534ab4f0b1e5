"""Impact: what a change to a file (or one symbol in it) may break.

The code graph's dependents, git co-change partners and, once agent sessions were observed,
the observer's co-access graph (docs/architecture.md, ``engram.codegraph.ImpactAnalyzer``).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.codegraph import ImpactReport
    from engram.observer import Observer

log = logging.getLogger(__name__)


def impact(engine: Engine, file: str, symbol: str | None = None) -> ImpactReport:
    """What a change to ``file`` (or one symbol in it) may break: graph + co-change."""
    from engram.codegraph import ImpactAnalyzer

    rel = engine.relative(file)
    analyzer = ImpactAnalyzer(
        engine.codegraph, cochange=engine.history, coaccess=_coaccess_source(engine)
    )
    return analyzer.impact(rel, symbol or None)


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
        observer = engine.observer
        if int(observer.stats.session_count()) == 0:
            return None
        return CoAccessAdapter(observer)
    except Exception as exc:  # co-access is optional evidence, never a failure
        log.info("co-access unavailable for impact: %s", exc)
        return None


__all__ = ["CoAccessAdapter", "impact"]
