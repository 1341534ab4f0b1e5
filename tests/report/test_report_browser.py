"""``engram report`` as a user runs it: the real CLI writes the page, headless Chromium
(Debian's package, driven by Playwright) draws it with the network cut off."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from tests.conftest import default_env, git

from engram.report import CHART_IDS

ENGRAM = Path(sys.executable).with_name("engram")
CHROMIUM = Path(os.environ.get("ENGRAM_CHROMIUM", "/usr/bin/chromium"))
ROOT = Path(__file__).resolve().parents[2]
#: a clone names its files: plotly draws ``<a href>`` in labels as a link (stop 29)
LINKED = 'app/<a href="https:a.io">b.py'


def engram(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = default_env()
    env["ENGRAM_EMBED__MODEL"] = "none"
    proc = subprocess.run([str(ENGRAM), *args], cwd=ws, env=env, capture_output=True,
                          text=True, timeout=240, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small Python project with history, an index and a few memories."""
    ws = tmp_path_factory.mktemp("report") / "ws"
    (ws / "app").mkdir(parents=True)
    git(ws, "init", "-q", "-b", "main")
    files = {
        "app/__init__.py": "",
        "app/core.py": "def charge(x):\n    return x\n",
        "app/api.py": "from app.core import charge\n\ndef pay(x):\n    return charge(x)\n",
        "app/web.py": "from app.api import pay\n\ndef view():\n    return pay(1)\n",
    }
    for rel, text in files.items():
        (ws / rel).write_text(text)
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "start")
    (ws / LINKED).write_text("x = 0\n")
    git(ws, "add", "-A")
    git(ws, "commit", "-q", "-m", "a file a stranger named")
    for n in range(3):  # core and api change together (and the stranger's file)
        (ws / "app/core.py").write_text(f"def charge(x):\n    return x + {n}\n")
        (ws / "app/api.py").write_text(
            f"from app.core import charge\n\ndef pay(x):\n    return charge(x) * {n}\n"
        )
        (ws / LINKED).write_text(f"x = {n}\n")
        git(ws, "commit", "-q", "-am", f"change {n}")
    engram(ws, "index", "--no-embed")
    engram(ws, "remember", "--file", "app/core.py", "--symbol", "charge",
           "charge() takes euros but the payment API wants cents")  # fmt: skip
    engram(ws, "remember", "--type", "decision", "--file", "app/api.py",
           "pay() retries twice, never more: the bank rate-limits us")  # fmt: skip
    engram(ws, "remember", "--source", "observer_inferred", "--file", "app/web.py",
           "view() is slow when <script> tags appear in titles")  # fmt: skip
    return ws


def test_cli_writes_one_self_contained_page(workspace: Path) -> None:
    out = json.loads(engram(workspace, "report", "--json", "--module", "app/core.py").stdout)
    page = Path(out["path"])
    assert page == workspace / ".engram" / "report.html"
    assert out["charts"] == list(CHART_IDS) and out["module"] == "app/core.py"
    assert out["totals"]["memories"] >= 3
    text = page.read_text(encoding="utf-8")
    assert "<script src" not in text and "<link" not in text
    # a file name of the user's choice; a bad one is one clear line
    target = workspace / "out.html"
    assert engram(workspace, "report", str(target)).stdout.strip() == str(target)
    bad = subprocess.run([str(ENGRAM), "report", "--module", "nope.py"], cwd=workspace,
                         capture_output=True, text=True, timeout=240, check=False)  # fmt: skip
    assert bad.returncode == 1
    assert bad.stderr.strip().splitlines() == [
        "engram: error: nope.py is not in the code graph; run `engram index`"
    ]


def test_chromium_draws_every_chart_offline_without_console_errors(workspace: Path) -> None:
    from playwright.sync_api import sync_playwright

    assert CHROMIUM.exists(), f"no Chromium at {CHROMIUM}: run scripts/setup-browser"
    page_path = Path(
        json.loads(engram(workspace, "report", "--json", "--module", "app/core.py").stdout)["path"]
    )
    errors: list[str] = []
    requests: list[str] = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--no-sandbox"])
        try:
            context = browser.new_context(offline=True)
            tab = context.new_page()
            tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            tab.on("pageerror", lambda e: errors.append(str(e)))
            tab.on("request", lambda r: requests.append(r.url))
            tab.goto(page_path.as_uri())
            tab.wait_for_selector("body[data-rendered]", state="attached", timeout=120_000)
            assert tab.get_attribute("body", "data-rendered") == str(len(CHART_IDS))
            for chart in CHART_IDS:
                # plotly drew it: an SVG with at least one plotted trace, axis or annotation
                drawn = tab.locator(f"#{chart} .main-svg")
                assert drawn.count() >= 1, chart
                assert tab.locator(f"#{chart} .plot-container").count() == 1, chart
            # the data actually arrived: bars for types, heat map cells, graph nodes
            assert tab.locator("#chart-by-type .bars .point").count() >= 1
            # every memory is from the last minutes: the time axis says the hour, never
            # "23:59:59.9996" (an axis plotly made a few milliseconds wide)
            ticks = tab.locator("#chart-by-type .xtick text").all_text_contents()
            assert ticks and all(re.match(r"^\d\d:00\s*\w{3} \d\d$", t) for t in ticks), ticks
            assert tab.locator("#chart-cochange .hm, #chart-cochange image").count() >= 1
            assert tab.locator("#chart-impact .scatterlayer .point").count() >= 3
            # memory text is text, never markup: the page has exactly its own two scripts
            # besides the figures' JSON, whatever a memory says
            assert tab.locator("script").count() == 3
            # and a file name is a label, never a link, in every chart
            assert tab.locator("svg a").count() == 0
            assert '<a href="https:a.io">b.py' in tab.locator("#chart-impact").inner_text()
        finally:
            browser.close()
    assert errors == []
    assert [u for u in requests if not u.startswith("file:")] == []


def test_bench_script_smoke() -> None:
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/report.py"), "--memories", "300",
         "--modules", "12", "--commits", "12", "--runs", "1", "--browser", str(CHROMIUM)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    # memories shown and those retired (the bench deprecates some)
    assert result["totals"]["memories"] + result["totals"]["deprecated"] == 300
    assert result["render"]["console_errors"] == []
    assert result["render"]["in_page_s"] > 0 and result["plotly_only"]["in_page_s"] > 0
    assert result["impact_module"]
