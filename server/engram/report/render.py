"""``engram report`` as one self-contained HTML file: plotly.js inlined, no network at all.

The page carries plotly.js (its cartesian partial bundle, which setup.py fetched into
``report/vendor/`` and whose sha256 ``plotly_bundle.json`` pins; else the installed ``plotly``
package's full bundle, ``plotly.offline.get_plotlyjs``, three times slower to parse), the
figures as one JSON document, and a few lines that draw them; a
Content-Security-Policy forbids every load from outside the file, so it works offline, in
VS Code's webview and from an e-mail attachment alike, and injected text in a memory can
never fetch anything. Memory text goes into HTML tables escaped, and every string of the
figures reaches plotly with ``&``, ``<`` and ``>`` as entities (plotly draws a subset of
HTML in labels, ``<a href>`` among them). When every chart is drawn the loader sets
``data-rendered`` on ``<body>``: the browser test and the render benchmark wait for it;
``performance`` marks (``engram-bundle``, ``-loader``, ``-data``, ``-plot-calls``, ``-drawn``)
split the time between parsing the page, running plotly.js, reading the figures and drawing.
"""

from __future__ import annotations

import hashlib
import html
import json
import logging
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable

from engram.jsontypes import JsonObject
from engram.report.data import (
    Contradiction,
    Histogram,
    ImpactGraph,
    ReportData,
    ReviewItem,
    TimeSeries,
)

log = logging.getLogger(__name__)

#: ids of the chart ``<div>`` elements, in page order (the browser test checks each)
CHART_IDS = (
    "chart-by-type",
    "chart-by-module",
    "chart-confidence",
    "chart-staleness",
    "chart-review",
    "chart-cochange",
    "chart-impact",
)

_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 0 auto; max-width: 1200px; padding: 1rem 2rem;
       color: #222; background: #fff; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
