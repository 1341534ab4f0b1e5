#!/usr/bin/env python3
"""What pinning a workspace MCP server's folder costs (engram.mcphub.pinned, stop 31).

``files_digest`` lists the files git tracks in the folder of each file a server's command
line names and hashes every byte of them; it runs at each ``engram mcp status`` and each
start of the hub. A script at the workspace root pins the whole repository, a script in a
folder of its own only that folder. Usage::

    scripts/bench/mcp_pinned_files.py REPO ROOT_SCRIPT FOLDER_SCRIPT [--runs N]

Both scripts must be tracked files of REPO (nothing is written). Prints one line per case
and, last, one JSON object: files pinned and the median seconds of N runs for each, with
the load average.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from engram.mcphub.pinned import files_digest, files_run
from engram.mcphub.sources import ServerSpec


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("repo", type=Path)
    parser.add_argument("root_script")
    parser.add_argument("folder_script")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    root = args.repo.resolve()
    out: dict[str, object] = {"load": Path("/proc/loadavg").read_text().split()[0]}
    for label, script in (("root", args.root_script), ("folder", args.folder_script)):
        if not (root / script).is_file():
            raise SystemExit(f"{script} is not a file of {root}")
        spec = ServerSpec("s", "stdio", "bench", "workspace", command="python3", args=(script,))
        times = []
        for _ in range(args.runs):
            start = time.perf_counter()
            files_digest(spec, root)
            times.append(time.perf_counter() - start)
        result = {
            "files": len(files_run(spec, root)),
            "seconds": round(statistics.median(times), 3),
        }
        out[label] = result
        print(label, script, result)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
