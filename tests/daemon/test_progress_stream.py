"""A command the workspace engine runs streams its stderr to the caller as it is written
(issue 16: with the engine, ``engram index`` printed its progress only when it ended)."""

from __future__ import annotations

import subprocess
import time

from .conftest import ENGRAM, EngineEnv


def test_index_progress_reaches_the_caller_while_the_engine_works(engine_env: EngineEnv) -> None:
    pkg = engine_env.root / "pkg"
    pkg.mkdir()
    for n in range(40):
        (pkg / f"mod{n}.py").write_text(
            f"import os\n\n\ndef f{n}(x):\n    return os.path.join(x, '{n}')\n", encoding="utf-8"
        )
    env = {**engine_env.env, "ENGRAM_PROGRESS_SECONDS": "0"}
    warm = engine_env.run("--verbose", "stats", env=env)  # starts the engine
    assert "ran in the engine" in warm.err, warm.err
    proc = subprocess.Popen(
        [str(ENGRAM), "--verbose", "index", "--no-embed"],
        cwd=engine_env.root,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        still_running = proc.poll() is None
        rest = proc.stderr.read()
        proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            time.sleep(0.1)
    assert first.startswith("engram: indexing code: "), first + rest
    # the first line came while the command was still at work, not with its reply
    assert still_running, first + rest
    assert proc.returncode == 0, rest
    assert "engram: indexing code: done, 40 in " in rest
    assert "ran in the engine" in rest  # it did run there, not in-process
