"""``engram report``: the memory, its health and how the code hangs together, as pictures.

Public surface: :func:`build_report` (aggregate memories, co-change pairs and one module's
impact into a :class:`ReportData`), :class:`ImpactInput`, :func:`render_html` (one
self-contained HTML page, plotly.js inlined) and :data:`CHART_IDS`. Importing this package
is cheap; plotly loads when a page is rendered. See docs/report.md.
"""

from engram.report.data import ImpactInput, ReportData, build_report, pick_module
from engram.report.render import CHART_IDS, render_html

__all__ = ["CHART_IDS", "ImpactInput", "ReportData", "build_report", "pick_module", "render_html"]
