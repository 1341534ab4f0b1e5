"""Issue 13, confinement: nothing outside the workspace root is read, whatever the repository's
symlinks say; links that point out are skipped and reported (docs/security.md)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest
from tests.conftest import git
from tests.security.conftest import engram

from engram.workspace import Workspace, WorkspaceError

CREDENTIALS = (
    "[default]\n"
    "aws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
    "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n"
)


@pytest.fixture
def linked_repo(tmp_workspace: Workspace, tmp_path: Path) -> Workspace:
    """`ln -s ~/.aws/credentials src/settings.py` (and a folder linked out) in a cloned repo."""
    outside = tmp_path / "home"
    (outside / "lib").mkdir(parents=True)
    (outside / "credentials").write_text(CREDENTIALS)
    (outside / "lib" / "secret_helpers.py").write_text(
        "def aws_secret_access_key():\n    return 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'\n"
    )
    root = tmp_workspace.root
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def handler(event):\n    return event\n")
    os.symlink(outside / "credentials", root / "src" / "settings.py")
    os.symlink(outside / "lib", root / "vendor")
    os.symlink(root / "src" / "app.py", root / "src" / "alias.py")  # inside: harmless
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "links")
    return tmp_workspace


def test_code_search_never_returns_a_linked_out_file(linked_repo: Workspace) -> None:
    indexed = engram(linked_repo, "index", "--no-embed", "--json")
    assert indexed.returncode == 0, indexed.stderr
    found = engram(linked_repo, "search", "--code", "--json", "aws_secret_access_key")
    assert found.returncode == 0, found.stderr
    assert "wJalrXUtnFEMI" not in found.stdout
    assert "src/settings.py" not in found.stdout and "vendor/" not in found.stdout
    report = json.loads(indexed.stdout)
    assert "src/settings.py" in json.dumps(report["code"]["outside_workspace"])
    handler = engram(linked_repo, "search", "--code", "--json", "handler event")
    assert "src/app.py" in handler.stdout  # the real code is still indexed


def test_index_and_doctor_name_the_links_that_point_out(linked_repo: Workspace) -> None:
    indexed = engram(linked_repo, "index", "--no-embed")
    assert "src/settings.py" in indexed.stderr and "outside the workspace" in indexed.stderr
    doctor = engram(linked_repo, "doctor", "--json")
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "confinement")
    assert "src/settings.py" in check["detail"] and check["level"] == "warning"


def test_impact_and_context_refuse_the_link(linked_repo: Workspace) -> None:
    for args in (("impact", "src/settings.py"), ("context", "src/settings.py")):
        done = engram(linked_repo, *args)
        assert done.returncode == 1, (args, done.stdout)
        assert "outside the workspace" in done.stderr
        assert "wJalrXUtnFEMI" not in done.stdout + done.stderr


def test_one_confinement_function(linked_repo: Workspace) -> None:
    ws = linked_repo
    assert ws.read_bytes("src/app.py").startswith(b"def handler")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        ws.read_bytes("src/settings.py")
    with pytest.raises(WorkspaceError):
        ws.read_bytes("vendor/secret_helpers.py")
    with pytest.raises(WorkspaceError):
        ws.resolve("../home/credentials")


def test_the_bulk_reader_answers_as_read_bytes_does(linked_repo: Workspace, tmp_path: Path) -> None:
    """An index run reads through a reader that confines each folder once
    (docs/codegraph.md, "At 50,000 files"): same bytes, same refusals, same messages."""
    ws = linked_repo
    reader = ws.bulk_reader()
    for rel in ("src/app.py", "src/alias.py", "src/app.py"):  # twice: the folder is known
        assert reader.read_bytes(rel) == ws.read_bytes(rel)
    for rel in ("src/settings.py", "vendor/secret_helpers.py", "src/../../home/credentials",
                "src/..", "src/missing.py", "src"):  # fmt: skip
        with pytest.raises((WorkspaceError, OSError)) as direct:
            ws.read_bytes(rel)
        with pytest.raises(type(direct.value)) as bulk:
            reader.read_bytes(rel)
        assert str(bulk.value) == str(direct.value), rel
    # whole contents, whatever the size (one read of the size and a byte more)
    for size in (0, 1, 4095, 4096, 70_000):
        (ws.root / "src" / "sized.py").write_bytes(bytes(i % 251 for i in range(size)))
        assert reader.read_bytes("src/sized.py") == ws.read_bytes("src/sized.py")
    # a file replaced by a link after its folder was checked is still refused
    (ws.root / "src" / "late.py").write_text("x = 1\n")
    assert reader.read_bytes("src/late.py") == b"x = 1\n"
    (ws.root / "src" / "late.py").unlink()
    os.symlink(tmp_path / "home" / "credentials", ws.root / "src" / "late.py")
    with pytest.raises(WorkspaceError, match="outside the workspace"):
        reader.read_bytes("src/late.py")


def test_the_bulk_reader_confines_nested_folders_through_their_parents(
    linked_repo: Workspace, tmp_path: Path
) -> None:
    """A folder's real path is built from its parent's plus its name unless it is a link
    (docs/codegraph.md, "At 50,000 files"): folders below a link that points out stay
    refused, folders below a link that stays inside are read through it, and the answers
    are :meth:`Workspace.read_bytes`'s."""
    ws = linked_repo
    root = ws.root
    (root / "src" / "pkg" / "deep").mkdir(parents=True)
    (root / "src" / "pkg" / "deep" / "mod.py").write_text("y = 2\n")
    (tmp_path / "home" / "lib" / "sub").mkdir()
    (tmp_path / "home" / "lib" / "sub" / "leak.py").write_text("secret = 1\n")
    os.symlink(root / "src", root / "inner")  # a folder link that stays inside
    os.symlink(tmp_path / "home" / "lib", root / "src" / "pkg" / "out")  # one that leaves
    reader = ws.bulk_reader()
    for rel in ("src/pkg/deep/mod.py", "inner/pkg/deep/mod.py", "src/pkg/deep/mod.py"):
        assert reader.read_bytes(rel) == ws.read_bytes(rel) == b"y = 2\n"
    for rel in ("vendor/sub/leak.py", "src/pkg/out/sub/leak.py", "src/pkg/deep/../../../x"):
        with pytest.raises((WorkspaceError, OSError)) as direct:
            ws.read_bytes(rel)
        with pytest.raises(type(direct.value)) as bulk:
            reader.read_bytes(rel)
        assert str(bulk.value) == str(direct.value), rel


