"""The plugin's hooks inside a live Claude Code session: the real CLI, a stand-in model.

``claude -p`` (the real Claude Code 2.1.197 from scripts/setup-e2e) runs with the plugin
installed as the README says (``claude plugin marketplace add`` this repository, ``claude
plugin install engram@engram``), HOME in a temporary folder and PATH as a desktop session
starts an agent: Engram is where ``pipx install .`` puts it (``~/.local/bin``, not on that
PATH) and bin/find-engram finds it there. Only the model is replaced:
``ANTHROPIC_BASE_URL`` points at :mod:`tests.agents.fake_anthropic`, which plays a scripted
conversation (Write a new file, Edit it, answer) and keeps every request Claude Code sent.
What reached the model is read from those requests, so this proves where Claude Code puts
each hook's ``additionalContext`` (docs/agents.md, "A live Claude Code session"):

- SessionStart and UserPromptSubmit: a ``system`` message after the prompt, in the first
  request;
- PreToolUse: a ``<system-reminder>`` next to the tool's result, in the request after the
  tool call: the hook runs before the tool, but the model reads it with the result.

Before (issue 16): the hooks had only been run by our tests with the commands from
hooks.json; no Claude Code had ever run them ("needs a login").
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

from tests.agents.fake_anthropic import FakeAnthropic, Recorded, Text, ToolCall, request_text
from tests.agents.test_claude_cli import claude_binary

from engram.agents.deferred import wait_for_queued
from engram.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
ENGRAM = str(Path(sys.executable).absolute().parent / "engram")
PROMPT = "Fix the session key in src/keys.py so tenants do not share it"
# the model must see each memory, but no hook may spend the machine's model on it
QUIET = {"ENGRAM_EMBED__MODEL": "none"}
CLAUDE_ARGS = ("--permission-mode", "acceptEdits", "--output-format", "json")


def remember(project: Path, *args: str) -> str:
    done = subprocess.run(
        [ENGRAM, "remember", "--workspace", str(project), *args],
        capture_output=True,
        text=True,
        env={**os.environ, **QUIET},
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def drain_running(project: Path) -> bool:
    """Whether the background observer drain (started by Stop/SessionEnd) still runs: it
    holds .engram/agents/observe.lock from before it starts until it exits (engram.jobs)."""
    wait_for_queued(Workspace(project))  # the Stop hook starts it after it answered
    lock = project / ".engram" / "agents" / "observe.lock"
    if not lock.exists():
        return False
    fd = os.open(lock, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False
    except BlockingIOError:
        return True
    finally:
        os.close(fd)


def hook_context(request: Recorded, event: str) -> str:
    """What ``event``'s hooks added to the model's context in ``request``, as Claude Code
    labels it ("<Event>[:Tool] hook additional context: ...")."""
    text = request_text(request)
    marker = f"{event} hook additional context:"
    return "\n".join(part.split("</system-reminder>")[0] for part in text.split(marker)[1:])


def last_user_message(request: Recorded) -> list[dict[str, object]]:
    message = [m for m in request.body["messages"] if m.get("role") == "user"][-1]
    content = message["content"]
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def test_hooks_reach_the_model_in_a_live_claude_code_session(tmp_path: Path) -> None:
    claude = claude_binary()
    project = tmp_path / "project"
    home = tmp_path / "home"
    (project / "src").mkdir(parents=True)
    home.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    (project / "src/keys.py").write_text('def session_key(user):\n    return f"sess:{user.id}"\n')
    decision = remember(project, "--type", "decision", "all timestamps in this repository are UTC")
    gotcha = ("--type", "gotcha", "--file")
    keys = remember(project, *gotcha, "src/keys.py", "session keys are shared by every tenant")
    # a file the agent is about to create, with two memories that contradict each other
    jobs = [
        remember(project, "--allow-missing", *gotcha, "src/jobs.py", f"The job timeout is {s}s.")
        for s in (30, 90)
    ]
    # the README install: `pipx install .` leaves `engram` in ~/.local/bin (a link into its own
    # venv), which is not on the agent's PATH; the plugin comes from this repository's marketplace
    local_bin = home / ".local" / "bin"
    local_bin.mkdir(parents=True)
    (local_bin / "engram").symlink_to(ENGRAM)

    jobs_py = str(project / "src/jobs.py")
    script = [
        ToolCall("Write", {"file_path": jobs_py, "content": "TIMEOUT = 30\n"}),
        ToolCall("Edit", {"file_path": jobs_py, "old_string": "= 30", "new_string": "= 45"}),
        Text("Done: the job timeout is set."),
    ]
    with FakeAnthropic(script) as api:
        env = {
            "HOME": str(home),
            "PATH": "/usr/bin:/bin",  # as a desktop session starts it: no venv, no ~/.local/bin
            "ANTHROPIC_BASE_URL": api.url,
            "ANTHROPIC_API_KEY": "sk-ant-fake-for-tests",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            # the suite's engine settings (tests/conftest.py: private runtime dir, short idle),
            # so no engine a hook or the plugin's servers start outlives the test
            **{k: v for k, v in os.environ.items() if k.startswith("ENGRAM_")},
            **QUIET,
        }
        for step in (("marketplace", "add", str(ROOT)), ("install", "engram@engram")):
            subprocess.run(
                [str(claude), "plugin", *step],
                env=env,
                cwd=project,
                capture_output=True,
                check=True,
                timeout=300,
            )
        done = subprocess.run(
            [str(claude), "-p", PROMPT, *CLAUDE_ARGS],
            env=env,
            cwd=project,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        result = json.loads(done.stdout)
        assert result["result"] == "Done: the job timeout is set.", result
        assert (project / "src/jobs.py").read_text() == "TIMEOUT = 45\n"  # both tools ran
        first, after_write, after_edit = api.main_requests  # the script, and nothing more

    # SessionStart: the project-wide memory is in the model's context from the first request
    started = hook_context(first, "SessionStart")
    assert "all timestamps in this repository are UTC" in started and decision in started
    # UserPromptSubmit: the gotcha of the file the prompt names, not the other file's
    prompted = hook_context(first, "UserPromptSubmit")
    assert "session keys are shared by every tenant" in prompted and keys in prompted
    assert "job timeout" not in request_text(first)

    # PreToolUse(Write): the new file's memories, next to the Write's result, both sides of
    # the conflict together and marked
    blocks = last_user_message(after_write)
    assert [b["type"] for b in blocks][:1] == ["tool_result"]
    reminder = "\n".join(str(b.get("text", "")) for b in blocks if b["type"] == "text")
    assert "PreToolUse:Write hook additional context" in reminder, blocks
    assert "Engram memory for src/jobs.py (read before changing it)" in reminder
    for mine, other in ((jobs[0], jobs[1]), (jobs[1], jobs[0])):
        line = next(x for x in reminder.splitlines() if x.endswith(f"[{mine}]"))
        assert f"CONFLICT with {other}" in line, reminder
    # once per session: PreToolUse(Edit) and PostToolUse(Write/Edit) add nothing again
    assert request_text(after_edit).count("The job timeout is 90s.") == 2  # text + the mark
    assert "hook additional context" not in json.dumps(last_user_message(after_edit))

    # PostToolUse and Stop: the observer got the session (drained in the background)
    deadline = time.monotonic() + 120
    while drain_running(project) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not drain_running(project)
    session = json.loads(first.body["metadata"]["user_id"])["session_id"]
    # an ended session's events move to observer/done/ (the observer's own layout)
    observer = project / ".engram" / "observer"
    recorded = next(
        p for p in (observer / "done" / f"{session}.jsonl", observer / f"{session}.jsonl")
        if p.exists()
    )  # fmt: skip
    events = [json.loads(x)["event"] for x in recorded.read_text().splitlines() if '"event"' in x]
    assert [(e["kind"], e.get("tool"), e.get("files")) for e in events if "tool" in e] == [
        ("tool_call", "Write", ["src/jobs.py"]),  # PreToolUse
        ("tool_result", "Write", ["src/jobs.py"]),  # PostToolUse
        ("tool_call", "Edit", ["src/jobs.py"]),
        ("tool_result", "Edit", ["src/jobs.py"]),
    ]
    kinds = [e["kind"] for e in events]
    assert kinds[0] == "session_start" and "turn_end" in kinds, kinds
    # SessionEnd comes a moment after Stop: when the drain Stop started has already taken the
    # inbox, SessionEnd's payload waits in it for the session's next drain (engram.jobs starts
    # one drain at a time), so it is in one place or the other
    queued = project / ".engram" / "agents" / "inbox" / f"{session}.jsonl"
    assert "session_end" in kinds or '"SessionEnd"' in (
        queued.read_text() if queued.exists() else ""
    ), kinds
    assert (events[1]["kind"], events[1]["text"]) == ("reasoning", PROMPT)  # UserPromptSubmit
    ledger = json.loads((project / ".engram/agents/sessions" / f"{session}.json").read_text())
    assert set(ledger["handed"]) == {decision, keys, *jobs}
    log = project / ".engram" / "logs" / "hooks.log"
    assert "hook failed" not in (log.read_text() if log.exists() else "")
