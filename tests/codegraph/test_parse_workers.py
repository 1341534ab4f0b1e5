"""A cold index that parses in worker processes (issue 18; docs/codegraph.md, "A cold index
on several cores"): the same graph as one process, ids included; cancel, kill and Ctrl-C
leave a resumable graph and no process behind; confinement holds in the workers; a
repository cannot ask for more workers than there are CPUs."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from tests.conftest import git

from engram.codegraph import CodeGraph, parse_worker
from engram.codegraph.languages import LanguageRegistry
from engram.codegraph.parse_worker import Examined, ParsePool, Task, examine, worker_count
from engram.config import IndexConfig, load_config
from engram.workspace import Workspace

from .conftest import write_tree

ROOT = Path(__file__).resolve().parents[2]


def _digest_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "graph_digest", ROOT / "scripts/bench/graph_digest.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def digest(db: Path) -> dict[str, dict[str, object]]:
    """Every table's rows (ids included) hashed: scripts/bench/graph_digest.py."""
    found: dict[str, dict[str, object]] = _digest_module().digest(db)
    return found


def mixed_files(count: int = 30) -> dict[str, str | bytes]:
    """Six languages that import and call each other, plus the files a run skips."""
    files: dict[str, str | bytes] = {}
    for i in range(count):
        files[f"py/pkg{i % 3}/mod{i}.py"] = (
            f"from py.pkg{(i + 1) % 3}.mod{(i + 1) % count} import helper{(i + 1) % count}\n"
            f"import os\n\nclass Thing{i}(Base):\n    def run(self):\n"
            f"        return helper{(i + 1) % count}(os.sep)\n\n"
            f"def helper{i}(x):\n    return Thing{i}().run()\n"
        )
        files[f"js/lib{i}.js"] = (
            f"import {{ f{(i + 1) % count} }} from './lib{(i + 1) % count}.js';\n"
            f"export function f{i}() {{ return f{(i + 1) % count}(); }}\n"
        )
        files[f"ts/t{i}.ts"] = (
            f"import {{ g{(i + 2) % count} }} from './t{(i + 2) % count}';\n"
            f"export class C{i} extends Base {{ m(): number {{ return g{(i + 2) % count}(); }} }}\n"
            f"export function g{i}(): number {{ return {i}; }}\n"
        )
        files[f"go/p{i % 2}/f{i}.go"] = (
            f'package p{i % 2}\n\nimport "fmt"\n\n'
            f"func F{i}() {{ fmt.Println(F{(i + 2) % count}) }}\n"
        )
        files[f"java/com/x/J{i}.java"] = (
            f"package com.x;\nimport com.x.J{(i + 1) % count};\n"
            f"public class J{i} extends J{(i + 1) % count} {{\n"
            f"  void m() {{ new J{(i + 1) % count}().m(); }}\n}}\n"
        )
        files[f"rs/src/m{i}.rs"] = (
            f"use crate::m{(i + 1) % count}::h{(i + 1) % count};\n"
            f"pub struct S{i};\nimpl S{i} {{ pub fn go(&self) {{ h{(i + 1) % count}(); }} }}\n"
            f"pub fn h{i}() {{}}\n"
        )
    files["go.mod"] = "module example.com/ws\n\ngo 1.21\n"
    files["py/binary.py"] = b"\x00\x01\x02 not source"
    files["py/big.py"] = "x = 1\n" * 2000  # 12,000 bytes: over max_file_bytes below
    files["py/broken.py"] = "def broken(:\n    return [\n\nclass Fine:\n    pass\n"
    files["js/broken.js"] = "function ( { return ; \nexport function ok() {}\n"
    return files


def make_workspace(root: Path) -> Workspace:
    root.mkdir(parents=True)
    write_tree(root, mixed_files())
    # unreadable wherever the test runs (root reads a file whatever its mode): a listed
    # "file" that is a link to a folder inside (git lists the link)
    os.symlink(root / "py" / "pkg0", root / "py" / "folder.py")
    git(root, "init", "-q")
    return Workspace.open(root)


def config(workers: int, **more: object) -> IndexConfig:
    return IndexConfig(max_file_bytes=8000, workers=workers, workers_min_files=1, **more)  # type: ignore[arg-type]


def index(ws: Workspace, db: Path, workers: int, **kwargs: object):  # type: ignore[no-untyped-def]
    with CodeGraph(ws, config(workers), db_path=db) as graph:
        return graph.index(**kwargs)  # type: ignore[arg-type]


