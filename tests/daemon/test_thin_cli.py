"""What a forwarded ``engram`` command loads on its way to the engine (docs/engine.md,
"The CLI"): the entry point, the forwarder, the client, the address rule and the wire
format, on a handful of standard-library modules. Module sets only, never times: the
figures are printed by scripts/bench/cli_start.py and scripts/bench/frontends.py.
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.daemon.conftest import EngineEnv

#: Runs ``engram ARGV`` like the console script and reports the modules it held at the end.
PROBE = """
import json, sys
from engram.cli.entry import main
code = main(json.loads(sys.argv[1]))
sys.stderr.write("MODULES " + json.dumps(sorted(sys.modules)) + "\\n")
raise SystemExit(code)
"""

#: Everything of Engram a forwarded command may import.
THIN = {
    "engram",
    "engram.cli",
    "engram.cli.entry",
    "engram.daemon",
    "engram.daemon.address",
    "engram.daemon.client",
    "engram.daemon.forward",
    "engram.daemon.wire",
    "engram.gitroot",
}
#: Standard-library modules the forward path keeps away from: each costs milliseconds
#: (``hashlib`` loads OpenSSL, ``pathlib`` pulls ``urllib.parse`` and ``ipaddress``), and
#: the CLI's own machinery (``argparse``) runs in the engine.
NEVER = {
    "argparse",
    "base64",
    "hashlib",
    "pathlib",
    "subprocess",
    "tempfile",
    "threading",
    "typing",
    "filelock",
    "attrs",
    "cattrs",
    "numpy",
    "lancedb",
}


def probe(engine_env: EngineEnv, argv: list[str], stdin: str | None = None) -> tuple[str, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(argv)],
        cwd=engine_env.root,
        env=engine_env.env,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    lines = done.stderr.splitlines()
    found = [line for line in lines if line.startswith("MODULES ")]
    assert done.returncode == 0 and found, done.stderr
    return done.stdout, set(json.loads(found[-1].removeprefix("MODULES ")))


def test_a_forwarded_search_and_remember_load_only_the_thin_client(engine_env: EngineEnv) -> None:
    taught = engine_env.run("remember", "amounts are integer cents, never floats")
    assert taught.code == 0, taught.err
    pids = engine_env.engine_pids()
    assert len(pids) == 1  # the first command started the engine; the probes forward to it

    out, modules = probe(engine_env, ["search", "integer cents"])
    assert "integer cents" in out
    assert {m for m in modules if m.startswith("engram")} == THIN
    assert not NEVER & modules, sorted(NEVER & modules)

    out, modules = probe(engine_env, ["remember", "-"], stdin="uploads retry three times\n")
    assert out.strip().startswith("m-")
    assert {m for m in modules if m.startswith("engram")} == THIN
    assert not NEVER & modules, sorted(NEVER & modules)

    assert engine_env.engine_pids() == pids
    listed = engine_env.run("search", "uploads retry")
    assert "uploads retry three times" in listed.out
