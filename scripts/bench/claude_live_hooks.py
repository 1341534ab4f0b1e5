"""Wall time of each Engram hook as a live Claude Code session runs it.

The session of tests/agents/test_claude_live.py (the real ``claude -p`` from
scripts/setup-e2e, the plugin by ``--plugin-dir``, the model replaced by the loopback stand-in
tests/agents/fake_anthropic.py), run ``--runs`` times in one workspace, each a new session. The
plugin is copied with its hook command wrapped: the wrapper notes the wall time of the real
``hooks/engram-hook`` (find-engram, then ``engram hook claude-code``: the whole process Claude
Code waits for) per event. The stand-in notes when each model request came, so the gaps between
requests (hooks and tool together) and the time to the first request (start-up, SessionStart,
UserPromptSubmit) are reported too. Prints one JSON object as its last line:
``{"runs", "hooks": {event: {"n", "p50_ms", "p95_ms", "max_ms", "first_ms", "ms"}}, "direct": {...},
"session": {...}}``; ``direct`` is the same hook command with the same payload started from a
plain process after the sessions (no Claude Code, no MCP or LSP server starting), the baseline
on the same machine at the same load.

    python scripts/bench/claude_live_hooks.py --runs 5

``--engram`` and ``--plugin`` measure another installation and plugin (a before/after
comparison in one session: run it A-B-B-A, each side with its own engram and plugin).
"""

from __future__ import annotations

import argparse
import fcntl
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.agents.fake_anthropic import FakeAnthropic, Text, ToolCall  # noqa: E402

from engram.agents.deferred import wait_for_queued  # noqa: E402
from engram.workspace import Workspace  # noqa: E402

CLAUDE_VERSION = "2.1.197"  # scripts/setup-e2e installs this one
ENGRAM = str(Path(sys.executable).absolute().parent / "engram")
PLUGIN = ROOT / "clients" / "claude-code"
QUIET = {"ENGRAM_EMBED__MODEL": "none"}
PROMPT = "Fix the session key in src/keys.py"
CLAUDE_ARGS = ("--permission-mode", "acceptEdits", "--output-format", "json")

WRAPPER = """#!/bin/sh
# bench wrapper: the real hook, timed (scripts/bench/claude_live_hooks.py)
payload=$(mktemp)
cat >"$payload"
start=$(date +%s%N)
"$(dirname "$0")/engram-hook.real" <"$payload"
end=$(date +%s%N)
event=$(sed -n 's/.*"hook_event_name": *"\\([A-Za-z]*\\)".*/\\1/p' "$payload")
tool=$(sed -n 's/.*"tool_name": *"\\([A-Za-z]*\\)".*/\\1/p' "$payload")
echo "$event${tool:+:$tool} $start $end" >>"$ENGRAM_BENCH_HOOK_TIMES"
mv "$payload" "$ENGRAM_BENCH_HOOK_TIMES.$event${tool:+:$tool}.json"
exit 0
"""


def claude_binary() -> Path:
    cache = os.environ.get("ENGRAM_E2E_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "engram-e2e"
    )
    binary = Path(cache) / f"claude-code-{CLAUDE_VERSION}" / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        raise SystemExit(f"{binary} is missing: run scripts/setup-e2e")
    return binary


def remember(project: Path, *args: str) -> None:
    """``engram remember`` with the engram under test (``--engram``)."""
    subprocess.run(
        [ENGRAM, "remember", "--workspace", str(project), *args],
        capture_output=True,
        env={**os.environ, **QUIET},
        check=True,
    )


def seed(base: Path) -> tuple[Path, Path, Path]:
    """The workspace, HOME and wrapped plugin of one bench run."""
    from engram.agents.setup import apply_setup, plan_setup

    project, home, plugin = base / "project", base / "home", base / "plugin"
    (project / "src").mkdir(parents=True)
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src/keys.py").write_text('def session_key(user):\n    return f"sess:{user.id}"\n')
    remember(project, "--type", "decision", "all timestamps in this repository are UTC")
    remember(
        project, "--type", "gotcha", "--file", "src/keys.py", "session keys are shared by tenants"
    )
    for seconds in (30, 90):
        remember(
            project, "--type", "gotcha", "--allow-missing", "--file", "src/jobs.py",
            f"The job timeout is {seconds}s.",
        )  # fmt: skip
    apply_setup(plan_setup("claude-code", project, home=home, command=[ENGRAM], plugin=True))
    shutil.copytree(PLUGIN, plugin)
    hook = plugin / "hooks" / "engram-hook"
    hook.rename(hook.with_name("engram-hook.real"))
    hook.write_text(WRAPPER)
    hook.chmod(0o755)
    return project, home, plugin


