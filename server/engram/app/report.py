"""The report: what the memory holds and how the code hangs together, as one HTML page.

``report`` gathers the inputs (the memories as columns, ``MemoryStore.frame()``, the most
frequent co-change pairs, one module's impact) and hands them to ``engram.report`` for
aggregation; ``write_report`` renders the page to a file, for the CLI (``engram report``)
and the language server's ``engram.report`` (VS Code's webview, Neovim's
``:EngramReport``). Reading only: no memory moves (docs/trust.md). See docs/report.md.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import InvalidInput

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.report import ImpactInput, ReportData

log = logging.getLogger(__name__)

#: co-change pairs read for the heat map (it shows the files of the strongest ones)
PAIRS = 200


def report(engine: Engine, module: str | None = None) -> ReportData:
    """Everything ``engram report`` draws; ``module`` (a workspace file) centres the
    impact graph, by default the indexed source file with the most memories."""
    from engram.app.impact import impact as impact_of
    from engram.lifecycle.trust import hiding
    from engram.report import ImpactInput, build_report, pick_module
    from engram.report.data import MemoryColumns, memories_per_file

    # columns, not Memory objects: see engram.report.data.MemoryColumns
    memories = MemoryColumns.of(engine.store.frame(hiding()))  # shown as the outputs show
    counts = memories_per_file(memories)
    pairs: list[tuple[str, str, int, float]] = []
    try:
        pairs = engine.history.top_pairs(PAIRS)
    except Exception as exc:  # history is optional: the heat map says it is empty
        log.info("co-change pairs unavailable for the report: %s", exc)
    graph = engine.graph_or_none()
    centre: ImpactInput | None = None
    if graph is not None:
        target = engine.relative(module) if module else None
        if target is None:
            files = [row[0] for row in graph.files() if row[1]]  # source files only
            fan_in = graph.fan_in([f for f in files if f in counts] or files)
            target = pick_module(counts, files, fan_in)
        if target is not None:
            if not graph.has_file(target):
                raise InvalidInput(f"{target} is not in the code graph; run `engram index`")
            found = impact_of(engine, target)
            centre = ImpactInput(
                module=target,
                dependents=[
                    (d.file, d.depth, d.weight, d.path)
                    for d in (*found.direct_dependents, *found.transitive_dependents)
                ],
                dependencies=list(found.dependencies),
                cochange=[(p.file, p.confidence) for p in found.cochange],
                note="; ".join(found.notes),
            )
    return build_report(
        workspace=str(engine.workspace.root), memories=memories, cochange_pairs=pairs,
        impact=centre, per_file=counts,
    )  # fmt: skip


def write_report(
    engine: Engine, target: Path | str | None = None, module: str | None = None
) -> tuple[Path, ReportData]:
    """Render :func:`report` to one HTML file (default ``.engram/report.html``); returns
    the absolute path and the data."""
    from engram.report import render_html

    data = report(engine, module)
    page = render_html(data)
    if target:
        path = Path(target).expanduser()
    else:
        path = engine.workspace.ensure_engram_dir() / "report.html"
    if path.is_dir():
        raise InvalidInput(f"{path} is a directory; give a file name")
    if not path.parent.exists():
        raise InvalidInput(f"directory {path.parent} does not exist")
    path.write_text(page, encoding="utf-8")
    return path.resolve(), data


__all__ = ["report", "write_report"]
