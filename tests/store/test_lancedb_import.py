"""``import_lancedb`` leaves the REST namespace client's API modules unimported until used.

Run in a fresh interpreter: the import state is the process's, and the suite has imported
lancedb long before this test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PROBE = """
import json, sys
from engram.store.lancedb_import import CLIENT_PACKAGE, import_lancedb

def api_modules():
    return sorted(m for m in sys.modules if m.startswith(CLIENT_PACKAGE + ".api."))

lancedb = import_lancedb()
before = api_modules()
db = lancedb.connect(sys.argv[1])
db.create_table("t", data=[{"x": 1}])
rows = db.open_table("t").to_arrow().num_rows
import lance_namespace_urllib3_client as client
print(json.dumps({
    "before": before, "rows": rows, "table_api": client.TableApi.__name__,
    "version": client.__version__, "after": len(api_modules()),
    "missing": not hasattr(client, "no_such_name"),
}))
"""


def test_lancedb_works_and_the_rest_client_loads_only_when_read(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "db")],
        capture_output=True, text=True, env=env, timeout=240, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    seen = json.loads(run.stdout.strip().splitlines()[-1])
    assert seen["before"] == []  # lancedb imported and a table written without them
    assert seen["rows"] == 1
    # the package's own __init__ ran on the first read of one of its names
    assert seen["table_api"] == "TableApi" and seen["version"] and seen["after"] >= 9
    assert seen["missing"]
