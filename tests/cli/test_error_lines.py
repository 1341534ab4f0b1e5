"""Error lines the CLI prints for library failures, and the light import of the commands."""

from __future__ import annotations

import subprocess
import sys

from engram.cli.main import MAX_ERROR_CHARS, one_line_error

LANCE = (
    "cannot read the Engram store at /w/.engram/memories.lance (lance error: LanceError(IO): "
    "Generic N/A error: Wrapped error: Not found: Wrapped error: Not found: "
    "/w/.engram/memories.lance/data/0100101011011011111110004423fd4f6e84020c695392d55e.lance, "
    "/home/runner/.cargo/registry/src/index.crates.io-6f17d22bba15001f/lance-io-0.21.0/src/"
    "object_store.rs:512:31); move it aside and re-import an export (`engram import`), "
    "or delete it to start empty"
)


def test_rust_paths_and_wrapper_noise_are_dropped() -> None:
    line = one_line_error(LANCE)
    assert ".rs:" not in line and ".cargo" not in line and "Wrapped error" not in line
    assert line.startswith("cannot read the Engram store at /w/.engram/memories.lance (Not found:")
    assert line.endswith("or delete it to start empty")  # what to do survives


def test_long_causes_are_shortened_but_the_advice_kept() -> None:
    message = "cannot open the store (" + "x" * 2000 + "); delete it to start empty"
    line = one_line_error(message)
    assert len(line) <= MAX_ERROR_CHARS and line.endswith("); delete it to start empty")
    assert "\n" not in one_line_error("first\nsecond line")


def test_commands_module_does_not_import_the_engine() -> None:
    code = "import sys, engram.cli.commands; print('engram.app.engine' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
