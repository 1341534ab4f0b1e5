"""The memory commands end to end: the real console script, store and retrieval."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engram.workspace import Workspace

from .conftest import Run, RunCli, engine_var, needs_retrieval, needs_store

pytestmark = needs_store


@pytest.fixture
def cli(
    tmp_workspace: Workspace, cli_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> RunCli:
    """``engram.cli.main.main`` in this process: the same code path as the console script
    (argv parsing, error handling, output) without paying LanceDB's import per command.
    The console script itself is exercised by test_cli_errors.py and the real-model test."""
    from engram.cli.main import main

    for key in [k for k in os.environ if k.startswith("ENGRAM_") and not engine_var(k)]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ENGRAM_EMBED__MODEL", cli_env["ENGRAM_EMBED__MODEL"])

    def run(*args: str, stdin: bytes | str | None = None, cwd: Path | None = None) -> Run:
        monkeypatch.chdir(cwd or tmp_workspace.root)
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:
                code = int(exc.code or 0)
        return Run(code, out.getvalue(), err.getvalue())

    return run


def ok(run):  # type: ignore[no-untyped-def]
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    return run


@needs_retrieval
def test_memory_lifecycle(cli: RunCli, tmp_workspace: Workspace) -> None:
    src = tmp_workspace.root / "billing.py"
    src.write_text("def charge(amount):\n    return round(amount * 100)\n", encoding="utf-8")
    first = ok(
        cli(
            "remember",
            "--type",
            "gotcha",
            "--file",
            "billing.py",
            "--line",
            "1-2",
            "--tag",
            "money",
            "charge() takes euros but the payment API wants integer cents",
        )
    )
    mid = first.out.strip()
    assert mid.startswith("m-") and len(first.out.splitlines()) == 1

    found = json.loads(ok(cli("search", "--json", "payment API cents")).out)
    assert found["hits"][0]["id"] == mid
    assert found["hits"][0]["anchors"][0]["file"] == "billing.py"

    listed = json.loads(ok(cli("list", "--json", "--file", "billing.py")).out)
    assert [m["id"] for m in listed["memories"]] == [mid]
    assert json.loads(ok(cli("list", "--json", "--type", "decision")).out)["count"] == 0

    shown = ok(cli("show", mid)).out
    assert "billing.py lines 1-2" in shown and "money" in shown

    stdin_id = ok(cli("remember", "--type", "decision", "-", stdin="We keep money in cents\n"))
    assert stdin_id.out.strip() != mid

    ok(cli("flag", mid, "--kind", "wrong_scope", "--note", "only for card payments"))
    # a flagged memory is hidden until the person who flagged it confirms it (docs/trust.md)
    assert json.loads(ok(cli("list", "--json")).out)["count"] == 1
    hidden = ok(cli("list", "--all")).out
    assert mid in hidden and "flagged" in hidden
    ok(cli("confirm", mid))
    assert json.loads(ok(cli("list", "--json", "--review")).out)["count"] == 0
    assert "pinned" in ok(cli("pin", mid)).out
    assert json.loads(ok(cli("show", "--json", mid)).out)["pinned"] is True
    assert "unpinned" in ok(cli("pin", "--unpin", mid)).out

    stats = json.loads(ok(cli("stats", "--json")).out)
    assert stats["total"] == 2 and stats["by_type"] == {"decision": 1, "gotcha": 1}

    ok(cli("forget", mid))
    assert mid not in ok(cli("list")).out
    assert "state: forgotten" in ok(cli("show", mid)).out
    assert "restored" in ok(cli("restore", mid)).out
    assert mid in ok(cli("list")).out
    trail = json.loads(ok(cli("log", "--json", mid)).out)["entries"]
    assert [e["event"] for e in trail] == [
        "create", "flag", "confirm", "pin", "pin", "forget", "restore"
    ]  # fmt: skip
    missing = cli("show", "m-doesnotexist")
    assert missing.code == 1
    assert missing.err_lines == ["engram: error: no memory with id m-doesnotexist"]
    assert cli("forget", "m-doesnotexist").code == 1


def test_duplicate_merges_and_secret_is_redacted(cli: RunCli) -> None:
    a = ok(cli("remember", "Run the migrations before the integration tests"))
    b = ok(cli("remember", "run the migrations before the integration tests."))
    assert a.out == b.out and "merged into existing memory" in b.err
    secret = ok(cli("remember", "the staging key is sk-proj-abcdefghijklmnopqrstuvwxyz012345"))
    assert "redacted 1 secret (openai-api-key)" in secret.err
    shown = ok(cli("show", "--json", secret.out.strip())).out
    assert "abcdefghijklmnop" not in shown and "[REDACTED:openai_api_key]" in shown


@needs_retrieval
def test_context_respects_budget(cli: RunCli, tmp_workspace: Workspace) -> None:
    (tmp_workspace.root / "cache.py").write_text("CACHE = {}\n")
    facts = [
        "cache entries for tenants expire after ten minutes unless pinned by an admin",
        "eviction runs on a background thread that must hold the cache lock",
        "never store request objects in the cache: they keep sockets alive",
        "the cache key includes the locale because translations differ",
        "we decided on an LRU policy because memory on the workers is tight",
        "clearing the cache in tests needs the reset_cache fixture",
        "cache misses are logged at debug level only to avoid noisy production logs",
        "a cold cache makes the first dashboard request take about four seconds",
    ]
    for fact in facts:
        assert not ok(cli("remember", "--file", "cache.py", fact)).err
    small = json.loads(ok(cli("context", "--json", "--budget", "80", "cache.py")).out)
    large = json.loads(ok(cli("context", "--json", "--budget", "4000", "cache.py")).out)
    assert small["tokens"] <= 80 and small["budget_tokens"] == 80
    assert large["tokens"] <= 4000
    assert len(large["items"]) > len(small["items"]) >= 1
    text = ok(cli("context", "--budget", "4000", "cache.py")).out
    assert "eviction runs" in text and "[Memory m-" in text
    by_query = json.loads(ok(cli("context", "--json", "--query", "eviction lock")).out)
    assert by_query["items"]


def test_export_import_round_trip(cli: RunCli, tmp_workspace: Workspace, tmp_path: Path) -> None:
    ok(cli("remember", "--type", "preference", "Prefer attrs over dataclasses"))
    ok(cli("remember", "--type", "dead_end", "Tried asyncio for the indexer: slower"))
    for fmt in ("json", "md"):
        target = tmp_path / f"mem.{fmt}"
        ok(cli("export", "--format", fmt, str(target)))
        other = tmp_path / f"other-{fmt}"
        other.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=other, check=True)
        report = json.loads(ok(cli("import", "--json", str(target), "--workspace", str(other))).out)
        assert report["added"] == 2, report
        contents = {
            m["content"]
            for m in json.loads(ok(cli("list", "--json", "--workspace", str(other))).out)[
                "memories"
            ]
        }
        assert contents == {
            "Prefer attrs over dataclasses",
            "Tried asyncio for the indexer: slower",
        }
    stdout_export = json.loads(ok(cli("export")).out)
    assert stdout_export["count"] == 2


def test_claude_md_import(cli: RunCli, tmp_workspace: Workspace) -> None:
    rules = tmp_workspace.root / "CLAUDE.md"
    rules.write_text(
        "# Conventions\n- Never log request bodies\n- Prefer pathlib over os.path\n"
        "## Why\n- We decided on SQLite because it ships with Python\n- Docs live in docs/\n"
    )
    run = ok(cli("import", "CLAUDE.md"))
    assert "4 added" in run.out
    memories = json.loads(ok(cli("list", "--json", "--source", "user_taught")).out)["memories"]
    types = {m["content"]: m["type"] for m in memories}
    assert types == {
        "Never log request bodies": "gotcha",
        "Prefer pathlib over os.path": "preference",
        "We decided on SQLite because it ships with Python": "decision",
        "Docs live in docs/": "pattern",
    }
    tags = {m["content"]: m["tags"] for m in memories}
    assert tags["Docs live in docs/"] == ["conventions", "why", "claude-md"]


def test_doctor_and_readonly_store(cli: RunCli, tmp_workspace: Workspace) -> None:
    ok(cli("remember", "something to count"))
    doctor = json.loads(ok(cli("doctor", "--json")).out)
    names = {c["name"]: c for c in doctor["checks"]}
    assert names["store"]["ok"] and "1 memories" in names["store"]["detail"]
    assert {"python", "packages", "embedding model", "tree-sitter", "git"} <= set(names)


def test_corrupted_store_is_one_line(cli: RunCli, tmp_workspace: Workspace) -> None:
    ok(cli("remember", "something to corrupt"))
    table = tmp_workspace.root / ".engram" / "memories.lance"
    for path in table.rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    run = cli("list")
    assert run.code != 0 and "Traceback" not in run.err
    assert len(run.err_lines) == 1, run.err


def test_read_only_directory(cli: RunCli, tmp_path: Path) -> None:
    import os

    if os.geteuid() == 0:
        pytest.skip("root ignores directory permissions")
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        run = cli("remember", "x y z", "--workspace", str(ro))
        assert run.code == 1 and len(run.err_lines) == 1 and "permission denied" in run.err
    finally:
        ro.chmod(0o755)


@needs_retrieval
def test_search_with_the_default_model_says_when_nothing_matches(
    cli: RunCli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 12 #5: every search returned every memory, down to score 0.000."""
    monkeypatch.delenv("ENGRAM_EMBED__MODEL")  # the bundled model: its calibrated floor
    ok(cli("remember", "Use exponential backoff when the GitHub API rate-limits us"))
    ok(cli("remember", "The invoice PDF renderer needs the DejaVu fonts installed"))
    found = json.loads(ok(cli("search", "--json", "throttled by github requests")).out)
    assert [h["content"][:11] for h in found["hits"]] == ["Use exponen"]
    nothing = ok(cli("search", "--json", "recipe for banana bread with walnuts"))
    assert json.loads(nothing.out)["hits"] == []
    said = ok(cli("search", "recipe for banana bread with walnuts"))
    assert "no memories match" in said.err and said.out == ""