def children_of(pid: int) -> set[int]:
    """Live child processes of ``pid`` (Linux /proc).

    A thread that ends between the listing and the read is skipped: its children, if any,
    now belong to another thread of the process, which is read too. The CI run of 8516924
    failed on one such thread ("No such file or directory: /proc/…/task/…/children") while
    the index's own threads were winding down after the run."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / "children").read_text()
        except (FileNotFoundError, ProcessLookupError):
            continue
        found.update(int(p) for p in text.split())
    return found


needs_proc = pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task").is_dir(), reason="reads /proc"
)


def test_workers_build_the_graph_one_process_builds(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    alone = index(ws, tmp_path / "alone.sqlite", 0)
    pooled = index(ws, tmp_path / "pooled.sqlite", 2)
    assert alone.workers == 0 and alone.worker_cpu_seconds == 0
    assert pooled.workers == min(2, worker_count(None))
    assert pooled.worker_cpu_seconds > 0 and pooled.cpu_seconds > pooled.worker_cpu_seconds
    assert pooled.worker_peak_rss_mb > 0
    assert digest(tmp_path / "alone.sqlite") == digest(tmp_path / "pooled.sqlite")
    assert pooled.notes == alone.notes and pooled.changed_files == alone.changed_files
    notes = "\n".join(pooled.notes)
    for expected in ("py/binary.py: skipped: binary content",
                     "py/big.py: skipped: 12000 bytes is over index.max_file_bytes (8000)",
                     "py/folder.py: unreadable: Is a directory",
                     "py/broken.py: syntax errors: partial structure"):  # fmt: skip
        assert expected in notes
    assert pooled.files_indexed == alone.files_indexed > 170

    # a run over a changed tree: edits, a touch (same bytes, new time), a new and a gone file
    root = ws.root
    (root / "py/pkg0/mod0.py").write_text("def helper0(x):\n    return x\n")
    (root / "js/lib1.js").write_text("export function f1() { return 1; }\n")
    os.utime(root / "ts/t3.ts", ns=(1, 1))
    (root / "py/pkg1/new.py").write_text("from py.pkg0.mod0 import helper0\nhelper0(1)\n")
    (root / "rs/src/m2.rs").unlink()
    again_alone = index(ws, tmp_path / "alone.sqlite", 0)
    again_pooled = index(ws, tmp_path / "pooled.sqlite", 2)
    assert again_pooled.workers == pooled.workers
    assert again_pooled.files_unchanged == again_alone.files_unchanged
    assert again_pooled.changed_files == again_alone.changed_files
    assert digest(tmp_path / "alone.sqlite") == digest(tmp_path / "pooled.sqlite")


def test_few_files_to_parse_stay_in_process(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    with CodeGraph(
        ws, IndexConfig(workers=2, workers_min_files=10_000), db_path=tmp_path / "g.sqlite"
    ) as graph:
        report = graph.index()
    assert report.workers == 0 and report.worker_cpu_seconds == 0 and report.files_indexed > 170


@needs_proc
def test_cancel_mid_parse_resumes_to_the_same_graph_and_ends_the_workers(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    index(ws, tmp_path / "straight.sqlite", 0)
    # children of this process that earlier tests left (a session's S3 server): not ours
    before = children_of(os.getpid())
    calls = 0

    def cancel() -> bool:
        nonlocal calls
        calls += 1
        return calls > 40  # mid-parse: past one chunk of files, before the first commit

    cut = index(ws, tmp_path / "cut.sqlite", 2, cancel=cancel)
    assert cut.interrupted and cut.workers >= 1
    assert children_of(os.getpid()) - before == set()
    resumed = index(ws, tmp_path / "cut.sqlite", 2)
    assert not resumed.interrupted and resumed.files_indexed > 0
    assert digest(tmp_path / "cut.sqlite") == digest(tmp_path / "straight.sqlite")


@needs_proc
def test_ctrl_c_rolls_back_and_leaves_no_process(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    index(ws, tmp_path / "straight.sqlite", 0)
    before = children_of(os.getpid())  # an earlier test's server is not ours

    def progress(done: int, total: int, rel: str) -> None:
        if done == 150:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        index(ws, tmp_path / "cut.sqlite", 2, progress=progress)
    assert children_of(os.getpid()) - before == set()
    index(ws, tmp_path / "cut.sqlite", 2)
    assert digest(tmp_path / "cut.sqlite") == digest(tmp_path / "straight.sqlite")


KILLED_RUN = """
import os, signal, sys
from pathlib import Path
from engram.codegraph import CodeGraph
from engram.config import IndexConfig
from engram.workspace import Workspace

