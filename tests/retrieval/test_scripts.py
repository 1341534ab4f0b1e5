"""Smoke runs of scripts/eval/locomo.py and scripts/bench/search.py on tiny slices."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(script: str, *args: str) -> dict[str, object]:
    proc = subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    last = proc.stdout.strip().splitlines()[-1]
    result: dict[str, object] = json.loads(last)
    return result


def tiny_locomo(folder: Path) -> None:
    turns_1 = [
        ("Ana", "I adopted a grey kitten called Miso last week."),
        ("Ben", "That's lovely! What made you pick a kitten?"),
        ("Ana", "My neighbour's cat had a litter and she needed homes for them."),
        ("Ben", "I have been training for the city marathon in October."),
    ]
    turns_2 = [
        ("Ana", "Miso knocked my pottery vase off the shelf yesterday."),
        ("Ben", "I finished the marathon in four hours and ten minutes!"),
        ("Ana", "Congratulations, that is a great time for a first race."),
    ]
    conv = {
        "speaker_a": "Ana",
        "speaker_b": "Ben",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns_1)
        ],
        "session_2_date_time": "10:00 am on 20 October, 2023",
        "session_2": [
            {"speaker": s, "dia_id": f"D2:{i + 1}", "text": t} for i, (s, t) in enumerate(turns_2)
        ],
        "qa": [
            {"question": "What is the name of Ana's kitten?", "evidence": ["D1:1"], "category": 1},
            {"question": "How long did Ben take to run the marathon?", "evidence": ["D2:2"]},
            {"question": "What did Miso break?", "evidence": ["D2:1; D1:1"], "category": 1},
            {"question": "Where did the kitten come from?", "evidence": ["D1:3"]},
            {"question": "A question without evidence", "evidence": []},
        ],
    }
    # a turn that shares a photo: the caption is all that says what the photo shows
    conv["session_2"].append(  # type: ignore[attr-defined]
        {
            "speaker": "Ben",
            "dia_id": "D2:4",
            "text": "Look at this!",
            "blip_caption": "a photo of a medal hanging on a lighthouse railing",
        }
    )
    conv["qa"].append(  # type: ignore[attr-defined]
        {"question": "Where did Ben hang his medal on 20 October, 2023?", "evidence": ["D2:4"]}
    )
    (folder / "1.json").write_text(json.dumps(conv), encoding="utf-8")


def test_locomo_smoke(tmp_path: Path) -> None:
    data = tmp_path / "locomo-tiny"
    data.mkdir()
    tiny_locomo(data)
    result = run(
        "scripts/eval/locomo.py",
        "--data",
        str(data),
        "--json",
        "--limit-questions",
        "10",
        "--cache",
        str(tmp_path / "cache.sqlite"),
        "--dataset-name",
        "locomo-dev",
    )
    assert result["dataset"] == "locomo-dev"
    assert result["items"] == 5 and result["skipped_without_evidence"] == 1
    assert result["image_captions"] is True
    rows = result["rows"]
    assert isinstance(rows, dict) and set(rows) == {"engram", "bm25", "dense"}
    for row in rows.values():
        assert set(row) >= {"recall@5", "recall@10", "mrr"}
        assert 0.0 <= row["recall@5"] <= row["recall@10"] <= 1.0
    # eight short turns: everything is in the top 10; the photo's turn is found by its
    # caption ("medal", "lighthouse") and the date, so it comes first for BM25 too
    assert rows["engram"]["recall@10"] == 1.0
    text_only = run(
        "scripts/eval/locomo.py",
        "--data",
        str(data),
        "--json",
        "--no-captions",
        "--cache",
        str(tmp_path / "cache.sqlite"),
    )
    assert text_only["image_captions"] is False
    assert text_only["rows"]["bm25"]["mrr"] < rows["bm25"]["mrr"]  # type: ignore[index]


def test_search_bench_smoke() -> None:
    result = run("scripts/bench/search.py", "--sizes", "200", "--queries", "10")
    figures = result["sizes"]["200"]  # type: ignore[index]
    methods = ("retriever", "retriever_no_rerank", "store_vector", "store_keyword", "numpy_exact")
    for method in (*methods, "retriever_dated_day", "retriever_dated_month"):
        assert figures[method]["p50_ms"] <= figures[method]["p95_ms"]
    assert figures["first_dated_ms"] > 0
    assert result["largest"]["memories"] == 200  # type: ignore[index]


def test_search_bench_end_to_end_smoke() -> None:
    """``--embed`` times the real model on every query, next to NumPy that embeds too."""
    result = run("scripts/bench/search.py", "--sizes", "200", "--queries", "5", "--embed")
    figures = result["sizes"]["200"]  # type: ignore[index]
    for method in ("retriever_e2e", "retriever_dated_day_e2e", "retriever_dated_month_e2e"):
        assert 0 < figures[method]["p50_ms"] <= figures[method]["p95_ms"]
    assert figures["numpy_exact_e2e"]["p50_ms"] > 0
    largest = result["largest"]  # type: ignore[index]
    assert largest["ratio_e2e"] == figures["retriever_e2e_vs_numpy_e2e_p95"]
    assert largest["dated_day_e2e_p95_ms"] == figures["retriever_dated_day_e2e"]["p95_ms"]


def test_locomo_runs_the_split_it_is_given(tmp_path: Path) -> None:
    """``--queries`` picks conversations and questions; each conversation is a fold."""
    data = tmp_path / "locomo-tiny"
    data.mkdir()
    tiny_locomo(data)
    chosen = tmp_path / "split.json"
    chosen.write_text(
        json.dumps([{"conversation": "1", "question": "What is the name of Ana's kitten?"}])
    )
    result = run(
        "scripts/eval/locomo.py", "--data", str(data), "--json", "--queries", str(chosen),
        "--cache", str(tmp_path / "cache.sqlite"),
    )  # fmt: skip
    assert result["items"] == 1 and set(result["folds"]) == {"1"}
    assert result["fold_mean"]["engram"]["recall@10"] == result["rows"]["engram"]["recall@10"]
    assert result["fold_sd"]["engram"]["recall@10"] == 0.0
