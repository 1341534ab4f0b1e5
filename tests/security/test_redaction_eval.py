"""Smoke test of scripts/eval/redaction.py on a tiny slice (the full run is in docs/security.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import git

ROOT = Path(__file__).resolve().parents[2]

#: two rules in gitleaks' config format (written here; gitleaks' own file is never committed)
TINY_GITLEAKS = """
[allowlist]
regexes = ['''^example$''']
stopwords = ["abcdefghijklmnopqrstuvwxyz"]

[[rules]]
id = "made-up-token"
regex = '''\\b(mut_[a-z0-9]{30})\\b'''
entropy = 3.0

[[rules]]
id = "made-up-keyword"
regex = '''(?i)madeup(?:[ \\t\\w.-]{0,5})[\\s'"]{0,3}(?:=|:)[\\s'"]{0,3}([a-z0-9]{32})'''
"""


def test_redaction_eval_prints_recall_and_false_positives(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "app.py").write_text(
        'import os\n\nTOKEN = os.environ["TOKEN"]\n'
        'sha = "3f2a9c1e7b44d0e1a2b3c4d5e6f708192a3b4c5d"\n'
        "def add(a, b):\n    return a + b\n"
    )
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "init")
    rules = tmp_path / "gitleaks.toml"
    rules.write_text(TINY_GITLEAKS)
    out = subprocess.run(
        [
            sys.executable, str(ROOT / "scripts/eval/redaction.py"), "--json",
            "--limit-rules", "6", "--samples", "2", "--gitleaks", str(rules), "--repos", str(repo),
        ],
        capture_output=True, text=True, timeout=300, check=True,
    )  # fmt: skip
    result = json.loads(out.stdout.strip().splitlines()[-1])
    row = result["rows"]["engram"]
    assert result["dataset"] == "redaction" and result["items"] > 0
    assert 0.0 <= row["recall"] <= 1.0 and 0.5 <= row["recall_gitleaks"] <= 1.0
    assert row["code_lines"] == 5 and row["false_positive_line_rate"] == 0.0
