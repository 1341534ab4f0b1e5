"""A repository's own ``.git/config`` never makes Engram run a command (docs/security.md, "Git").

``core.fsmonitor`` names a command git runs whenever it refreshes the index: ``ls-files
--others`` (listing the workspace for the graph), ``status`` (the team folder's facts) and
``commit`` (``share --commit``) all do. A ``git clone`` cannot carry it, but a workspace
unpacked from an archive with its ``.git`` can, and ``engram index`` ran it: found by the
lead's hostile-workspace walk, stop 27. Every git command Engram runs starts with
``engram.gitroot.SAFE_GIT_CONFIG``.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from tests.conftest import git
from tests.security.conftest import engram

from engram.workspace import Workspace


@pytest.fixture
def armed_repo(tmp_workspace: Workspace, tmp_path: Path) -> tuple[Workspace, Path]:
    """A workspace whose ``.git/config`` runs ``touch MARKER`` as its file-system monitor."""
    root = tmp_workspace.root
    (root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    marker = tmp_path / "FSMONITOR-RAN"
    git(root, "config", "user.name", "Ana")
    git(root, "config", "user.email", "ana@example.invalid")
    git(root, "config", "core.fsmonitor", f"touch {shlex.quote(str(marker))}; false")
    # the set-up is live: git itself runs the command for the listing Engram does
    subprocess.run(["git", "-C", str(root), "ls-files", "--others"], capture_output=True)
    assert marker.exists(), "git did not run core.fsmonitor: the test would prove nothing"
    marker.unlink()
    return tmp_workspace, marker


def _teammates_memory(root: Path, memory_id: str) -> Path:
    """A teammate's shared memory in the team folder (not committed yet)."""
    team = root / ".engram-team"
    team.mkdir(exist_ok=True)
    shared = team / f"{memory_id}.json"
    shared.write_text(
        f'{{"id": "{memory_id}", "type": "gotcha", "scope": "global", "source": "user_taught",'
        ' "content": "charge() takes cents, never euros", "anchors": []}'
    )
    return shared


def _new_timestamps(*paths: Path) -> None:
    """As every file of an unpacked archive has: git must look at the content again."""
    for path in paths:
        stamp = path.stat().st_mtime + 5
        os.utime(path, (stamp, stamp))


def test_index_remember_share_and_sync_never_run_the_repositorys_fsmonitor(
    armed_repo: tuple[Workspace, Path],
) -> None:
    ws, marker = armed_repo
    steps = [
        ("index", "--no-embed"),
        ("remember", "--file", "billing.py", "charge() takes cents, never euros"),
        ("share", "--commit"),
        ("sync",),
        ("impact", "billing.py"),
    ]
    for args in steps:
        run = engram(ws, *args)
        assert run.returncode == 0, (args, run.stderr)
        assert not marker.exists(), f"`engram {' '.join(args)}` ran the repository's fsmonitor"
    # and the work was done: the share is a commit of the team folder
    log = git(ws.root, "log", "-1", "--format=%s")
    assert log.startswith("engram: share")


def test_sync_and_index_never_run_the_repositorys_clean_filter(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """``status`` (the team folder's facts) runs a file's clean filter when its timestamps
    changed, as they do in any unpacked archive: ``engram sync`` and ``engram index`` ran
    ``filter.x.clean`` from the repository's ``.git/config`` (stop 29)."""
    root = tmp_workspace.root
    shared = _teammates_memory(root, "m-00000000aa")
    (root / ".gitattributes").write_text("*.json filter=x\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a teammate's memory")
    marker = tmp_path / "FILTER-RAN"
    git(root, "config", "filter.x.clean", f"touch {shlex.quote(str(marker))}; cat")
    git(root, "config", "filter.x.required", "true")

    def unpacked() -> None:
        _new_timestamps(shared)

    unpacked()
    subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True)
    assert marker.exists(), "git did not run the clean filter: the test would prove nothing"
    marker.unlink()
    for args in [("sync", "--json"), ("index", "--no-embed")]:
        unpacked()
        run = engram(tmp_workspace, *args)
        assert run.returncode == 0, (args, run.stderr)
        assert not marker.exists(), f"`engram {' '.join(args)}` ran the repository's filter"
    # and the facts were read: the committed share is the teammate's, in review
    listed = engram(tmp_workspace, "list", "--json")
    assert "charge() takes cents" in listed.stdout