.meta { color: #666; font-size: 0.9rem; }
.totals { display: flex; flex-wrap: wrap; gap: 0.6rem; margin: 1rem 0; }
.totals div { border: 1px solid #ddd; border-radius: 6px; padding: 0.4rem 0.8rem; }
.totals b { display: block; font-size: 1.3rem; }
.chart { width: 100%; height: 380px; }
.pair { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
table { border-collapse: collapse; width: 100%; font-size: 0.85rem; }
th, td { border-bottom: 1px solid #eee; padding: 0.25rem 0.4rem; text-align: left;
         vertical-align: top; }
code { font-size: 0.85em; }
.empty { color: #888; font-style: italic; }
"""

_LOADER = """
(function () {
  performance.mark('engram-loader');
  var figures = JSON.parse(document.getElementById('engram-figures').textContent);
  performance.mark('engram-data');
  var config = {responsive: true, displaylogo: false};
  var drawn = Object.keys(figures).map(function (id) {
    return Plotly.newPlot(id, figures[id].data, figures[id].layout, config);
  });
  performance.mark('engram-plot-calls');
  Promise.all(drawn).then(function () {
    performance.mark('engram-drawn');
    document.body.setAttribute('data-rendered', String(drawn.length));
    document.body.setAttribute('data-render-ms', String(Math.round(performance.now())));
  }, function (err) {
    console.error('engram report: ' + err);
  });
})();
"""


def _layout(title: str, **extra: object) -> JsonObject:
    layout: JsonObject = {
        "title": {"text": title},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
        "legend": {"orientation": "h", "y": -0.2},
    }
    layout.update(extra)
    return layout


def _empty(title: str, message: str) -> JsonObject:
    """A drawn, empty chart that says why it is empty (never a missing figure)."""
    return {
        "data": [],
        "layout": _layout(
            title,
            xaxis={"visible": False},
            yaxis={"visible": False},
            annotations=[
                {"text": message, "showarrow": False, "xref": "paper", "yref": "paper",
                 "x": 0.5, "y": 0.5, "font": {"size": 14, "color": "#888"}}
            ],
        ),
    }  # fmt: skip


def _stacked(ts: TimeSeries, title: str, empty: str) -> JsonObject:
    if not ts.series:
        return _empty(title, empty)
    width = _UNIT_MS[ts.unit] * 0.8  # a lone bar is as wide as one among many
    return {
        "data": [
            {"type": "bar", "name": s.name, "x": ts.periods, "y": s.values, "width": width}
            for s in ts.series
        ],
        "layout": _layout(
            title,
            barmode="stack",
            xaxis={
                "title": {"text": f"created (per {ts.unit})"},
                "type": "date",
                **_time_ticks(ts),
            },
            yaxis={"title": {"text": "memories"}},
        ),
    }


#: One bucket of each unit, in milliseconds (a date axis counts in them; a month ~30 days).
_UNIT_MS = {"hour": 3_600_000, "day": 86_400_000, "week": 7 * 86_400_000,
            "month": 30 * 86_400_000}  # fmt: skip
#: What a tick says per unit: times for hours, dates for days and weeks, months for months.
_TICK_FORMAT = {"hour": "%H:%M<br>%b %d", "day": "%b %d", "week": "%b %d", "month": "%b %Y"}
#: At most this many ticks on a time axis.
_MAX_TICKS = 8


def _time_ticks(ts: TimeSeries) -> JsonObject:
    """Ticks on whole buckets, spaced so at most :data:`_MAX_TICKS` show, and a range of
    half a bucket either side. Left to plotly, a history of one bucket got an axis a few
    milliseconds wide, ticked "23:59:59.9996"."""
    from datetime import datetime, timedelta

    step = max(1, -(-len(ts.periods) // _MAX_TICKS))
    half = timedelta(milliseconds=_UNIT_MS[ts.unit] / 2)
    first, last = datetime.fromisoformat(ts.periods[0]), datetime.fromisoformat(ts.periods[-1])
    return {
        "tick0": ts.periods[0],
        "dtick": f"M{step}" if ts.unit == "month" else _UNIT_MS[ts.unit] * step,
        "tickformat": _TICK_FORMAT[ts.unit],
        "range": [(first - half).isoformat(sep=" "), (last + half).isoformat(sep=" ")],
    }


_STATE_COLOURS = {
    "active": "#2a9d8f",
    "in review": "#e9c46a",
    "stale": "#f4a261",
    "deprecated": "#9e9e9e",
}


def _histogram(hist: Histogram, title: str, x_title: str) -> JsonObject:
    if not hist.series:
        return _empty(title, "no memories yet")
    return {
        "data": [
            {
                "type": "bar",
                "name": s.name,
                "x": hist.labels,
                "y": s.values,
                "marker": {"color": _STATE_COLOURS.get(s.name, "#264653")},
            }
            for s in hist.series
        ],
        "layout": _layout(
            title,
            barmode="stack",
            xaxis={"title": {"text": x_title}, "type": "category"},
            yaxis={"title": {"text": "memories"}},
        ),
    }


def _short(path: str, limit: int = 40) -> str:
    return path if len(path) <= limit else "…" + path[-(limit - 1) :]


def _heatmap(data: ReportData) -> JsonObject:
    title = "Top co-change pairs (commits together; colour: Jaccard of their commit sets)"
    matrix = data.cochange
    if not matrix.files:
        return _empty(title, "no co-change history: run `engram index` in a git repository")
    labels = [_short(f) for f in matrix.files]
    return {
        "data": [
            {
                "type": "heatmap",
                "z": matrix.jaccard,
                "x": labels,
                "y": labels,
                "customdata": [
                    [[a, b, matrix.support[i][j]] for j, b in enumerate(matrix.files)]
                    for i, a in enumerate(matrix.files)
                ],
                "hovertemplate": "%{customdata[0]}<br>%{customdata[1]}<br>"
                "%{customdata[2]} commits together, Jaccard %{z}<extra></extra>",
                "colorscale": "Viridis",
                "zmin": 0,
                "zmax": 1,
            }
        ],
        "layout": _layout(
            title,
            height=560,
            margin={"l": 260, "r": 20, "t": 50, "b": 200},
            xaxis={"tickangle": -45, "type": "category"},
            yaxis={"autorange": "reversed", "type": "category"},
        ),
    }


def _graph_positions(graph: ImpactGraph) -> dict[str, tuple[float, float]]:
    """Columns by import distance (what the module imports on the left, dependents to the
    right by depth, co-change partners in the last column), files spread down each column."""
    columns: dict[float, list[str]] = {}
    depths = [n.depth for n in graph.nodes if n.depth is not None]
    cochange_column = float(max(depths, default=0) + 1)
    for node in graph.nodes:
        column = float(node.depth) if node.depth is not None else cochange_column
        columns.setdefault(column, []).append(node.file)
    positions: dict[str, tuple[float, float]] = {}
    for column, files in columns.items():
        for i, file in enumerate(sorted(files)):
            positions[file] = (column, (i + 1) / (len(files) + 1))
    return positions


def _impact(data: ReportData) -> JsonObject:
    graph = data.impact
    title = f"Impact graph of {graph.module}" if graph.module else "Impact graph"
    if graph.module is None or not graph.nodes:
        return _empty(title, graph.note or "nothing to draw")
    pos = _graph_positions(graph)
    traces: list[JsonObject] = []
    for kind, colour, dash in (("import", "#8d99ae", "solid"), ("cochange", "#e76f51", "dot")):
        xs: list[float | None] = []
        ys: list[float | None] = []
        for edge in graph.edges:
            if edge.kind == kind and edge.source in pos and edge.target in pos:
                xs += [pos[edge.source][0], pos[edge.target][0], None]
                ys += [pos[edge.source][1], pos[edge.target][1], None]
        if xs:
            traces.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": "imports" if kind == "import" else "co-changes",
                    "x": xs,
                    "y": ys,
                    "hoverinfo": "skip",
                    "line": {"color": colour, "width": 1, "dash": dash},
                }
            )
    nodes = graph.nodes
    traces.append(
        {
            "type": "scatter",
            "mode": "markers+text",
            "name": "files",
            "x": [pos[n.file][0] for n in nodes],
            "y": [pos[n.file][1] for n in nodes],
            "text": [_short(n.file.rsplit("/", 1)[-1], 28) for n in nodes],
            "textposition": "top center",
            "customdata": [[n.file, n.memories] for n in nodes],
            "hovertemplate": "%{customdata[0]}<br>%{customdata[1]} memories<extra></extra>",
            "marker": {
                "size": [10 + min(30, 3 * n.memories) for n in nodes],
                "color": ["#e63946" if n.depth == 0 else "#457b9d" for n in nodes],
            },
        }
    )
    depths = sorted({p[0] for p in pos.values()})
    has_cochange = any(n.depth is None for n in nodes)
    names = {-1.0: "imports", 0.0: "module"}
    ticks = [names.get(d, f"{int(d)} away") for d in depths]
    if has_cochange:
        ticks[-1] = "co-change"
    return {
        "data": traces,
        "layout": _layout(
            title,
            height=560,
            xaxis={"tickvals": depths, "ticktext": ticks, "zeroline": False},
            yaxis={"visible": False},
        ),
    }


#: figure keys whose strings are Engram's own plotly markup (``<br>``, ``<extra>``)
_OWN_MARKUP = frozenset({"hovertemplate", "tickformat"})


def _as_text(value: object) -> object:
    """Every string of a figure shown as the characters it holds: plotly draws a subset of
    HTML in labels, names and hover text (``<a href>``, ``<b>``, ``<span style>``), so a
    clone's file named ``<a href="https:a.io">b.py`` was a link in the co-change and impact
    charts (stop 29). ``&``, ``<`` and ``>`` become the entities plotly shows as themselves;
    the keys in :data:`_OWN_MARKUP` keep Engram's own markup."""
    if isinstance(value, str):
        return value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    if isinstance(value, list):
        return [_as_text(item) for item in value]
    if isinstance(value, dict):
        return _text_only(value)
    return value


def _text_only(fig: dict[str, object]) -> JsonObject:
    return {k: v if k in _OWN_MARKUP else _as_text(v) for k, v in fig.items()}


def figures(data: ReportData) -> dict[str, JsonObject]:
    """Every chart as a plotly figure (``data`` + ``layout``), keyed by its ``<div>`` id;
    every string from the data is plain text (:func:`_as_text`)."""
    return {key: _text_only(fig) for key, fig in _figures(data).items()}


def _figures(data: ReportData) -> dict[str, JsonObject]:
    return {
        "chart-by-type": _stacked(data.by_type, "Memories by type over time", "no memories yet"),
        "chart-by-module": _stacked(
            data.by_module, "Memories by module over time", "no memories yet"
        ),
        "chart-confidence": _histogram(
            data.confidence, "Confidence (after decay)", "current confidence"
        ),
        "chart-staleness": _histogram(data.staleness, "Age since last update", "age"),
        "chart-review": _stacked(
            data.review_backlog, "Review backlog by creation date", "nothing waits for review"
        ),
        "chart-cochange": _heatmap(data),
        "chart-impact": _impact(data),
    }


def _validated(figs: dict[str, JsonObject]) -> str:
    """The figures as JSON, each checked against plotly's schema (a typo fails here, in
    Python, rather than as a blank chart in someone's browser)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    checked = {key: json.loads(pio.to_json(go.Figure(fig))) for key, fig in figs.items()}
    for fig in checked.values():
        # plotly.py writes its whole default template (7 KB) into every figure; plotly.js's
        # own defaults look the same, and applying the template cost each chart ~10% of its
        # drawing time in Chromium (docs/report.md)
        fig["layout"].pop("template", None)
    # ``</`` would end the <script> element early; JSON allows the escaped form
    return json.dumps(checked, separators=(",", ":")).replace("</", "<\\/")


def _shared(label: str) -> str:
    """The mark of a teammate's memory in a table, ``shared by "Ana" (from …), unreviewed``
    (``model.shared_by_text``): its text is their words, not the reader's."""
    return f"<i>{html.escape(label)}:</i> " if label else ""


def _review_table(items: list[ReviewItem], total: int) -> str:
    if not items:
        return '<p class="empty">Nothing waits for review.</p>'
    rows = "".join(
        f"<tr><td><code>{html.escape(i.id)}</code></td><td>{html.escape(i.type)}</td>"
        f"<td>{html.escape(i.created)}</td><td>{html.escape(i.file)}</td>"
        f"<td>{_shared(i.shared_by)}{html.escape(i.text)}</td></tr>"
        for i in items
    )
    more = f"<p class='meta'>the oldest {len(items)} of {total}</p>" if total > len(items) else ""
    return (
        "<table><thead><tr><th>id</th><th>type</th><th>created</th><th>file</th>"
        f"<th>memory</th></tr></thead><tbody>{rows}</tbody></table>{more}"
    )


def _contradiction_table(items: list[Contradiction], total: int) -> str:
    if not items:
        return '<p class="empty">No open contradictions.</p>'
    rows = "".join(
        f"<tr><td><code>{html.escape(c.first_id)}</code> {html.escape(c.first_text)}</td>"
        f"<td><code>{html.escape(c.second_id)}</code> {html.escape(c.second_text)}</td>"
        f"<td>{html.escape(c.shared_by)}</td></tr>"
        for c in items
    )
    more = f"<p class='meta'>{len(items)} of {total}</p>" if total > len(items) else ""
    return (
        "<table><thead><tr><th>memory</th><th>contradicted by</th><th>shared</th></tr>"
        f"</thead><tbody>{rows}</tbody></table>{more}"
    )


@cache
def plotly_js() -> tuple[str, str]:
    """The plotly.js the page inlines and what it is (``"plotly.js-cartesian-dist-min@4.1.1"``
    or ``"plotly full bundle"``): the partial bundle when it is installed unaltered."""
    return bundle_from(resources.files("engram.report"))


def bundle_from(here: Traversable) -> tuple[str, str]:
    """:func:`plotly_js` for the package folder ``here`` (``plotly_bundle.json`` and
    ``vendor/``)."""
    spec = json.loads(here.joinpath("plotly_bundle.json").read_text(encoding="utf-8"))
    bundle = here.joinpath("vendor", spec["bundle"])
    try:
        raw = bundle.read_bytes()
    except OSError:
        raw = b""
    if raw and hashlib.sha256(raw).hexdigest() == spec["files"][spec["bundle"]]:
        return raw.decode("utf-8"), f"{spec['npm_package']}@{spec['version']}"
    log.warning(
        "report: %s is %s; inlining plotly's full bundle (slower to draw; reinstall engram "
        "with npm on the PATH to get it)",
        spec["npm_package"],
        "altered" if raw else "not installed",
    )
    from plotly.offline import get_plotlyjs

    return get_plotlyjs(), "plotly full bundle"


#: A total's tile label where its key alone misleads: "0 shared" in the report of the person
#: who had just shared four memories (the count is of teammates' memories read in);
#: "deprecated" counts every memory never shown (flagged too), which the Memory view and
#: ``engram stats`` call retired.
TILE_LABELS = {"shared": "from teammates", "deprecated": "retired"}


def render_html(data: ReportData) -> str:
    """The whole report page (see the module docstring)."""
    totals = "".join(
        f"<div><b>{value:,}</b>{html.escape(TILE_LABELS.get(name, name.replace('_', ' ')))}</div>"
        for name, value in data.totals.items()
    )
    ws = html.escape(data.workspace)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{_CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Engram report: {ws}</title><style>{_STYLE}</style>
<script>performance.mark('engram-bundle');{plotly_js()[0]}</script></head>
<body>
<h1>Engram report</h1>
<p class="meta">{ws} · generated {html.escape(data.generated_at)}</p>
<div class="totals">{totals}</div>
<h2>What the memory holds</h2>
<div class="chart" id="chart-by-type"></div>
<div class="chart" id="chart-by-module"></div>
<h2>Confidence and staleness</h2>
<div class="pair"><div class="chart" id="chart-confidence"></div>
<div class="chart" id="chart-staleness"></div></div>
<h2>Review backlog ({data.review_total:,})</h2>
<div class="chart" id="chart-review"></div>
{_review_table(data.review_items, data.review_total)}
<h2>Open contradictions ({data.contradictions_total:,})</h2>
{_contradiction_table(data.contradictions, data.contradictions_total)}
<h2>What changes together</h2>
<div class="chart" id="chart-cochange" style="height:560px"></div>
<h2>What a change may break</h2>
<div class="chart" id="chart-impact" style="height:560px"></div>
<script type="application/json" id="engram-figures">{_validated(figures(data))}</script>
<script>{_LOADER}</script>
</body></html>
"""
