"""Wall time of Engram's agent hooks, cold and warm, next to a bare ``engram --help``.

Usage: ``python scripts/bench/agent_hooks.py [--memories 300] [--runs 15] [--events 60]``

Each hook is what Claude Code runs: a fresh ``python -m engram hook claude-code`` process with
the payload on stdin. The *cold* run points Python at a new, empty bytecode cache
(``PYTHONPYCACHEPREFIX``) so that every module, standard library included, is compiled from
source (worse than a fresh install, which ships compiled bytecode); *warm* runs use the normal
environment, as every later call in a session does. A replayed session then counts the tokens
injected per call and per session against the hook budgets. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "server"))

from engram.agents import Digest, HookBudget  # noqa: E402
from engram.agents.deferred import wait_for_queued  # noqa: E402
from engram.lifecycle.trust import mirror_rules  # noqa: E402
from engram.model import CodeAnchor, Memory, MemoryScope, MemoryType  # noqa: E402
from engram.tokens import estimate_tokens  # noqa: E402
from engram.workspace import Workspace  # noqa: E402

TYPES = [MemoryType.GOTCHA, MemoryType.DEAD_END, MemoryType.ERROR_PATTERN, MemoryType.DECISION]


def make_workspace(root: Path, n_memories: int, n_files: int, rng: random.Random) -> Workspace:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    files = [f"src/pkg{i % 7}/module_{i}.py" for i in range(n_files)]
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("\n".join(f"def f{j}():\n    return {j}" for j in range(40)) + "\n")
    ws = Workspace.open(root)
    memories = []
    for i in range(n_memories):
        rel = rng.choice(files)
        memories.append(
            Memory(
                f"Memory {i}: calling f{i % 40} in {rel} before init() silently returns stale "
                "data; initialise the cache first (learned while fixing a flaky test).",
                type=rng.choice(TYPES),
                anchors=[CodeAnchor(rel, f"f{i % 40}", (i % 40) * 2, (i % 40) * 2 + 1)],
                confidence=round(rng.uniform(0.5, 0.95), 2),
            )
        )
    memories += [
        Memory(
            f"Project decision {i}: use UTC timestamps everywhere",
            type=MemoryType.DECISION,
            scope=MemoryScope.GLOBAL,
        )
        for i in range(20)
    ]
    memories.append(Memory("Was halfway through the cache refactor", type=MemoryType.WORK_STATE))
    Digest(ws, rules=mirror_rules()).rebuild(memories)
    return ws


def run_hook(ws: Workspace, payload: dict[str, Any], env: dict[str, str]) -> tuple[float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "engram", "hook", "claude-code"],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        env=env,
        cwd=ws.root,
        check=False,
    )
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise SystemExit(f"hook failed: {done.stderr.strip()[:300]}")
    return elapsed, done.stdout


def wait_for_background(ws: Workspace, timeout_s: float = 120.0) -> None:
    """Until no background job of Engram's holds its lock in ``.engram/agents``."""
    import fcntl

    wait_for_queued(ws)  # a Stop hook starts its drain after it answered
    deadline = time.monotonic() + timeout_s
    for lock in (ws.engram_dir / "agents").glob("*.lock"):
        while time.monotonic() < deadline:
            fd = os.open(lock, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                time.sleep(0.2)
            finally:
                os.close(fd)


def timed(cmd: list[str], env: dict[str, str], cwd: Path) -> float:
    started = time.perf_counter()
    subprocess.run(cmd, capture_output=True, env=env, cwd=cwd, check=True)
    return (time.perf_counter() - started) * 1000


def summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {
        "p50_ms": round(statistics.median(ordered), 1),
        "p95_ms": round(p95, 1),
        "max_ms": round(ordered[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=300)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--events", type=int, default=60, help="tool calls in the replayed session")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    budget = HookBudget()

    with tempfile.TemporaryDirectory(prefix="engram-hookbench-") as tmp:
        ws = make_workspace(Path(tmp) / "ws", args.memories, args.files, rng)
        files = sorted({m.file for m in Digest(ws).by_type(["gotcha"], limit=1000) if m.file})
        # settings from the caller's environment stay out; the engine's own switches
        # (ENGRAM_ENGINE, its runtime directory) stay in, so a test run keeps its rules
        base_env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("ENGRAM_") or k.startswith(("ENGRAM_ENGINE", "ENGRAM_RUNTIME_DIR"))
        }
        base_env["PYTHONPATH"] = str(ROOT / "server")

        def payload(
            event: str, session: str, file: str | None = None, tool: str = "Read"
        ) -> dict[str, Any]:
            body: dict[str, Any] = {
                "session_id": session,
                "hook_event_name": event,
                "cwd": str(ws.root),
            }
            if file:
                body |= {"tool_name": tool, "tool_input": {"file_path": str(ws.root / file)}}
            return body

        def prompt(session: str) -> dict[str, Any]:
            # words of a stored memory, so the full-text search has real matches to rank
            text = rng.choice(Digest(ws).by_type(["gotcha"], limit=50)).content
            return payload("UserPromptSubmit", session) | {"prompt": f"please fix: {text}"}

        rows: dict[str, dict[str, float]] = {}
        cold: dict[str, float] = {}
        for name, make in (
            ("help", None),
            ("session_start", lambda s: payload("SessionStart", s)),
            ("user_prompt_submit", prompt),
            ("pre_tool_use_edit", lambda s: payload("PreToolUse", s, rng.choice(files), "Edit")),
            ("post_tool_use_read", lambda s: payload("PostToolUse", s, rng.choice(files))),
            ("stop", lambda s: payload("Stop", s)),
        ):
            samples = []
            for run in range(args.runs + 1):
                session = f"bench-{name}-{run}"
                with tempfile.TemporaryDirectory(prefix="pycache-") as cache:
                    env = {**base_env, "PYTHONPYCACHEPREFIX": cache} if run == 0 else base_env
                    if make is None:
                        ms = timed([sys.executable, "-m", "engram", "--help"], env, ws.root)
                    else:
                        ms, _ = run_hook(ws, make(session), env)
                if run == 0:
                    cold[name] = round(ms, 1)
                else:
                    samples.append(ms)
                # Stop hands the session to a background drain (seconds of CPU); in use the
                # next Stop comes a turn later, so let it finish instead of timing the hook
                # against it on a 2-core machine.
                wait_for_background(ws)
            rows[name] = {"cold_ms": cold[name], **summary(samples)}

        # a replayed session: start, then tool calls over a handful of files, then stop
        session = "replay"
        env = dict(base_env)
        _, out = run_hook(ws, payload("SessionStart", session), env)
        start_tokens = _tokens(out)
        per_call: list[int] = []
        for _ in range(args.events):
            _, out = run_hook(ws, payload("PostToolUse", session, rng.choice(files[:8])), env)
            per_call.append(_tokens(out))
        run_hook(ws, payload("Stop", session), env)
        wait_for_background(ws)
        # the Stop hook's drain ran in the workspace engine (docs/engine.md): end it
        subprocess.run(
            [sys.executable, "-m", "engram", "stop", "--workspace", str(ws.root)],
            env=base_env,
            capture_output=True,
            check=False,
        )

    result = {
        "benchmark": "agent_hooks",
        "memories": args.memories,
        "runs": args.runs,
        "rows": rows,
        "session": {
            "events": args.events,
            "session_start_tokens": start_tokens,
            "session_start_budget": budget.session_tokens,
            "max_tokens_per_call": max(per_call, default=0),
            "per_call_budget": budget.file_tokens,
            "calls_with_context": sum(1 for t in per_call if t),
            "total_tokens": start_tokens + sum(per_call),
            "over_budget_calls": sum(1 for t in per_call if t > budget.file_tokens)
            + int(start_tokens > budget.session_tokens),
        },
    }
    print(json.dumps(result))


def _tokens(stdout: str) -> int:
    if not stdout.strip():
        return 0
    context = json.loads(stdout)["hookSpecificOutput"]["additionalContext"]
    return estimate_tokens(context)


if __name__ == "__main__":
    main()