@needs_retrieval
def test_real_default_model_end_to_end(
    tmp_workspace: Workspace, cli_env: dict[str, str], tmp_path: Path
) -> None:
    from .conftest import _run

    env = dict(cli_env)
    env.pop("ENGRAM_EMBED__MODEL")
    root = tmp_workspace.root
    first = _run(
        ["remember", "Use exponential backoff when the GitHub API rate-limits us"], root, env, None
    )
    assert first.code == 0, first.err
    _run(["remember", "The invoice PDF renderer needs the DejaVu fonts installed"], root, env, None)
    hits = json.loads(
        _run(["search", "--json", "throttled by github requests"], root, env, None).out
    )
    assert hits["hits"][0]["content"].startswith("Use exponential backoff")
    doctor = json.loads(_run(["doctor", "--json"], root, env, None).out)
    model = {c["name"]: c for c in doctor["checks"]}["embedding model"]
    assert model["ok"], model


def test_observe_engram_events_and_claude_code_payloads(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    (tmp_workspace.root / "app.py").write_text("x = 1\n")
    lines = "\n".join(
        json.dumps(e)
        for e in (
            {"kind": "session_start", "session_id": "s1"},
            {"kind": "editor", "action": "open", "session_id": "s1", "files": ["app.py"]},
        )
    )
    out = json.loads(ok(cli("observe", stdin=lines)).out)
    assert [r["accepted"] for r in out] == [True, True]
    payload = {
        "session_id": "cc1",
        "hook_event_name": "PostToolUse",
        "cwd": str(tmp_workspace.root),
        "tool_name": "Read",
        "tool_input": {"file_path": str(tmp_workspace.root / "app.py")},
        "tool_response": {"type": "text"},
    }
    run = ok(cli("observe", "--format", "claude-code", stdin=json.dumps(payload)))
    assert run.out == "" or "hookSpecificOutput" in run.out
    bad = cli("observe", stdin=json.dumps({"kind": "nonsense", "session_id": "s1"}))
    assert bad.code == 1 and len(bad.err_lines) == 1 and "unknown event kind" in bad.err
