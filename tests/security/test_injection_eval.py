"""Smoke test of scripts/eval/injection_fencing.py on a tiny corpus in BIPIA's layout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INJECTIONS = json.loads((Path(__file__).parent / "data" / "injections.json").read_text())


def test_injection_eval_prints_fenced_share(tmp_path: Path) -> None:
    bench = tmp_path / "bipia" / "benchmark"
    bench.mkdir(parents=True)
    for i, name in enumerate(
        ("text_attack_train", "text_attack_test", "code_attack_train", "code_attack_test")
    ):
        (bench / f"{name}.json").write_text(json.dumps({"kind": INJECTIONS[2 * i : 2 * i + 2]}))
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts/eval/injection_fencing.py"), "--json",
         "--bipia", str(tmp_path / "bipia"), "--session-starts", "2"],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    row = result["rows"]["engram"]
    assert result["items"] == 8 and row["shown"] == 8
    assert row["fenced"] == 8 and row["fenced_share"] == 1.0
    assert row["session_start_shown"] == row["session_start_fenced"] > 0
