"""Contradictions between memories, read without an LLM (engram.lifecycle.contradictions)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.lifecycle.contradictions import find_contradictions
from engram.model import CodeAnchor, Memory, MemoryType

PAIRS = Path(__file__).parent / "data" / "contradiction_pairs.jsonl"


def gotcha(text: str, **kw: object) -> Memory:
    return Memory(text, type=MemoryType.GOTCHA, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("old", "new", "kind"),
    [
        ("call flush() before close()", "never call flush() before close()", "polarity"),
        ("the session cookie is httpOnly", "the session cookie is not httpOnly", "polarity"),
        ("the login form needs CSRF tokens", "the login form does not need CSRF", "polarity"),
        ("enable the cache in tests", "disable the cache in tests", "opposite"),
        ("run migrations before deploying", "run migrations after deploying", "opposite"),
        ("the job timeout is 30s", "the job timeout is 90s", "value"),
        ("pin lxml to 4.9", "pin lxml to 5.1", "value"),
    ],
)  # fmt: skip
def test_each_kind_of_contradiction_is_found(old: str, new: str, kind: str) -> None:
    existing = gotcha(old)
    (found,) = find_contradictions(gotcha(new), [(existing, None)])
    assert found.memory is existing and found.kind == kind and found.reason


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("use logging instead of print", "don't use print, use logging"),  # the same advice
        ("do not mock the clock in integration tests", "mock the clock in unit tests"),
        ("the config file is required in production", "the config file is optional in development"),
        ("JWT tokens expire after 24 hours", "refresh tokens are stored in redis"),
        ("retry the upload 3 times", "retry the upload 3 times with backoff"),
        # a number that names which thing is meant is not a setting's value
        ("album 0 thumbnails live in /var/t0", "album 1 thumbnails live in /var/t1"),
    ],
)  # fmt: skip
def test_agreeing_or_differently_scoped_notes_are_not_contradictions(old: str, new: str) -> None:
    assert find_contradictions(gotcha(new), [(gotcha(old), None)]) == []


def test_anchored_notes_on_different_files_and_event_types_are_not_compared() -> None:
    here = gotcha("enable the cache in tests", anchors=[CodeAnchor(file="a.py")])
    there = gotcha("disable the cache in tests", anchors=[CodeAnchor(file="b.py")])
    assert find_contradictions(there, [(here, None)]) == []
    state = Memory("disable the cache in tests", type=MemoryType.WORK_STATE)
    assert find_contradictions(state, [(gotcha("enable the cache in tests"), None)]) == []
    gone = gotcha("enable the cache in tests", deprecated=True)
    assert find_contradictions(gotcha("disable the cache in tests"), [(gone, None)]) == []


def test_labelled_pairs_precision_stays_high() -> None:
    """The 50 labelled pairs (scripts/eval/contradictions.py prints the full figures)."""
    rows = [json.loads(line) for line in PAIRS.read_text().splitlines() if line.strip()]
    flagged = [bool(find_contradictions(gotcha(r["b"]), [(gotcha(r["a"]), None)])) for r in rows]
    true_positive = sum(f and r["conflict"] for f, r in zip(flagged, rows, strict=True))
    assert true_positive / max(1, sum(flagged)) >= 0.9  # a false alarm costs a review
    assert true_positive / sum(r["conflict"] for r in rows) >= 0.75


def test_eval_script_smoke(tmp_path: Path) -> None:
    """scripts/eval/contradictions.py on a three-pair slice prints its JSON line."""
    import subprocess
    import sys

    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(
        "\n".join(
            json.dumps(row)
            for row in [
                {"a": "enable the cache", "b": "disable the cache", "conflict": True},
                {"a": "the job timeout is 30s", "b": "the job timeout is 90s", "conflict": True},
                {"a": "use logging instead of print", "b": "don't use print", "conflict": False},
            ]
        )
    )  # fmt: skip
    script = Path(__file__).resolve().parents[2] / "scripts" / "eval" / "contradictions.py"
    done = subprocess.run(
        [sys.executable, str(script), str(pairs), "--json", "--no-model"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["items"] == 3 and summary["conflicts"] == 2 and summary["cosine"] is False
    assert summary["rows"]["engram"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "flagged": 2}
    assert set(summary["rows"]["negation_only"]) == {"precision", "recall", "f1", "flagged"}
