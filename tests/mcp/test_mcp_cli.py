"""``engram mcp ...`` through the real CLI entry point: output, --json, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from mcp_helpers import VENV_BIN, WriteConfig, fake_server

from engram.cli.main import main
from engram.workspace import Workspace


@pytest.fixture
def cli_env(user_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOME", str(user_home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    return user_home


def run(ws: Workspace, *argv: str) -> int:
    return main(["mcp", "--workspace", str(ws.root), *argv])


def test_cli_flow_trust_refresh_search_call(
    tmp_workspace: Workspace,
    cli_env: Path,
    write_config: WriteConfig,
    capsys: pytest.CaptureFixture[str],
) -> None:
    write_config(
        tmp_workspace.root / ".mcp.json",
        {"time": {"command": str(VENV_BIN / "mcp-server-time")}, "fake": fake_server()},
    )
    assert run(tmp_workspace, "status", "--json") == 0
    status = json.loads(capsys.readouterr().out)
    assert {s["state"] for s in status["servers"]} == {"needs_approval"}

    assert (
        run(tmp_workspace, "call", "time__get_current_time", "--args", '{"timezone": "UTC"}') != 0
    )
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "engram mcp trust time" in err

    assert run(tmp_workspace, "trust", "time", "fake") == 0
    assert "approved time" in capsys.readouterr().out
    assert run(tmp_workspace, "refresh", "--json") == 0
    assert sorted(json.loads(capsys.readouterr().out)["refreshed"]) == ["fake", "time"]

    assert run(tmp_workspace, "list") == 0
    assert "time__convert_time" in capsys.readouterr().out
    assert run(tmp_workspace, "search", "--json", "--k", "2", "convert", "time", "zones") == 0
    found = json.loads(capsys.readouterr().out)
    assert found["tools"][0]["name"] == "time__convert_time" and "input_schema" in found["tools"][0]

    assert run(tmp_workspace, "call", "fake__add", "--args", '{"a": 2, "b": 40}') == 0
    assert capsys.readouterr().out.strip() == "42"
    assert run(tmp_workspace, "call", "fake__fail") == 1
    captured = capsys.readouterr()
    assert "dev server must be running" in captured.err and captured.err.count("\n") == 1


def test_cli_errors_are_one_line(
    tmp_workspace: Workspace, cli_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(tmp_workspace, "call", "x__y", "--args", "{not json") != 0
    assert "not valid JSON" in capsys.readouterr().err
    assert run(tmp_workspace, "call", "x__y", "--args", "[1]") != 0
    assert "JSON object" in capsys.readouterr().err
    assert run(tmp_workspace, "trust", "ghost") != 0
    err = capsys.readouterr().err
    assert "no MCP server named 'ghost'" in err and err.count("\n") == 1
    with pytest.raises(SystemExit):
        run(tmp_workspace, "frobnicate")
    assert capsys.readouterr().err.count("\n") == 1


def test_importing_the_cli_module_stays_light() -> None:
    code = (
        "import sys, engram.cli.mcp; "
        "heavy = ('mcp', 'anyio', 'rapidfuzz', 'numpy', 'lancedb'); "
        "heavy = [m for m in heavy if m in sys.modules]; "
        "print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