def _signed_commit(root: Path, message: str) -> None:
    """A commit carrying a ``gpgsig`` header: anyone can write one (no key is needed for a
    header git will try to verify), so an archive's history can hold as many as it likes."""
    tree = git(root, "rev-parse", "HEAD^{tree}").strip()
    parent = git(root, "rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {parent}\n"
        "author Ana <ana@example.invalid> 1700000000 +0000\n"
        "committer Ana <ana@example.invalid> 1700000000 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n AAAA\n -----END PGP SIGNATURE-----\n"
        f"\n{message}\n"
    )
    sha = subprocess.run(
        ["git", "-C", str(root), "hash-object", "-t", "commit", "-w", "--stdin"],
        input=body, capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    git(root, "update-ref", "HEAD", sha)


def test_index_and_sync_never_run_the_repositorys_gpg_program_or_hooks(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """Two more commands an archive's ``.git`` names (stop 30), both checked live with git
    first: ``log.showSignature`` + ``gpg.program`` ran on every ``git log`` of history
    mining (``engram index``), and ``status`` over an unpacked team folder rewrote git's
    index, which ran ``.git/hooks/post-index-change`` (``engram sync``, ``engram index``,
    an editor's start)."""
    root = tmp_workspace.root
    shared = _teammates_memory(root, "m-00000000ab")
    (root / "billing.py").write_text("def charge(amount):\n    return amount\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "a teammate's memory")
    _signed_commit(root, "signed, it says")
    gpg_marker, hook_marker = tmp_path / "GPG-RAN", tmp_path / "HOOK-RAN"
    program = tmp_path / "gpg"
    program.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(gpg_marker))}\nexit 1\n")
    program.chmod(0o755)
    git(root, "config", "log.showSignature", "true")
    git(root, "config", "gpg.program", str(program))
    hook = root / ".git" / "hooks" / "post-index-change"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\ntouch {shlex.quote(str(hook_marker))}\n")
    hook.chmod(0o755)

    def unpacked() -> None:
        _new_timestamps(shared, root / "billing.py")

    unpacked()
    subprocess.run(["git", "-C", str(root), "log", "--format=%H"], capture_output=True)
    subprocess.run(["git", "-C", str(root), "status", "--porcelain"], capture_output=True)
    assert gpg_marker.exists(), "git log did not run gpg.program: the test would prove nothing"
    assert hook_marker.exists(), "git status ran no hook: the test would prove nothing"
    gpg_marker.unlink()
    hook_marker.unlink()
    for args in [("index", "--no-embed"), ("sync", "--json")]:
        unpacked()
        run = engram(tmp_workspace, *args)
        assert run.returncode == 0, (args, run.stderr)
        assert not gpg_marker.exists(), f"`engram {' '.join(args)}` ran gpg.program"
        assert not hook_marker.exists(), f"`engram {' '.join(args)}` ran post-index-change"
    # and the work was done: both commits mined, the teammate's memory arrived
    listed = engram(tmp_workspace, "list", "--json")
    assert "charge() takes cents" in listed.stdout
    assert git(root, "log", "-1", "--format=%s").strip() == "signed, it says"


#: what an archive can put where git opens a file, and where (stop 32): a FIFO blocks git's
#: ``open`` (and GitPython's read of HEAD and config) until a writer comes, a link to a
#: device reads forever
_GIT_HAZARDS = [
    ("fifo", ".git/HEAD"),
    ("fifo", ".git/index"),
    ("fifo", ".git/config"),
    ("fifo", ".git/packed-refs"),
    ("fifo", "src/.gitignore"),
    ("zero", ".git/refs/heads/main"),
    ("include", "notes/extra.cfg"),
    # ``diff.orderFile`` is read by ``git log --name-status``: history mining, and so
    # ``engram index`` and the engine, waited for ever (stop 33)
    ("orderfile", "notes/order.txt"),
]


@pytest.mark.parametrize(("kind", "where"), _GIT_HAZARDS, ids=[w for _, w in _GIT_HAZARDS])
def test_a_fifo_or_device_where_git_reads_stops_no_command(
    tmp_workspace: Workspace, kind: str, where: str
) -> None:
    """Until stop 32 each of these made ``engram index`` wait 60 s per git call, and
    ``.git/HEAD`` or ``.git/config`` made ``remember`` (so the engine, so an editor's start)
    wait for ever: GitPython reads them in Python with no timeout."""
    root = tmp_workspace.root
    (root / "src").mkdir()
    (root / "src" / "billing.py").write_text("def charge(amount):\n    return amount\n")
    (root / "src" / "tax.py").write_text("from billing import charge\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    git(root, "branch", "-M", "main")
    target = root / where
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "include":  # the repository's config names the FIFO for git to read
        git(root, "config", "include.path", f"../{where}")
    if kind == "orderfile":  # relative to the top of the working tree
        git(root, "config", "diff.orderFile", where)
    if target.exists():
        target.unlink()
    if kind == "zero":
        target.symlink_to("/dev/zero")
    else:
        os.mkfifo(target)
    steps = [
        ("index", "--no-embed"),
        ("remember", "--file", "src/billing.py", "charge() takes cents, never euros"),
        ("sync",),
        ("doctor",),
    ]
    for args in steps:
        try:
            run = engram(tmp_workspace, *args, timeout=40)
        except subprocess.TimeoutExpired:
            pytest.fail(f"`engram {' '.join(args)}` waited on {where} ({kind})")
        assert run.returncode in (0, 1), (args, run.stderr)
        if args[0] == "index":  # the graph was built all the same
            assert run.returncode == 0, run.stderr
            assert "files indexed 2" in run.stderr, run.stderr
        if args[0] == "doctor" and not where.endswith(".gitignore"):  # one git stops on it
            assert "git is not run in this workspace" in run.stdout + run.stderr, run.stdout


def test_git_runs_beside_a_socket_and_the_files_git_keeps(tmp_workspace: Workspace) -> None:
    """The check refuses only what would block or never end: git's own fsmonitor daemon
    keeps a socket in ``.git`` (opening one fails at once), and a linked worktree's ``.git``
    file leads to its folder and the common one."""
    import socket

    from engram.gitroot import unsafe_git_file

    root = tmp_workspace.root
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    ipc = socket.socket(socket.AF_UNIX)
    try:
        ipc.bind(str(root / ".git" / "f.ipc"))  # a short path: AF_UNIX takes 107 bytes
        assert unsafe_git_file(str(root)) is None
    finally:
        ipc.close()
    linked = root.parent / "linked"
    git(root, "worktree", "add", "-q", str(linked))
    assert (linked / ".git").is_file()
    assert unsafe_git_file(str(linked)) is None
    os.mkfifo(root / ".git" / "packed-refs")  # the common folder, reached from the worktree
    assert "packed-refs is a FIFO" in (unsafe_git_file(str(linked)) or "")


@pytest.mark.parametrize("how", ["on the header's line", "past 64 KB"])
def test_a_file_the_config_names_is_found_however_the_config_is_written(
    tmp_workspace: Workspace, how: str
) -> None:
    """677cf09 asked ``git config`` only when a line of the config's first 64 KB began with
    a key naming a file: ``[include] path = …`` on one line, or a key after 64 KB of
    comments, named a FIFO git waited on for ever and the check said nothing (stop 33)."""
    from engram.gitroot import unsafe_git_file

    root = tmp_workspace.root
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    (root / "notes").mkdir()
    os.mkfifo(root / "notes" / "extra.cfg")
    config = root / ".git" / "config"
    if how == "past 64 KB":
        padding = "# " + "x" * 78 + "\n"
        text = padding * (70_000 // len(padding)) + "[include]\n\tpath = ../notes/extra.cfg\n"
    else:
        text = "[include] path = ../notes/extra.cfg\n"
    with config.open("a", encoding="utf-8") as fh:
        fh.write(text)
    with pytest.raises(subprocess.TimeoutExpired):  # live: git itself waits on it
        subprocess.run(["git", "-C", str(root), "log", "-1"], capture_output=True, timeout=3)
    why = unsafe_git_file(str(root)) or ""
    assert "notes/extra.cfg (named by include.path in .git/config) is a FIFO" in why


def test_an_object_folder_the_alternates_name_is_looked_at(tmp_workspace: Workspace) -> None:
    """git reads objects from each folder ``objects/info/alternates`` names as from its own:
    an archive's FIFO as the head commit there held ``git log`` (so ``engram index``) for
    ever, and the check, which looked at the git folder only, said nothing (stop 33)."""
    from engram.gitroot import unsafe_git_file

    root = tmp_workspace.root
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    head = git(root, "rev-parse", "HEAD").strip()
    (root / ".git" / "objects" / head[:2] / head[2:]).unlink()
    borrowed = root / "vendor" / "objects" / head[:2]
    borrowed.mkdir(parents=True)
    os.mkfifo(borrowed / head[2:])
    (root / ".git" / "objects" / "info" / "alternates").write_text("../../vendor/objects\n")
    with pytest.raises(subprocess.TimeoutExpired):  # live: git itself waits on it
        subprocess.run(["git", "-C", str(root), "log", "-1"], capture_output=True, timeout=3)
    why = unsafe_git_file(str(root)) or ""
    assert f"vendor/objects/{head[:2]}/{head[2:]} is a FIFO" in why


def test_a_linked_worktree_reads_the_files_its_common_config_names(
    tmp_workspace: Workspace,
) -> None:
    """A linked worktree's settings are its common folder's ``config``: its own folder has
    none, so the files the config names were never looked at from the worktree, and an
    include of a FIFO held every git command there for ever (stop 33)."""
    from engram.gitroot import unsafe_git_file

    root = tmp_workspace.root
    (root / "app.py").write_text("x = 1\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "first")
    linked = root.parent / "linked"
    git(root, "worktree", "add", "-q", str(linked))
    (root / "notes").mkdir()
    os.mkfifo(root / "notes" / "extra.cfg")
    git(root, "config", "include.path", "../notes/extra.cfg")  # beside the common config
    with pytest.raises(subprocess.TimeoutExpired):  # live: git itself waits on it
        subprocess.run(["git", "-C", str(linked), "log", "-1"], capture_output=True, timeout=3)
    why = unsafe_git_file(str(linked)) or ""
    assert "notes/extra.cfg (named by include.path in" in why, why
