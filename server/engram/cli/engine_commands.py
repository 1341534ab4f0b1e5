"""``engram status``, ``engram stop`` and the hidden ``engram engine`` (docs/engine.md).

``status`` and ``stop`` never start an engine: they ask the one that runs for the
workspace, if any. ``engine`` is the engine process itself, started by front ends.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable

from engram.errors import EngramError


def _root(args: argparse.Namespace) -> str:
    from pathlib import Path

    from engram.gitroot import find_workspace_root

    value = getattr(args, "workspace", None)
    if value:
        path = Path(value).expanduser()
        if not path.is_dir():
            raise EngramError(f"workspace {path} is not a directory")
        return str(path.resolve())
    return str(find_workspace_root(Path.cwd()))


def _mb(value: object) -> str:
    return f"{int(value) / 1_048_576:.0f} MB" if isinstance(value, int) else "?"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds}s"
    if seconds < 7200:
        return f"{seconds // 60}m {seconds % 60}s"
    return f"{seconds // 3600}h {seconds % 3600 // 60}m"


def cmd_status(args: argparse.Namespace) -> int:
    from engram.daemon.address import Address, NoRuntimeDir
    from engram.daemon.client import Connection, EngineUnavailable

    root = _root(args)
    try:
        connection = Connection.open(Address.for_workspace(root), "status")
    except (EngineUnavailable, NoRuntimeDir) as exc:
        from engram.daemon.client import stopping_engine

        pid = (
            stopping_engine(Address.for_workspace(root))
            if isinstance(exc, EngineUnavailable)
            else None
        )
        if pid is not None:  # it answers no more, but is still going away
            if args.json:
                print(json.dumps({"running": True, "state": "stopping", "pid": pid,
                                  "workspace": root}))  # fmt: skip
            else:
                print(f"the engine for {root} is stopping (pid {pid})")
            return 0
        if args.json:
            print(json.dumps({"running": False, "workspace": root, "reason": str(exc)}))
        else:
            print(f"no engine for {root} ({exc}); the next command starts one")
        return 0
    try:
        status = connection.call("status")
    finally:
        connection.close()
    if not isinstance(status, dict):
        raise EngramError("the engine answered status with nonsense")
    # this status request is one of the clients; people want the others
    clients = [
        c for c in status.get("clients", []) if c.get("id") != connection.info.get("client_id")
    ]
    status["clients"] = clients
    status["in_flight"] = max(0, int(status.get("in_flight") or 0) - 1)
    if args.json:
        print(json.dumps({"running": True, **status}, indent=2))
        return 0
    print(f"engine {status.get('version')} for {status.get('workspace')}")
    print(f"  pid       {status.get('pid')} ({status.get('state')})")
    print(f"  uptime    {_duration(float(status.get('uptime_seconds') or 0))}")
    print(f"  memory    {_mb(status.get('rss_bytes'))} (peak {_mb(status.get('peak_rss_bytes'))})")
    served = f"{status.get('requests')} served, {status.get('in_flight')} in flight"
    if status.get("deferred"):
        served += f", {status.get('deferred')} contradiction checks after writes"
    print(f"  requests  {served}")
    idle = float(status.get("idle_seconds") or 0)
    print(f"  idle exit after {_duration(idle)} without front ends")
    print(f"  log       {status.get('log')}")
    if clients:
        print(f"  clients   {len(clients)}")
        for client in clients:
            print(
                f"    {client.get('kind'):<8} pid {client.get('pid')}, "
                f"{_duration(float(client.get('connected_seconds') or 0))}, "
                f"{client.get('requests')} requests"
            )
    else:
        print("  clients   none")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    from engram.daemon.address import Address
    from engram.daemon.client import pid_alive, stop_engine, stopping_engine, wait_for_exit

    root = _root(args)
    address = Address.for_workspace(root)
    started = time.monotonic()
    pid = stop_engine(address, "engram stop", wait=15.0)
    if pid is None:
        pid = stopping_engine(address)  # told before (SIGTERM, another stop): wait for it
        if pid is None:
            print(f"no engine was running for {root}")
            return 0
        wait_for_exit(pid, 15.0)
    if pid_alive(pid):
        import signal

        os.kill(pid, signal.SIGTERM)
        sys.stderr.write(f"engram: engine {pid} did not stop in time; sent SIGTERM\n")
    print(f"stopped the engine for {root} (pid {pid}, {time.monotonic() - started:.1f}s)")
    return 0


def _warm() -> None:
    """Import what forwarded commands run (the declared use cases), while the engine warms."""
    import engram.cli.commands
    import engram.cli.declared  # noqa: F401


def run_engine_command(
    args: argparse.Namespace, cli_main: Callable[[list[str]], int] | None = None
) -> int:
    """``engine``, ``status`` or ``stop``. ``cli_main``: ``engram.cli.main.main``, which
    the engine runs for forwarded command lines (passed in: ``cli.main`` imports this)."""
    if args.command == "engine":
        if cli_main is None:
            raise EngramError("the engine needs the CLI's entry point")
        from engram.daemon.handlers import FrontEnds
        from engram.daemon.server import run_engine
        from engram.lsp.served import answer

        front_ends = FrontEnds(cli_main=cli_main, lsp_answer=answer, warm=_warm)
        return run_engine(_root(args), front_ends, getattr(args, "key", None))
    if args.command == "status":
        return cmd_status(args)
    return cmd_stop(args)
