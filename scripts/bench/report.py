#!/usr/bin/env python3
"""How long ``engram report`` takes at 100k memories: building it, and drawing it in Chromium.

A scratch git workspace gets a small Python package (``--modules`` files in a few folders,
each importing two others, so the impact graph has depth), a git history in which
neighbouring modules change together (so the heat map has pairs), ``engram index
--no-embed``, and then ``--memories`` synthetic memories anchored across those files with
two years of creation dates, every type, some in review, stale, deprecated and in
conflict. It then times, in the same run:

* ``collect``: ``app.report.report`` (the store's columns, aggregation, co-change, impact),
  wall and CPU seconds; with ``--legacy`` also ``legacy_collect``: decoding every memory
  with ``MemoryStore.list`` and counting over the objects, as the report did before;
* ``html_s``: rendering the page (plotly's schema check, plotly.js inlined);
* ``render``: headless Chromium (Debian's, driven by Playwright) from navigation until
  every chart is drawn (the page sets ``data-rendered``), median of ``--runs`` fresh tabs,
  wall clock and the page's own ``performance.now()``, split by the page's marks into
  ``to_bundle_s`` (loading and parsing the page up to the start of plotly.js),
  ``bundle_eval_s`` (running plotly.js), ``data_s`` (parsing the figures' JSON),
  ``plot_calls_s`` (the ``Plotly.newPlot`` calls) and ``settle_s`` (until every chart's
  promise resolved); ``first_paint_s``, when the first text was on screen (Chromium's
  first-contentful-paint); and the renderer's main-thread busy time (``TaskDuration`` from the
  DevTools protocol), which does not grow when other jobs take the CPU;
* ``plotly_only``: the same for a page that holds nothing but the plotly.js the report
  inlines (``bundle`` names it: the cartesian partial bundle setup.py fetched, or plotly's
  full bundle): the floor the report pays to parse the library; ``full_bundle_only``: the
  same with plotly's full bundle (4.8 MB); ``blank``: an empty page (the browser's own
  floor); every row also gives ``cpu_s``, the CPU seconds of Chromium's processes;
* with ``--plotly-js FILE``, ``other_bundle``: the same page with another plotly.js bundle
  inlined instead (e.g. the full one, ``plotly.offline.get_plotlyjs`` written to a file),
  and ``other_bundle_only``; with ``--compare PAGE`` (repeatable), ``compare:NAME``: another
  report page (one an older engram wrote for the same workspace) drawn in the same rounds.

Every page is drawn in one browser, interleaved forward then backward (A-B-B-A-A-B...), so
a change of load on the shared machine falls on all of them alike.

Usage: scripts/bench/report.py [--memories 100000] [--modules 200] [--runs 3]
       [--browser /usr/bin/chromium] [--keep DIR | --reuse DIR] [--legacy]
       [--plotly-js FILE] [--compare PAGE]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

BATCH = 5000
FOLDERS = ("core", "api", "storage", "web", "jobs")
RENDER_GOAL_S = 3.0
T = TypeVar("T")


def git(root: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )


def module_path(i: int) -> str:
    return f"pkg/{FOLDERS[i % len(FOLDERS)]}/mod{i:04d}.py"


def write_module(root: Path, i: int, n: int, revision: int) -> None:
    """Module ``i`` imports ``i+1`` and ``i+7``: a chain with shortcuts, depth for impact."""
    imports = sorted({(i + 1) % n, (i + 7) % n} - {i})
    lines = [f"from pkg.{module_path(j)[4:-3].replace('/', '.')} import f{j}" for j in imports]
    lines += ["", "", f"def f{i}(x):", f"    return x + {revision}", ""]
    path = root / module_path(i)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")


def make_workspace(root: Path, modules: int, commits: int) -> None:
    git(root, "init", "-q")
    for folder in FOLDERS:
        (root / "pkg" / folder).mkdir(parents=True, exist_ok=True)
        (root / "pkg" / folder / "__init__.py").write_text("", encoding="utf-8")
    (root / "pkg" / "__init__.py").write_text("", encoding="utf-8")
    for i in range(modules):
        write_module(root, i, modules, 0)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    # neighbours change together: commit c touches modules c, c+1 (and c+2 every third)
    for c in range(1, commits):
        start = (c * 3) % modules
        touched = [start, (start + 1) % modules] + ([(start + 2) % modules] if c % 3 == 0 else [])
        for i in touched:
            write_module(root, i, modules, c)
        git(root, "commit", "-q", "-am", f"change {c}")


def fill_memories(root: Path, count: int, modules: int, seed: int) -> None:
    import random

    from engram.model import (
        CodeAnchor,
        Memory,
        MemoryRelation,
        MemorySource,
        MemoryType,
        RelationType,
    )
    from engram.store import MemoryStore
    from engram.workspace import Workspace

    rng = random.Random(seed)
    types = list(MemoryType)
    sources = list(MemorySource)
    end = datetime.now(UTC)
    store = MemoryStore(Workspace.open(root))
    try:
        for start in range(0, count, BATCH):
            batch: list[Memory] = []
            for i in range(start, min(count, start + BATCH)):
                created = end - timedelta(days=rng.uniform(0, 730))
                module = module_path(int(rng.paretovariate(1.2) * 3) % modules)
                memory = Memory(
                    content=f"memory {i} about {module}: remember detail {rng.randrange(10**6)}",
                    type=types[i % len(types)],
                    source=sources[i % len(sources)],
                    confidence=round(rng.uniform(0.3, 1.0), 3),
                    anchors=[CodeAnchor(module, f"f{i % modules}")] if i % 10 else [],
                    needs_review=i % 17 == 0,
                    deprecated=i % 53 == 0,
                    stale_at=created + timedelta(days=30) if i % 23 == 0 else None,
                    created_at=created,
                    updated_at=created + timedelta(days=rng.uniform(0, 60)),
                    last_accessed_at=created + timedelta(days=rng.uniform(0, 90)),
                    valid_from=created,
                )
                if i % 211 == 1 and batch:
                    other = batch[-1]
                    memory.relations.append(
                        MemoryRelation(RelationType.CONFLICTS_WITH, target_memory_id=other.id)
                    )
                batch.append(memory)
            store.add(batch)
        store.compact()
    finally:
        store.close()


PHASES = (  # (name, from mark, to mark): the page's performance marks (engram.report.render)
    ("to_bundle_s", None, "engram-bundle"),
    ("bundle_eval_s", "engram-bundle", "engram-loader"),
    ("data_s", "engram-loader", "engram-data"),
    ("plot_calls_s", "engram-data", "engram-plot-calls"),
    ("settle_s", "engram-plot-calls", "engram-drawn"),
)


# when the first text was on screen; a page with text paints it, maybe only after the
# charts (then the entry comes a frame later), a page without (the library-only ones) never
FIRST_PAINT = """() => new Promise(done => {
  const seen = () => performance.getEntriesByName('first-contentful-paint')[0];
  if (seen() || !document.querySelector('h1')) return done(seen() ? seen().startTime : null);
  new PerformanceObserver(() => seen() && done(seen().startTime))
    .observe({type: 'paint', buffered: true});
  setTimeout(() => done(null), 5000);
})"""


def render_times(browser: str, pages: dict[str, Path], runs: int) -> dict[str, dict[str, Any]]:
    """For each page: median wall/in-page time to ``data-rendered`` over ``runs`` fresh tabs,
    the split by the page's marks, and errors. Pages are drawn interleaved in one browser,
    forward then backward (A-B-B-A-A-B...), so a load change on the shared machine falls on
    every page alike."""
    from playwright.sync_api import sync_playwright

    names = list(pages)
    samples: dict[str, dict[str, list[float]]] = {n: {} for n in names}
    errors: dict[str, list[str]] = {n: [] for n in names}
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=browser, args=["--no-sandbox"])
        try:
            for round_ in range(runs):
                for name in names if round_ % 2 == 0 else reversed(names):
                    for key, value in draw_once(chromium, pages[name], errors[name]).items():
                        samples[name].setdefault(key, []).append(value)
        finally:
            chromium.close()
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        # wall: navigation to every chart drawn, from outside; in_page: the page's own clock;
        # main_thread: the renderer's main thread busy time (what the page costs, however
        # busy the machine); cpu: CPU seconds of every Chromium process meanwhile
        row: dict[str, Any] = {k: round(statistics.median(v), 3) for k, v in samples[name].items()}
        row["runs"] = runs
        row["console_errors"] = errors[name]
        out[name] = row
    return out


def draw_once(chromium: Any, page: Path, errors: list[str]) -> dict[str, float]:
    """One fresh tab draws ``page``: its times (see :func:`render_times`); errors to ``errors``."""
    tab = chromium.new_page(viewport={"width": 1280, "height": 900})
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    cdp = tab.context.new_cdp_session(tab)
    cdp.send("Performance.enable")
    before = browser_cpu_s()
    started = time.perf_counter()
    tab.goto(page.as_uri())
    tab.wait_for_selector("body[data-rendered]", state="attached", timeout=120_000)
    out = {"wall_s": time.perf_counter() - started}
    after = browser_cpu_s()
    out["cpu_s"] = sum(t - before.get(pid, 0.0) for pid, t in after.items())
    out["in_page_s"] = float(tab.get_attribute("body", "data-render-ms") or "nan") / 1000
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    out["main_thread_s"] = float(metrics.get("TaskDuration", float("nan")))
    marks: dict[str, float] = tab.evaluate(
        "() => Object.fromEntries(performance.getEntriesByType('mark')"
        ".map(m => [m.name, m.startTime]))"
    )
    paint = tab.evaluate(FIRST_PAINT)
    if paint is not None:  # the page's first text on screen
        out["first_paint_s"] = float(paint) / 1000
    for phase, start, end in PHASES:
        if end in marks and (start is None or start in marks):
            out[phase] = (marks[end] - (marks[start] if start else 0.0)) / 1000
    tab.close()
    return out


def browser_cpu_s() -> dict[int, float]:
    """User+system CPU seconds of each live process descended from this one (Chromium's)."""
    tick = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    cpu: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        children.setdefault(int(fields[1]), []).append(pid)
        cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
    out: dict[int, float] = {}
    todo = list(children.get(os.getpid(), []))
    while todo:
        pid = todo.pop()
        out[pid] = cpu.get(pid, 0.0)
        todo.extend(children.get(pid, []))
    return out


def library_page(folder: Path, name: str, js: str) -> Path:
    """A page holding nothing but ``js`` (a plotly.js bundle, or nothing: the blank floor)."""
    page = folder / f"{name}.html"
    page.write_text(
        "<!DOCTYPE html><html><head><meta charset='utf-8'><script>"
        + js
        + "</script></head><body><script>document.body.setAttribute('data-render-ms',"
        "String(Math.round(performance.now())));document.body.setAttribute('data-rendered','0');"
        "</script></body></html>",
        encoding="utf-8",
    )
    return page


def timed(work: Callable[[], T]) -> tuple[T, dict[str, float]]:
    """``work()`` and its wall and CPU seconds (this process; CPU does not grow when other
    jobs take the machine's cores, wall does)."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = work()
    return out, {
        "wall_s": round(time.perf_counter() - wall, 3),
        "cpu_s": round(time.process_time() - cpu, 3),
    }


def legacy_collect(engine: Any) -> int:
    """What building the report cost before the store gave columns: decoding every memory
    (``MemoryStore.list``) and counting over the objects; the same aggregation after it."""
    from engram.report.data import MemoryColumns, build_report

    memories = engine.store.list(engine.filter(include_deprecated=True))
    data = build_report(
        workspace="", memories=MemoryColumns.from_memories(memories), cochange_pairs=[],
        impact=None,
    )  # fmt: skip
    return data.totals["memories"]


def run(args: argparse.Namespace, root: Path) -> dict[str, Any]:
    from engram.app import Engine
    from engram.app.indexing import index
    from engram.app.report import report
    from engram.report import render_html

    result: dict[str, Any] = {"memories": args.memories, "modules": args.modules}
    started = time.perf_counter()
    if not args.reuse:
        make_workspace(root, args.modules, args.commits)
        with Engine.open(root, overrides={"embed": {"model": "none"}}) as engine:
            index(engine, chunks=False, history=True)
        fill_memories(root, args.memories, args.modules, args.seed)
    result["setup_s"] = round(time.perf_counter() - started, 1)

    if args.legacy:
        with Engine.open(root, overrides={"embed": {"model": "none"}}) as engine:
            engine.store.count()  # the snapshot loads outside the timing, as for collect_s
            result["legacy_collect"] = timed(lambda: legacy_collect(engine))[1]
    with Engine.open(root, overrides={"embed": {"model": "none"}}) as engine:
        engine.store.count()  # the snapshot loads outside the timing, as for legacy_collect
        data, result["collect"] = timed(lambda: report(engine))
        result["collect_s"] = result["collect"]["wall_s"]
        page, result["html"] = timed(lambda: render_html(data))
        result["html_s"] = result["html"]["wall_s"]
    page_path = root / ".engram" / "report.html"
    page_path.write_text(page, encoding="utf-8")
    result["html_bytes"] = len(page.encode("utf-8"))
    result["impact_module"] = data.impact.module
    result["totals"] = data.totals
    from engram.report.render import plotly_js

    inlined, result["bundle"] = plotly_js()
    pages = {
        "render": page_path,
        "blank": library_page(root, "blank", ""),
        "plotly_only": library_page(root, "plotly-only", inlined),
    }
    if result["bundle"] != "plotly full bundle":  # the floor the full bundle would pay
        from plotly.offline import get_plotlyjs

        pages["full_bundle_only"] = library_page(root, "full-only", get_plotlyjs())
    if args.plotly_js:  # another plotly.js bundle, same page, same run
        other = Path(args.plotly_js).read_text(encoding="utf-8")
        swapped = root / ".engram" / "report-other-bundle.html"
        swapped.write_text(page.replace(inlined, other), encoding="utf-8")
        pages["other_bundle"] = swapped
        pages["other_bundle_only"] = library_page(root, "other-only", other)
        result["other_bundle_path"] = args.plotly_js
    for other_page in args.compare or ():  # pages another build wrote for this workspace
        pages[f"compare:{Path(other_page).name}"] = Path(other_page)
    result.update(render_times(args.browser, pages, args.runs))
    floor = result["plotly_only"]["in_page_s"]
    result["render_minus_plotly_s"] = round(result["render"]["in_page_s"] - floor, 3)
    result["render_goal_s"] = RENDER_GOAL_S
    result["render_goal_met"] = result["render"]["in_page_s"] <= RENDER_GOAL_S
    result["main_thread_goal_met"] = result["render"]["main_thread_s"] <= RENDER_GOAL_S
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memories", type=int, default=100_000)
    parser.add_argument("--modules", type=int, default=200)
    parser.add_argument("--commits", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--browser", default="/usr/bin/chromium")
    parser.add_argument("--keep", metavar="DIR", help="build the workspace here and keep it")
    parser.add_argument(
        "--plotly-js",
        metavar="FILE",
        help="also draw the page with this plotly.js bundle inlined instead (e.g. the full one)",
    )
    parser.add_argument(
        "--compare",
        metavar="PAGE",
        action="append",
        help="also draw this report page (e.g. one main's engram wrote), interleaved; repeatable",
    )
    parser.add_argument(
        "--reuse", metavar="DIR", help="time a workspace an earlier --keep built (no setup)"
    )
    parser.add_argument(
        "--legacy",
        action="store_true",
        help="also time decoding every memory (how the report was built before columns)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if not Path(args.browser).exists():
        print(
            f"report bench: no browser at {args.browser} (scripts/setup-browser)", file=sys.stderr
        )
        return 2
    if args.reuse:
        result = run(args, Path(args.reuse))
    elif args.keep:
        root = Path(args.keep)
        root.mkdir(parents=True, exist_ok=False)
        result = run(args, root)
    else:
        with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
            result = run(args, Path(tmp))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
