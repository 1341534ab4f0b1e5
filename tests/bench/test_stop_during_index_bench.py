"""Smoke test of scripts/bench/stop_during_index.py on a tiny workspace (times not asserted)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]


def _bench(tmp_path: Path, *args: str) -> dict[str, Any]:
    """The bench's last JSON line, run on a git repository of 20 small files."""
    ws = tmp_path / "ws"
    ws.mkdir()
    subprocess.run(["git", "init", "-q", str(ws)], check=True)
    for n in range(20):
        (ws / f"m{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n")
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/bench/stop_during_index.py"), str(ws), *args,
         "--limit", "60"],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_stop_bench_stops_the_engine_it_started(tmp_path: Path) -> None:
    result = _bench(tmp_path, "--after", "1")
    assert result["engine_gone_s"] is not None, result  # the engine it started is gone
    assert any(line.startswith("stopped the engine") for line in result["stop_said"]), result


def test_stop_bench_stops_inside_a_phase_or_says_it_ended_first(tmp_path: Path) -> None:
    result = _bench(tmp_path, "--phase", "resolve", "--into", "0")
    stopped = result["resolve"]
    assert stopped["engine_gone_s"] is not None, result
    # 20 files parse in this process: no worker log line, so the index ends unstopped
    assert stopped["phase_began_s"] is not None or stopped["index_ended_before_stop"], result
