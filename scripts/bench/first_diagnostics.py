#!/usr/bin/env python3
"""A freshly started editor session: spawn -> first diagnostics of an open file.

An agent's client (OpenCode, Crush, Copilot CLI) starts ``engram serve``, sends
``initialize`` at once, then ``initialized``, opens a file and waits a short while for
``textDocument/publishDiagnostics`` (OpenCode's ``debug lsp diagnostics`` gives up after a
few seconds). This drives the server over raw stdio JSON-RPC as such a client does (no
``clientInfo``, the agent's ``initializationOptions``, ``workspace/configuration`` answered
with nothing) and times, from the spawn:

* ``initialize``'s reply;
* the first ``publishDiagnostics`` of the opened file that holds diagnostics.

Each of ``--runs`` sessions is a new server process; ``--engine warm`` leaves the workspace
engine running between them (a front end started it before), ``cold`` stops it before
each (the first editor of the day), ``off`` serves in-process. The workspace is
``--keep DIR``'s store of ``scripts/bench/agent_calls.py`` (built there when missing).

Usage: scripts/bench/first_diagnostics.py --keep DIR [--runs 10] [--engine warm|cold|off]
                                          [--server DIR] [--embed-model default|none]
Last stdout line: one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import selectors
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FILE = "src/pkg0/module_0.py"


def frame(message: dict[str, Any]) -> bytes:
    body = json.dumps(message).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


class Reader:
    """Reads framed JSON-RPC messages from the server's stdout with a deadline."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.stream = proc.stdout
        self.buffer = b""
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.stream, selectors.EVENT_READ)

    def next(self, deadline: float) -> dict[str, Any] | None:
        while True:
            head, sep, rest = self.buffer.partition(b"\r\n\r\n")
            if sep:
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                if len(rest) >= length:
                    self.buffer = rest[length:]
                    message: dict[str, Any] = json.loads(rest[:length])
                    return message
            left = deadline - time.monotonic()
            if left <= 0 or not self.selector.select(left):
                return None
            chunk = os.read(self.stream.fileno(), 65536)
            if not chunk:
                return None
            self.buffer += chunk


def session(root: Path, env: dict[str, str], timeout: float) -> dict[str, float | None]:
    uri = (root / FILE).as_uri()
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "engram", "serve"],
        cwd=root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None
    reader = Reader(proc)

    def send(message: dict[str, Any]) -> None:
        assert proc.stdin is not None
        proc.stdin.write(frame({"jsonrpc": "2.0", **message}))
        proc.stdin.flush()

    out: dict[str, float | None] = {"initialize_ms": None, "diagnostics_ms": None}
    deadline = started + timeout
    try:
        send(
            {
                "id": 1,
                "method": "initialize",
                "params": {
                    "processId": os.getpid(),
                    "rootUri": root.as_uri(),
                    "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}],
                    "capabilities": {
                        "workspace": {"configuration": True},
                        "textDocument": {"publishDiagnostics": {}},
                    },
                    "initializationOptions": {
                        "agentSeverity": {"gotcha": "error", "dead_end": "error"}
                    },
                },
            }
        )
        while out["diagnostics_ms"] is None:
            message = reader.next(deadline)
            if message is None:
                break
            now = (time.monotonic() - started) * 1000
            if message.get("id") == 1 and "method" not in message:
                out["initialize_ms"] = round(now, 1)
                send({"method": "initialized", "params": {}})
                text = (root / FILE).read_text()
                send(
                    {
                        "method": "textDocument/didOpen",
                        "params": {
                            "textDocument": {
                                "uri": uri,
                                "languageId": "python",
                                "version": 1,
                                "text": text,
                            }
                        },
                    }
                )
            elif "method" in message and "id" in message:  # a request: answer it emptily
                result: Any = None
                if message["method"] == "workspace/configuration":
                    result = [None for _ in message["params"]["items"]]
                send({"id": message["id"], "result": result})
            elif message.get("method") == "textDocument/publishDiagnostics":
                params = message["params"]
                if params["uri"] == uri and params["diagnostics"]:
                    out["diagnostics_ms"] = round(now, 1)
    finally:
        try:
            send({"id": 2, "method": "shutdown"})
            send({"method": "exit"})
            proc.wait(timeout=10)
        except Exception:
            proc.kill()
            proc.wait()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keep", required=True, help="agent_calls.py's --keep folder")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--engine", choices=("warm", "cold", "off"), default="warm")
    parser.add_argument("--server", help="the server/ folder of the Engram code to measure")
    parser.add_argument("--timeout", type=float, default=30.0)
    parser.add_argument("--embed-model", default="default", help="as agent_calls.py built it")
    args = parser.parse_args()
    server = Path(args.server).resolve() if args.server else ROOT / "server"
    base = Path(args.keep)
    root = base / "repo"
    if not (root / ".engram").is_dir():
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "scripts/bench/agent_calls.py"),
                *("--keep", str(base), "--runs", "1", "--server", str(server)),
                *("--embed-model", args.embed_model),
            ],
            check=True,
            capture_output=True,
        )
    env = {
        k: v
        for k, v in os.environ.items()
        # bytecode is written as an install's is: without it every start compiles Engram
        if not k.startswith("ENGRAM_")
        and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONDONTWRITEBYTECODE")
    }
    env |= {
        "PYTHONPATH": str(server),
        "ENGRAM_RUNTIME_DIR": str(base / "run"),
        "HOME": str(base / "home"),
        "ENGRAM_EMBED__MODEL": args.embed_model,
        "ENGRAM_ENGINE": "off" if args.engine == "off" else "auto",
    }

    def stop() -> None:
        subprocess.run(
            [sys.executable, "-m", "engram", "stop", "--workspace", str(root)],
            env=env,
            capture_output=True,
            check=False,
        )

    stop()
    rows = []
    try:
        for _ in range(args.runs):
            if args.engine == "cold":
                stop()
            rows.append(session(root, env, args.timeout))
    finally:
        stop()
    loadavg = " ".join(Path("/proc/loadavg").read_text().split()[:3])
    result: dict[str, Any] = {
        "benchmark": "first_diagnostics",
        "server": str(server),
        "engine": args.engine,
        "runs": args.runs,
        "load": loadavg,
    }
    for key in ("initialize_ms", "diagnostics_ms"):
        values = sorted(v for r in rows if (v := r[key]) is not None)
        result[key] = {
            "p50": round(statistics.median(values), 1) if values else None,
            "max": values[-1] if values else None,
            "missing": len(rows) - len(values),
        }
    result["each"] = rows
    print(json.dumps(result))


if __name__ == "__main__":
    main()