def one_session(
    claude: Path, project: Path, home: Path, plugin: Path, times: Path
) -> dict[str, float]:
    jobs = str(project / "src/jobs.py")
    (project / "src/jobs.py").unlink(missing_ok=True)
    script = [
        ToolCall("Write", {"file_path": jobs, "content": "TIMEOUT = 30\n"}),
        ToolCall("Edit", {"file_path": jobs, "old_string": "= 30", "new_string": "= 45"}),
        Text("Done."),
    ]
    with FakeAnthropic(script) as api:
        env = {
            "HOME": str(home),
            "PATH": "/usr/bin:/bin",
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-for-bench",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "ENGRAM_BENCH_HOOK_TIMES": str(times),
            **{k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")},
            **QUIET,
        }
        started = time.monotonic()
        done = subprocess.run(
            [str(claude), "-p", PROMPT, "--plugin-dir", str(plugin), *CLAUDE_ARGS],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        total = time.monotonic() - started
        if done.returncode != 0:
            raise SystemExit(f"claude failed: {done.stdout}{done.stderr}")
        main = api.main_requests
        if len(main) != len(script):
            raise SystemExit(f"expected {len(script)} model requests, got {len(main)}")
    return {
        "to_first_request_ms": (main[0].received - started) * 1000,
        "after_write_gap_ms": (main[1].received - main[0].answered) * 1000,
        "after_edit_gap_ms": (main[2].received - main[1].answered) * 1000,
        "session_ms": total * 1000,
    }


def direct_times(plugin: Path, home: Path, project: Path, payload: Path, runs: int) -> list[float]:
    """The same hook command with the same payload, started from a plain process (no Claude
    Code running): the baseline the live figures compare to, on the same machine and load."""
    body = json.loads(payload.read_text())
    env = {
        "HOME": str(home),
        "PATH": "/usr/bin:/bin",
        "CLAUDE_PLUGIN_ROOT": str(plugin),
        **{k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")},
        **QUIET,
    }
    out: list[float] = []
    for run in range(runs):
        body["session_id"] = f"bench-direct-{run}"  # a fresh session: nothing handed yet
        started = time.perf_counter()
        subprocess.run(
            [str(plugin / "hooks" / "engram-hook.real")],
            input=json.dumps(body),
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            check=True,
        )
        out.append((time.perf_counter() - started) * 1000)
    return out


def wait_for_drain(project: Path, timeout: float = 120.0) -> None:
    """Let the observer drain the last Stop/SessionEnd started finish before the workspace is
    removed (it runs detached, holding .engram/agents/observe.lock)."""
    agents = project / ".engram" / "agents"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        queued = any((agents / "inbox").glob("*.jsonl")) or any(
            (agents / "inbox").glob("*.draining")
        )
        lock = agents / "observe.lock"
        if not queued and lock.exists():
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            finally:
                os.close(fd)
        elif not queued:
            return
        time.sleep(0.5)


def stop_engines(runtime: Path) -> None:
    """End the workspace engines started in ``runtime`` (their pid files name them)."""
    for pid_file in runtime.glob("*.pid"):
        try:
            pid = int(json.loads(pid_file.read_text(encoding="utf-8"))["pid"])
            os.kill(pid, signal.SIGTERM)
        except (OSError, ValueError, KeyError, TypeError):
            continue


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile by nearest rank (the p95 of up to 20 values is the largest)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def summary(values: list[float]) -> dict[str, float]:
    return {
        "n": len(values),
        "first_ms": round(values[0], 1),
        "p50_ms": round(statistics.median(values), 1),
        "p95_ms": round(percentile(values, 0.95), 1),
        "max_ms": round(max(values), 1),
        "ms": [round(v, 1) for v in values],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--engram", help="the engram executable to measure (default: this venv's)")
    parser.add_argument("--plugin", help="the plugin folder to copy (default: clients/claude-code)")
    args = parser.parse_args()
    global ENGRAM, PLUGIN
    ENGRAM = args.engram or ENGRAM
    PLUGIN = Path(args.plugin) if args.plugin else PLUGIN
    claude = claude_binary()
    # a hook's deferred child or a drain may still write when the run ends (see below)
    with tempfile.TemporaryDirectory(
        prefix="engram-live-hooks-", ignore_cleanup_errors=True
    ) as tmp:
        base = Path(tmp)
        own_runtime = not os.environ.get("ENGRAM_RUNTIME_DIR")
        if own_runtime:  # engines this run starts live here, and end with it
            (base / "run").mkdir(mode=0o700)
            os.environ["ENGRAM_RUNTIME_DIR"] = str(base / "run")
            os.environ.setdefault("ENGRAM_ENGINE_IDLE_SECONDS", "20")
        project, home, plugin = seed(base)
        times = base / "hook-times.txt"
        sessions = [one_session(claude, project, home, plugin, times) for _ in range(args.runs)]
        hooks: dict[str, list[float]] = {}
        for line in times.read_text().splitlines():
            event, start, end = line.split()
            hooks.setdefault(event, []).append((int(end) - int(start)) / 1e6)
        wait_for_queued(Workspace(project))  # hooks queue their payload after they answer
        wait_for_drain(project)
        # Stop/SessionEnd would start a drain per run: the baseline covers the answering hooks
        direct = {
            event: direct_times(
                plugin, home, project, Path(f"{times}.{event}.json"), max(args.runs, 3)
            )
            for event in sorted(hooks)
            if not event.startswith(("Stop", "SessionEnd"))
        }
        wait_for_queued(Workspace(project))
        if own_runtime:
            stop_engines(base / "run")
    result = {
        "runs": args.runs,
        "claude_code": CLAUDE_VERSION,
        "hooks": {event: summary(values) for event, values in sorted(hooks.items())},
        "direct": {event: summary(values) for event, values in direct.items()},
        "session": {key: summary([s[key] for s in sessions]) for key in sessions[0] if sessions},
    }
    for event, row in result["hooks"].items():
        base = result["direct"].get(event)
        alone = f"  (alone p50 {base['p50_ms']:7.1f} p95 {base['p95_ms']:7.1f})" if base else ""
        print(
            f"{event:20} live p50 {row['p50_ms']:7.1f} ms  p95 {row['p95_ms']:7.1f} ms"
            f"  max {row['max_ms']:7.1f} ms{alone}"
        )
    print(json.dumps(result))


if __name__ == "__main__":
    main()
