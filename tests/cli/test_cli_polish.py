"""Issue 16's CLI points, where the user sees them: the real ``engram`` console script in a
subprocess whose stderr is a pipe (not a terminal), as in CI logs and agent tool calls."""

from __future__ import annotations

import json

from engram.workspace import Workspace

from .conftest import Run, RunCli, needs_store

pytestmark = needs_store

GITHUB_TOKEN = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"


def ok(run: Run) -> Run:
    assert run.code == 0, run.err
    assert "Traceback" not in run.err
    return run


def test_import_names_the_redacted_kind_and_a_reimported_export_is_unchanged(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    root = tmp_workspace.root
    (root / "CLAUDE.md").write_text(
        "# Rules\n\n"
        "- Run the integration tests with `make it` before pushing.\n"
        f"- The CI bot pushes with the token {GITHUB_TOKEN} from the vault.\n",
        encoding="utf-8",
    )
    first = ok(cli("import", "CLAUDE.md"))
    assert "2 added" in first.out
    # the kind is named, so the user knows which credential to rotate
    assert "engram: redacted 1 secret (github-token)" in first.err, first.err
    assert GITHUB_TOKEN not in ok(cli("export", "-")).out

    ok(cli("export", "memories.md"))
    again = ok(cli("import", "--json", "memories.md"))
    report = json.loads(again.out)
    assert (report["added"], report["merged"], report["unchanged"]) == (0, 0, 2), report
    assert report["redacted"] == 0 and report["redacted_kinds"] == {}


def test_import_report_counts_each_redacted_kind_in_json(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    (tmp_workspace.root / "AGENTS.md").write_text(
        f"- Deploys use {GITHUB_TOKEN} as the bot token.\n"
        f"- The release job also reads {GITHUB_TOKEN[:-1]}X from its environment.\n",
        encoding="utf-8",
    )
    report = json.loads(ok(cli("import", "--json", "AGENTS.md")).out)
    assert report["redacted"] == 2
    assert report["redacted_kinds"] == {"github_token": 2}


def test_doctor_reports_code_chunks_without_embeddings_as_json_objects(
    cli: RunCli, tmp_workspace: Workspace, cli_env: dict[str, str]
) -> None:
    root = tmp_workspace.root
    (root / "billing.py").write_text(
        "def charge(amount):\n    return round(amount * 100)\n\n\n"
        "class Refunds:\n    def undo(self, charge_id):\n        return charge_id\n",
        encoding="utf-8",
    )
    ok(cli("index", "--no-embed"))  # chunks stored, none embedded
    cli_env.pop("ENGRAM_EMBED__MODEL")  # the default model, as a user runs doctor
    run = cli("doctor", "--json")
    assert run.code == 0, run.err
    checks = {c["name"]: c for c in json.loads(run.out)["checks"]}
    search = checks["code search"]
    assert search["ok"] is False and search["level"] == "warning"
    chunks = search["facts"]["chunks"]
    assert chunks >= 2 and search["facts"]["unembedded"] == chunks
    assert search["facts"]["embedded"] == 0
    assert f"{chunks} of {chunks} code chunks have no embedding" in search["detail"]
    assert "engram index" in search["detail"]
    # every check is plain JSON: no Python repr of a dict inside a string
    graph = checks["code graph"]
    assert graph["facts"]["files"] == 1 and graph["facts"]["nodes"] >= 3
    for check in checks.values():
        assert "{'" not in check["detail"] and "': " not in check["detail"], check

    human = cli("doctor")
    assert f"warn  code search      {chunks} of {chunks} code chunks" in human.out, human.out


CONTROL = set(range(0x00, 0x20)) - {0x0A}  # every C0 control character but the newline


def test_index_prints_progress_lines_when_stderr_is_not_a_terminal(
    cli: RunCli, tmp_workspace: Workspace, cli_env: dict[str, str]
) -> None:
    """An index of click printed nothing for 4.5 minutes with stderr in a log: rich's bar
    is off there, and nothing took its place."""
    pkg = tmp_workspace.root / "pkg"
    pkg.mkdir()
    for n in range(12):
        (pkg / f"mod{n}.py").write_text(f"def f{n}(x):\n    return x + {n}\n", encoding="utf-8")
    cli_env["ENGRAM_PROGRESS_SECONDS"] = "0"  # every update, so a small index shows them
    run = ok(cli("index", "--no-embed"))
    lines = run.err_lines
    code = [line for line in lines if line.startswith("engram: indexing code: ")]
    assert len(code) >= 3, run.err
    assert any("/12 (" in line and "pkg/mod" in line for line in code), code
    assert code[-1].startswith("engram: indexing code: done, 12 in "), code
    assert any(line.startswith("engram: chunking and embedding code: done") for line in lines)
    assert not CONTROL & {ord(ch) for ch in run.err}, repr(run.err)


def test_forget_names_the_last_day_and_a_deleted_memory_says_why_it_cannot_come_back(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    from datetime import UTC, datetime, timedelta

    from engram.app import Engine
    from engram.app.maintenance import prune

    mid = ok(cli("remember", "The nightly job must finish before 06:00 UTC")).out.strip()
    forgot = ok(cli("forget", mid))
    last_day = (datetime.now(UTC) + timedelta(days=30)).strftime("%Y-%m-%d")
    assert f"engram: undo until {last_day} (30 days): engram restore {mid}" in forgot.err_lines
    ok(cli("restore", mid))  # inside the 30 days
    ok(cli("forget", mid))
    with Engine.open(tmp_workspace.root, {"embed": {"model": "none"}}) as engine:
        later = datetime.now(UTC) + timedelta(days=31)
        engine.clock = lambda: later
        assert mid in prune(engine).deleted
    gone = cli("restore", mid)
    assert gone.code == 1
    assert gone.err_lines == [
        f"engram: error: {mid} was forgotten on {datetime.now(UTC):%Y-%m-%d} and deleted on "
        f"{later:%Y-%m-%d} when its 30 days to restore it were over; its last text is in "
        f"`engram log {mid}`"
    ], gone.err
    assert "06:00 UTC" in ok(cli("log", mid)).out


def test_edit_rewrites_text_type_anchor_and_tags_and_the_log_keeps_the_old_text(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    (tmp_workspace.root / "jobs.py").write_text("def run():\n    return 1\n", encoding="utf-8")
    mid = ok(cli("remember", "--tag", "ops", "run() retries twice")).out.strip()
    edited = ok(
        cli("edit", mid, "--text", "run() retries three times", "--type", "decision",
            "--file", "jobs.py", "--symbol", "run", "--tag", "jobs", "--json")
    )  # fmt: skip
    memory = json.loads(edited.out)
    assert memory["content"] == "run() retries three times" and memory["type"] == "decision"
    assert memory["tags"] == ["jobs"] and memory["anchors"][0]["file"] == "jobs.py"
    trail = json.loads(ok(cli("log", "--json", mid)).out)["entries"]
    assert [e["event"] for e in trail] == ["create", "edit"]
    assert trail[1]["before"]["content"] == "run() retries twice"
    assert trail[1]["before"]["tags"] == ["ops"] and trail[1]["before"]["type"] == "gotcha"