def progress(done, total, rel):
    if done == 150:
        children = set()
        for task in Path(f"/proc/{os.getpid()}/task").iterdir():
            children.update((task / "children").read_text().split())
        Path(sys.argv[3]).write_text(" ".join(sorted(children)))
        os.kill(os.getpid(), signal.SIGKILL)

config = IndexConfig(max_file_bytes=8000, workers=2, workers_min_files=1)
CodeGraph(Workspace.open(Path(sys.argv[1])), config, db_path=Path(sys.argv[2])).index(progress)
"""


@needs_proc
def test_a_run_killed_mid_parse_resumes_and_its_workers_exit(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    index(ws, tmp_path / "straight.sqlite", 0)
    pids_file = tmp_path / "pids"
    done = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, str(ws.root), str(tmp_path / "cut.sqlite"),
         str(pids_file)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        capture_output=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == -signal.SIGKILL, done.stderr.decode()
    workers = {int(p) for p in pids_file.read_text().split()}
    assert workers, "the killed run had parse workers"
    # orphaned workers see their pipe close and exit (bounded wait, not a timing assert)
    deadline = time.monotonic() + 60
    while any(Path(f"/proc/{p}").exists() for p in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    alive = {p for p in workers if Path(f"/proc/{p}").exists()}
    alive = {p for p in alive if "parse_worker" in Path(f"/proc/{p}/cmdline").read_text()}
    assert alive == set()
    resumed = index(ws, tmp_path / "cut.sqlite", 2)
    assert resumed.files_indexed > 0
    assert digest(tmp_path / "cut.sqlite") == digest(tmp_path / "straight.sqlite")


def tasks_for(ws: Workspace, rels: list[str]) -> list[Task]:
    tasks: list[Task] = []
    for rel in rels:
        path = ws.root / rel
        stat = path.stat() if path.exists() else None
        tasks.append(
            (rel, stat.st_size if stat else 10, stat.st_mtime_ns if stat else 1, None, None)
        )
    return tasks


def in_process(ws: Workspace, tasks: list[Task]) -> list[Examined]:
    from tree_sitter import Parser

    from engram.codegraph.extract import parse

    parser, registry, reader = Parser(), LanguageRegistry(), ws.bulk_reader()
    return [
        examine(t, read=reader.read_bytes, max_file_bytes=8000, registry=registry,
                parse_tree=lambda loaded, data: parse(parser, loaded, data), pack=True)
        for t in tasks
    ]  # fmt: skip


def pool(ws: Workspace, workers: int = 2) -> ParsePool:
    return ParsePool(workers, root=ws.root, max_file_bytes=8000, query_root=None, pack=True)


def test_a_link_out_of_the_workspace_is_refused_in_a_worker(tmp_path: Path) -> None:
    """The walker leaves links that point out off the list; a worker given one anyway (a
    file swapped for a link after listing) refuses it as ``Workspace.read_bytes`` does."""
    ws = make_workspace(tmp_path / "ws")
    outside = tmp_path / "home"
    (outside / "lib").mkdir(parents=True)
    (outside / "credentials.py").write_text("aws_secret_access_key = 'wJalrXUtnFEMI'\n")
    (outside / "lib" / "leak.py").write_text("secret = 'wJalrXUtnFEMI'\n")
    os.symlink(outside / "credentials.py", ws.root / "py" / "settings.py")
    os.symlink(outside / "lib", ws.root / "vendor")
    rels = ["py/settings.py", "vendor/leak.py", "py/pkg0/mod0.py"]
    tasks = tasks_for(ws, rels)
    workers = pool(ws)
    try:
        found = list(workers.results(tasks))
    finally:
        workers.close()
    assert found == in_process(ws, tasks)
    for refused in found[:2]:
        assert refused is not None and refused.status == "error" and refused.rows is None
        assert refused.note is not None and "outside the workspace" in refused.note
    assert "wJalrXUtnFEMI" not in repr(found)
    assert found[2] is not None and found[2].status == "ok" and found[2].rows is not None


def test_workers_that_die_have_their_files_done_again(tmp_path: Path) -> None:
    """A worker that dies mid-chunk (a grammar that crashes the interpreter) has its files
    retried one by one in a new worker; the results are those of one process."""
    ws = make_workspace(tmp_path / "ws")
    rels = sorted(p.relative_to(ws.root).as_posix() for p in ws.root.rglob("*.*") if p.is_file())
    tasks = tasks_for(ws, rels)
    workers = pool(ws)
    found: list[Examined | None] = []
    try:
        for result in workers.results(tasks):
            found.append(result)
            if len(found) in (1, 40):
                for worker in list(workers._workers):
                    worker.process.kill()
    finally:
        workers.close()
    assert workers.started > 2
    expected = in_process(ws, tasks)
    for got, want in zip(found, expected, strict=True):
        # a file whose worker died with it alone is "crashed": the caller stores it as
        # "parse failed" (test below); every other file is the one-process answer
        assert got == want or (got is not None and got.status == "crashed")


def test_a_file_that_kills_its_worker_gets_a_parse_failed_row(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws")
    with CodeGraph(ws, config(0), db_path=tmp_path / "g.sqlite") as graph:
        graph.index()
        rel = "py/pkg0/mod0.py"
        stat = (ws.root / rel).stat()
        graph._db().execute("BEGIN")
        found = graph._examine(rel, stat.st_size, stat.st_mtime_ns, None, died="signal 11")
        outcome = graph._store_examined(rel, stat.st_size, stat.st_mtime_ns, None, found)
        graph._db().commit()
        assert outcome == ("ok", "parse failed: the parser process died on it (signal 11)")
        row = (
            graph._db()
            .execute("SELECT status, note, language FROM files WHERE path=?", (rel,))
            .fetchone()
        )
        assert row == ("ok", "parse failed: the parser process died on it (signal 11)", "python")


@pytest.mark.parametrize("how", ["no socket", "workers exit at start"])
def test_no_worker_starts_the_run_goes_on_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    ws = make_workspace(tmp_path / "ws")
    index(ws, tmp_path / "straight.sqlite", 0)
    if how == "no socket":

        def refuse() -> None:
            raise OSError(24, "Too many open files")

        monkeypatch.setattr(parse_worker.socket, "socketpair", refuse)
    else:  # an interpreter that cannot import the worker, say
        monkeypatch.setattr(parse_worker, "_CHILD_CODE", "raise SystemExit(3)")
    report = index(ws, tmp_path / "fallback.sqlite", 2)
    assert report.workers == 0
    assert report.files_indexed > 170
    assert "in-process" in caplog.text
    assert digest(tmp_path / "fallback.sqlite") == digest(tmp_path / "straight.sqlite")


def test_a_repository_cannot_ask_for_more_workers_than_cpus(tmp_path: Path) -> None:
    """``index.workers`` from a repository's own settings is untrusted (docs/security.md)."""
    cpus = worker_count(10_000)
    assert 1 <= cpus <= (os.cpu_count() or 1)
    assert worker_count(-3) == 0 and worker_count(0) == 0 and worker_count(1) == 1
    assert worker_count(None) == min(cpus, 8)
    ws = make_workspace(tmp_path / "ws")
    (ws.root / ".engram").mkdir()
    (ws.root / ".engram" / "config.toml").write_text(
        textwrap.dedent(
            """
            [index]
            workers = 100000
            workers_min_files = 1
            """
        )
    )
    loaded = load_config(ws, environ={"HOME": str(tmp_path / "home")})
    assert loaded.index.workers == 100000  # what the file says ...
    with CodeGraph(ws, loaded, db_path=tmp_path / "g.sqlite") as graph:
        report = graph.index()
    assert 1 <= report.workers <= cpus  # ... is not what runs
    assert json.dumps(report.to_dict())  # the report (the CLI's --json) carries the figures


def test_engram_index_json_stays_clean_with_workers(tmp_path: Path) -> None:
    """``engram index --json`` (and the language server's JSON-RPC, on stdout too) with
    workers on: the workers' stdout is not the CLI's, and the environment's settings reach
    them (``ENGRAM_INDEX__WORKERS_MIN_FILES``)."""
    ws = make_workspace(tmp_path / "ws")
    noisy = tmp_path / "noisy"  # every worker prints to its stdout as it starts
    noisy.mkdir()
    (noisy / "sitecustomize.py").write_text(
        "import sys\nif any('child_main' in a for a in sys.orig_argv):\n"
        "    print('a worker talking', flush=True)\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "engram", "index", "--no-embed", "--json",
         "--workspace", str(ws.root)],
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(noisy), *sys.path]),
             "ENGRAM_EMBED__MODEL": "none", "ENGRAM_INDEX__WORKERS": "2",
             "ENGRAM_INDEX__WORKERS_MIN_FILES": "1", "HOME": str(tmp_path / "home")},
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    code = json.loads(done.stdout)["code"]
    assert code["workers"] == min(2, worker_count(None)) and code["files_indexed"] > 170
    assert code["cpu_seconds"] > code["worker_cpu_seconds"] > 0