def test_links_in_engram_dir_that_point_out_are_never_written_through(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """A clone committed `.engram/report.html -> ~/.bashrc` (`git add -f`): `engram report`
    wrote its HTML over the link's target and printed that path. Now every command that
    writes Engram's files refuses with one line and nothing outside changes."""
    outside = tmp_path / "home"
    (outside / "logs").mkdir(parents=True)
    bashrc = outside / ".bashrc"
    bashrc.write_text("export PATH=$HOME/bin:$PATH\n")
    root = tmp_workspace.root
    (root / "app.py").write_text("def main():\n    return 0\n")
    (root / ".engram").mkdir()
    os.symlink(bashrc, root / ".engram" / "report.html")
    git(root, "add", "-f", ".")
    git(root, "commit", "-q", "-m", "a hostile clone")
    for args in (("report",), ("remember", "a note"), ("index", "--no-embed")):
        done = engram(tmp_workspace, *args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        (line,) = done.stderr.strip().splitlines()
        assert ".engram/report.html is a link to" in line and "outside the workspace" in line
    assert bashrc.read_text() == "export PATH=$HOME/bin:$PATH\n"
    assert not (outside / ".gitignore").exists()
    doctor = engram(tmp_workspace, "doctor", "--json")
    assert doctor.returncode == 1  # something blocks Engram: it says what
    check = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "confinement")
    assert ".engram/report.html" in check["detail"] and check["level"] == "error"


def test_engram_dir_links(tmp_path: Path) -> None:
    root = (tmp_path / "ws").resolve()
    outside = tmp_path / "elsewhere"
    (root / ".engram").mkdir(parents=True)
    (outside / "logs").mkdir(parents=True)
    ws = Workspace(root)
    ws.ensure_engram_dir()  # a plain folder: fine
    (root / "notes.txt").write_text("mine")
    os.symlink(root / "notes.txt", root / ".engram" / "inside.txt")  # stays inside: allowed
    ws.ensure_engram_dir()
    os.symlink(outside / "logs", root / ".engram" / "logs")
    with pytest.raises(WorkspaceError, match=r"\.engram/logs is a link to"):
        ws.ensure_engram_dir()
    (root / ".engram" / "logs").unlink()
    (root / ".engram" / "logs").mkdir()
    os.symlink(outside / "engine.log", root / ".engram" / "logs" / "engine.log")  # dangling
    with pytest.raises(WorkspaceError, match=r"\.engram/logs/engine\.log is a link"):
        ws.ensure_engram_dir()
    assert not (outside / "engine.log").exists()
    (root / ".engram" / "logs" / "engine.log").unlink()
    ws.ensure_engram_dir()
    other = (tmp_path / "ws2").resolve()
    other.mkdir()
    os.symlink(outside, other / ".engram")  # the whole folder linked out
    with pytest.raises(WorkspaceError, match=r"^\.engram is a link to"):
        Workspace(other).ensure_engram_dir()


def test_a_hook_writes_nothing_through_a_linked_log_folder(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """The hook logs its failures to `.engram/logs/hooks.log` by name: with `logs` linked out
    by the repository it still exits 0, says nothing of it, and writes nothing there."""
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    root = tmp_workspace.root
    (root / ".engram").mkdir()
    os.symlink(outside, root / ".engram" / "logs")
    bash = {"tool_name": "Bash", "tool_input": {"command": "pytest -q"},
            "tool_response": {"stdout": "1 failed", "exit_code": 1}}  # fmt: skip
    for event, extra in (("SessionStart", {}), ("PostToolUse", bash), ("Stop", {})):
        payload = {"session_id": "s1", "hook_event_name": event, "cwd": str(root), **extra}
        done = engram(tmp_workspace, "hook", "claude-code", stdin=json.dumps(payload))
        assert done.returncode == 0, done.stderr
        # nothing but, at a session's start, caf086e's one line that it was never indexed
        said = json.loads(done.stdout) if event == "SessionStart" else {}
        assert done.stdout == "" or list(said) == ["systemMessage"], done.stdout
    # the Stop's drain runs detached: give a child that would write there time to do so
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and not any(outside.iterdir()):
        time.sleep(0.1)
    assert list(outside.iterdir()) == []


def test_a_team_dir_outside_the_workspace_does_not_stop_the_index(
    tmp_workspace: Workspace,
) -> None:
    """A clone's `.engram/config.toml` naming `[team] dir = "../outside"` made every
    `engram index` fail at its last step (after the graph and chunks were done), so the
    repository could keep Engram from ever finishing an index; the folder is refused and
    named, the rest completes."""
    root = tmp_workspace.root
    (root / "app.py").write_text("def main():\n    return 0\n")
    (root / ".engram").mkdir()
    (root / ".engram" / "config.toml").write_text('[team]\ndir = "../outside"\n')
    done = engram(tmp_workspace, "index", "--no-embed", "--json")
    assert done.returncode == 0, done.stderr
    assert "team folder not read" in done.stderr and "outside the workspace" in done.stderr
    assert json.loads(done.stdout)["code"]["files_indexed"] == 1


def test_share_never_writes_through_a_team_file_a_later_commit_made_a_link(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """A teammate's memory the user confirmed, whose file a later commit replaced with a
    link to the user's ``~/.bashrc``: the next ``engram share`` wrote the memory's JSON
    there, and its ``"content": "… $(cmd)"`` line ran in the next shell (stop 29)."""
    root = tmp_workspace.root
    home_rc = tmp_path / "bashrc"
    home_rc.write_text("export PS1=ok\n")
    (root / "app.py").write_text("def f():\n    return 1\n")
    team = root / ".engram-team"
    team.mkdir()
    shared = team / "m-00000000aa.json"
    shared.write_text(json.dumps({
        "id": "m-00000000aa", "type": "gotcha", "scope": "global", "source": "user_taught",
        "content": "Always run the whole test suite before any commit $(touch PWNED)",
        "anchors": [{"file": "app.py"}], "shared": {"format": 1, "by": "Ana"},
    }))  # fmt: skip
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a teammate's memory")
    assert engram(tmp_workspace, "sync").returncode == 0
    assert engram(tmp_workspace, "confirm", "m-00000000aa").returncode == 0
    shared.unlink()
    shared.symlink_to(os.path.relpath(home_rc, team))
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "tidy")

    run = engram(tmp_workspace, "share", "m-00000000aa")
    assert home_rc.read_text() == "export PS1=ok\n"
    assert ".engram-team/m-00000000aa.json is a link" in run.stderr, run.stderr
    assert shared.is_symlink()


def test_setup_never_reads_or_writes_through_the_repositorys_links(
    tmp_workspace: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``engram setup claude-code`` merges into ``.mcp.json`` and
    ``.claude/settings.local.json``, paths the repository writes: committed as a link to
    ``~/.claude.json``, the first was read and written back into the workspace; its
    temporary name ``.settings.local.json.engram-tmp`` linked to ``~/.bashrc`` had the merged
    settings (the clone's own keys included) written there (stop 29)."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    claude_json = home / ".claude.json"
    claude_json.write_text('{"oauthAccount": {"emailAddress": "you@example.com"}}')
    bashrc = home / ".bashrc"
    bashrc.write_text("export PS1=ok\n")
    root = tmp_workspace.root
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.local.json").write_text('{"env": {"NOTE": "$(touch X)"}}')
    (root / ".claude" / ".settings.local.json.engram-tmp").symlink_to(bashrc)
    (root / ".mcp.json").symlink_to(claude_json)

    refused = engram(tmp_workspace, "setup", "claude-code")
    assert refused.returncode != 0
    assert refused.stderr.strip().splitlines()[-1] == (
        "engram: error: .mcp.json is a link: Engram never writes through it; delete it"
    )
    assert (root / ".mcp.json").is_symlink()

    (root / ".mcp.json").unlink()
    done = engram(tmp_workspace, "setup", "claude-code")
    assert done.returncode == 0, done.stderr
    assert bashrc.read_text() == "export PS1=ok\n"
    assert '"emailAddress"' not in (root / ".mcp.json").read_text()
    assert "hook claude-code" in (root / ".claude" / "settings.local.json").read_text()
