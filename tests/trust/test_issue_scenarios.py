"""Issue 12's trust leaks, each reproduced with the real ``engram`` CLI (docs/trust.md).

Every test here failed on the main before the trust model: reads raised confidence and
cleared review, share + sync verified your own memories as "shared by <you>", a team
folder moved away retired local memories, putting it back un-flagged a flagged memory,
and an agent's memory skipped review.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from cli.conftest import Run, _run
from tests.conftest import default_env

from engram.app import Engine
from engram.app.recall import context, search

pytestmark = [
    pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed"),
    pytest.mark.timeout(900),  # real processes; a loaded machine makes each one slower
]


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "ana"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Ana")
    git(root, "config", "user.email", "ana@example.com")
    (root / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return TIMEOUT\n")
    git(root, "add", ".")
    git(root, "commit", "-qm", "jobs")
    return root


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:

    out = default_env()
    out["ENGRAM_EMBED__MODEL"] = "none"
    out["XDG_CONFIG_HOME"] = str(tmp_path / "config")  # no user setting trusts the team
    return out


def engram(root: Path, env: dict[str, str], *args: str, stdin: str | None = None) -> Run:
    run = _run(list(args), root, env, stdin)
    assert run.code == 0, run.err
    return run


def memories(root: Path, env: dict[str, str], *flags: str) -> dict[str, dict[str, object]]:
    listed = json.loads(engram(root, env, "list", "--json", *flags).out)["memories"]
    return {m["id"]: m for m in listed}


def test_reads_never_change_trust(repo: Path, env: dict[str, str]) -> None:
    first = engram(repo, env, "remember", "--file", "jobs.py", "the job timeout is 30s").out
    second = engram(repo, env, "remember", "--file", "jobs.py", "the job timeout is 90s")
    assert "contradicts" in second.err
    before = memories(repo, env, "--all")
    engram(repo, env, "search", "job timeout")
    engram(repo, env, "context", "jobs.py")
    with Engine.open(repo, {"embed": {"model": "none"}}) as engine:  # ten more, in-process
        for _ in range(10):
            search(engine, "job timeout")
            context(engine, file="jobs.py")
    after = memories(repo, env, "--all")
    for mid, memory in before.items():
        assert after[mid]["confidence"] == memory["confidence"]
        assert after[mid]["needs_review"] == memory["needs_review"]
        assert after[mid]["last_accessed_at"] == memory["last_accessed_at"]
    review = memories(repo, env, "--review")
    assert second.out.strip() in review and first.strip() not in review


def test_sharing_your_own_memories_verifies_nothing(repo: Path, env: dict[str, str]) -> None:
    mine = engram(repo, env, "remember", "--file", "jobs.py", "the job timeout is 30s").out.strip()
    disputed = engram(repo, env, "remember", "--file", "jobs.py", "the job timeout is 90s")
    engram(repo, env, "share", "--commit", mine)
    engram(repo, env, "sync")
    after = memories(repo, env, "--all")
    assert not after[mine]["user_verified"] and "team" not in after[mine]["tags"]
    assert after[disputed.out.strip()]["needs_review"]
    shown = engram(repo, env, "show", mine).out
    assert "shared by" not in shown and "verified" not in shown


def test_a_vanished_team_folder_retires_nothing_and_a_flag_survives_its_return(
    repo: Path, tmp_path: Path, env: dict[str, str]
) -> None:
    # a teammate's shared memories, committed; then local memories of Ben's own
    ben = tmp_path / "ben"
    taught = [
        engram(repo, env, "remember", f"decision {i}: queue {i} drains before deploy").out.strip()
        for i in range(3)
    ]
    engram(repo, env, "share", "--commit")
    git(tmp_path, "clone", "-q", str(repo), str(ben))
    git(ben, "config", "user.name", "Ben")
    git(ben, "config", "user.email", "ben@example.com")
    engram(ben, env, "sync")
    local = [
        engram(ben, env, "remember", f"local note {i}: cache {i} warms on boot").out.strip()
        for i in range(2)
    ]
    engram(ben, env, "flag", taught[0], "--kind", "incorrect")
    before = memories(ben, env, "--all")

    shutil.move(ben / ".engram-team", tmp_path / "moved-away")
    engram(ben, env, "sync")
    after = memories(ben, env, "--all")
    assert {m: after[m]["deprecated"] for m in after} == {
        m: before[m]["deprecated"] for m in before
    }
    assert len(memories(ben, env)) == 4  # 2 local + 2 shared, the flagged one hidden

    shutil.move(tmp_path / "moved-away", ben / ".engram-team")
    engram(ben, env, "sync")
    back = memories(ben, env, "--all")
    assert back[taught[0]]["deprecated"] and not back[taught[0]]["user_verified"]
    assert taught[0] not in engram(ben, env, "context", "--query", "queue drains deploy").out
    for mid in local:
        assert not back[mid]["deprecated"]

    # a committed deletion by the teammate retires the team memory it brought, only that
    git(repo, "rm", "-q", f".engram-team/{taught[1]}.json")
    git(repo, "commit", "-qm", "retire one")
    git(ben, "pull", "-q", str(repo), "main")
    report = json.loads(engram(ben, env, "sync", "--json").out)
    assert report["retired"] == 1
    trail = json.loads(engram(ben, env, "log", "--json", taught[1]).out)["entries"]
    assert trail[-1]["event"] == "team_delete" and trail[-1]["actor"] == "teammate:Ana"


def test_an_agents_memory_waits_for_review(repo: Path, env: dict[str, str]) -> None:
    mid = engram(
        repo, env, "remember", "--source", "agent_explicit", "retry the upload twice"
    ).out.strip()
    review = memories(repo, env, "--review")
    assert mid in review and review[mid]["confidence"] == 0.7
