"""``engram serve`` with the workspace engine: thin, quick, and every window current."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tests.conftest import close_language_client, git

from engram.workspace import Workspace

from .conftest import EngineEnv

SOURCE = (
    "def charge(amount):\n    return round(amount * 100)\n\n\n"
    "def refund(amount):\n    return -amount\n"
)
T = TypeVar("T")
HEAVY = ("lancedb", "pyarrow", "numpy", "onnxruntime", "fastembed", "tree_sitter")


@contextlib.asynccontextmanager
async def window(
    engine_env: EngineEnv,
    extra_env: dict[str, str] | None = None,
    capabilities: types.ClientCapabilities | None = None,
) -> AsyncIterator[LanguageClient]:
    """A real ``engram serve`` (a VS Code-like client) on the test's workspace."""
    env = {**engine_env.env, **(extra_env or {})}
    config = ClientServerConfig(
        server_command=[sys.executable, "-m", "engram", "serve"], server_env=env
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)
    root = engine_env.root
    await client.initialize_session(
        types.InitializeParams(
            capabilities=capabilities or client_capabilities("visual-studio-code"),
            root_uri=root.as_uri(),
            workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name=root.name)],
            initialization_options={"diagnostics": {"debounceMs": 50}},
            client_info=types.ClientInfo(name="visual-studio-code"),
        )
    )
    try:
        yield client
    except BaseException:
        await close_language_client(client)
        raise
    killed = await close_language_client(client)
    assert not killed, "the server did not exit when told to (shutdown, then exit)"


def open_doc(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=uri, language_id="python", version=1, text=path.read_text()
            )
        )
    )
    return uri


async def wait_for(predicate: Any, seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        await asyncio.sleep(0.05)


def messages(client: LanguageClient, uri: str) -> list[str]:
    return [d.message for d in client.diagnostics.get(uri, [])]


@pytest.fixture
def billing(engine_env: EngineEnv) -> Path:
    """``billing.py`` committed in a repository set up for Engram (its ``.engram/``): a
    window leaves a folder nobody set up out (docs/lsp.md "Which folders are served")."""
    src = engine_env.root / "billing.py"
    src.write_text(SOURCE)
    git(engine_env.root, "add", ".")
    git(engine_env.root, "commit", "-q", "-m", "init")
    Workspace(engine_env.root).ensure_engram_dir()
    return src


@pytest.mark.timeout(300)
async def test_serve_stays_thin_and_windows_see_each_others_writes(
    engine_env: EngineEnv, billing: Path, tmp_path: Path
) -> None:
    first = engine_env.run(
        "remember", "--file", "billing.py", "--line", "1", "charge() takes euros, not cents"
    )
    assert first.code == 0, first.err
    modules_a = tmp_path / "modules-a.json"
    async with (
        window(engine_env, {"ENGRAM_LSP_MODULES_FILE": str(modules_a)}) as a,
        window(engine_env) as b,
    ):
        uri_a = open_doc(a, billing)
        uri_b = open_doc(b, billing)
        await wait_for(lambda: any("euros" in m for m in messages(a, uri_a)))
        await wait_for(lambda: any("euros" in m for m in messages(b, uri_b)))

        hover = await a.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri_a),
                position=types.Position(line=0, character=5),
            )
        )
        assert hover is not None and "euros" in str(hover.contents)

        # a CLI write shows up in both windows without a poll
        second = engine_env.run(
            "remember", "--file", "billing.py", "--line", "5", "refund() must stay negative"
        )
        assert second.code == 0, second.err
        await wait_for(lambda: any("negative" in m for m in messages(a, uri_a)), 20)
        await wait_for(lambda: any("negative" in m for m in messages(b, uri_b)), 20)

        status = json.loads(engine_env.run("status", "--json").out)
        kinds = sorted(c["kind"] for c in status["clients"])
        assert kinds == ["lsp", "lsp"]
        for pid in (p for p in _server_pids(status)):
            maps = Path(f"/proc/{pid}/maps").read_text()
            assert not any(h in maps for h in ("lancedb", "pyarrow", "onnxruntime")), pid
    loaded = set(json.loads(modules_a.read_text()))
    assert not [m for m in loaded if m.split(".")[0] in HEAVY]
    # the digest lives in engram.store (its package imports nothing until a name is used);
    # no store that opens LanceDB, and no embedding code, is loaded
    light = {"engram.store", "engram.store.digest"}
    assert not [m for m in loaded if m.startswith("engram.store") and m not in light]
    assert "engram.embed" not in loaded


def _server_pids(status: dict[str, Any]) -> list[int]:
    return [int(c["pid"]) for c in status["clients"] if c["kind"] == "lsp" and c["pid"]]


@pytest.mark.timeout(300)
async def test_first_diagnostics_come_from_the_digest_before_the_engine(
    engine_env: EngineEnv, billing: Path
) -> None:
    assert engine_env.run("remember", "--file", "billing.py", "--line", "1", "cents!").code == 0
    assert engine_env.run("stop").code == 0  # a cold start: no engine runs
    async with window(engine_env) as client:
        started = time.monotonic()
        uri = open_doc(client, billing)
        await wait_for(lambda: any("cents!" in m for m in messages(client, uri)), 60)
        first = time.monotonic() - started
    # the digest answers while the engine is still importing LanceDB (seconds here)
    assert first < 5.0, first


@pytest.mark.timeout(300)
async def test_a_killed_engine_is_replaced_and_the_window_goes_on(
    engine_env: EngineEnv, billing: Path
) -> None:
    assert engine_env.run("remember", "--file", "billing.py", "--line", "1", "before").code == 0
    async with window(engine_env) as client:
        uri = open_doc(client, billing)
        await wait_for(lambda: any("before" in m for m in messages(client, uri)))
        (pid,) = engine_env.engine_pids()
        os.kill(pid, 9)
        await asyncio.sleep(1.0)
        # the window reconnects (starting a new engine); a new write reaches it
        run = engine_env.run("remember", "--file", "billing.py", "--line", "5", "after")
        assert run.code == 0, run.err
        await wait_for(lambda: any("after" in m for m in messages(client, uri)), 60)
        assert engine_env.engine_pids() != [pid]


@pytest.mark.timeout(300)
async def test_a_conflict_is_marked_in_a_thin_window(engine_env: EngineEnv, billing: Path) -> None:
    """Issue 12's markers on the thin path: the engine sends each memory's conflict partners
    with the file's memories (they were dropped on the way)."""
    a = engine_env.run("remember", "--file", "billing.py", "--line", "1", "The job timeout is 30s.")
    assert a.code == 0, a.err
    async with window(engine_env) as client:
        uri = open_doc(client, billing)
        await wait_for(lambda: any("30s" in m for m in messages(client, uri)))
        b = engine_env.run(
            "remember", "--file", "billing.py", "--line", "1", "The job timeout is 90s."
        )
        assert b.code == 0, b.err
        await wait_for(lambda: sum("CONFLICT with" in m for m in messages(client, uri)) == 2, 30)
        hover = await client.text_document_hover_async(
            types.HoverParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                position=types.Position(line=0, character=5),
            )
        )
        assert hover is not None and "CONFLICT" in str(hover.contents).upper()


def test_the_digest_gives_conflict_partners_too(tmp_workspace: Workspace) -> None:
    from engram.app import Engine
    from engram.app.remember import remember
    from engram.config import EmbedConfig, EngramConfig
    from engram.lsp.remote import digest_memories

    (tmp_workspace.root / "jobs.py").write_text("TIMEOUT = 30\n")
    engine = Engine(tmp_workspace, EngramConfig(embed=EmbedConfig(model="none")))
    try:
        a = remember(engine, "The job timeout is 30s.", file="jobs.py", scope="global").memory
        b = remember(engine, "The job timeout is 90s.", file="jobs.py", scope="global").memory
    finally:
        engine.close()
    memories, partners = digest_memories(tmp_workspace.root, "jobs.py")
    assert {m.id for m in memories} == {a.id, b.id}
    assert partners[a.id] == [(b.id, b.content)] and partners[b.id] == [(a.id, a.content)]


@pytest.mark.timeout(300)
async def test_the_background_embedding_runs_in_the_windows_engine(
    engine_env: EngineEnv, billing: Path
) -> None:
    """The child ``engram index`` that embeds after the start-up index is forwarded to the
    engine the window is linked to. It was given the editor's embedding settings as
    ``ENGRAM_EMBED__*`` variables, which name another engine: in a real VS Code on click a
    second engine for the same workspace embedded and then held ~650 MB for its idle time."""
    assert engine_env.run("index", "--no-embed").code == 0  # a graph: the window indexes
    log = engine_env.root / ".engram" / "logs" / "background-index.log"
    async with window(engine_env) as client:
        open_doc(client, billing)
        await wait_for(lambda: log.exists() and "code search:" in log.read_text(), 120)
        pids = engine_env.engine_pids()
    assert len(pids) == 1, f"{len(pids)} engines for one workspace: {log.read_text()}"


@pytest.mark.timeout(300)
async def test_reindex_of_the_workspace_runs_in_the_engine(
    engine_env: EngineEnv, billing: Path
) -> None:
    """*Re-index Workspace* in a linked window indexes in the engine, also when sent before
    the window is linked. It opened an in-process engine: the thin server loaded LanceDB and
    the graph (52 -> 288 MB in a real VS Code on click) beside the engine that had them,
    until the window closed; sent early, it did so even after the previous fix."""
    async with window(engine_env) as client:
        open_doc(client, billing)
        # at once, before the folder is linked, which the command waits for (it opened
        # its own engine)
        result = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.reindex", arguments=[{}])
        )
        assert isinstance(result, dict) and result, result
        status = json.loads(engine_env.run("status", "--json").out)
        (pid,) = _server_pids(status)
        maps = Path(f"/proc/{pid}/maps").read_text()
        assert not any(h in maps for h in ("lancedb", "pyarrow", "onnxruntime"))
    graph = engine_env.root / ".engram" / "graph.sqlite"
    import sqlite3

    with contextlib.closing(sqlite3.connect(graph)) as db:
        files = [row[0] for row in db.execute("SELECT path FROM files")]
    assert "billing.py" in files


@pytest.mark.timeout(300)
async def test_a_pull_client_gets_no_push_before_its_folder_is_configured(
    engine_env: EngineEnv, billing: Path
) -> None:
    """VS Code pulls diagnostics and sends didOpen for the editors already open right after
    initialize. The digest-first answer to that didOpen was pushed, because the session's
    mode was push until the folder's settings were read: VS Code kept that pushed copy
    beside the pulled one (each memory twice in Problems, in a real VS Code on gs-ws), and
    it never went away, since nothing is pushed to a pull client afterwards."""
    assert engine_env.run("remember", "--file", "billing.py", "--line", "1", "euros!").code == 0
    caps = client_capabilities("visual-studio-code")  # pytest-lsp's: before pull diagnostics
    assert caps.text_document is not None and caps.workspace is not None
    caps.text_document.diagnostic = types.DiagnosticClientCapabilities()
    caps.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    async with window(engine_env, capabilities=caps) as client:
        uri = open_doc(client, billing)  # at once, as VS Code does for open editors

        async def pulled() -> list[str]:
            report = await client.text_document_diagnostic_async(
                types.DocumentDiagnosticParams(text_document=types.TextDocumentIdentifier(uri))
            )
            return [d.message for d in getattr(report, "items", None) or []]

        deadline = time.monotonic() + 60
        while not any("euros!" in m for m in await pulled()):
            assert time.monotonic() < deadline, "the pull never returned the memory"
            await asyncio.sleep(0.1)
        await asyncio.sleep(1.0)  # a late push would arrive by now
        assert not messages(client, uri), messages(client, uri)


@pytest.mark.timeout(300)
async def test_a_code_action_over_a_selection_keeps_the_window_thin(
    engine_env: EngineEnv, billing: Path, tmp_path: Path
) -> None:
    """VS Code asks for code actions at every selection, and the MCP hub's actions asked
    an engine for the folder's settings: the thin window opened its own (the store,
    LanceDB, pyarrow; 52 -> 214 MB in a real VS Code on gs-ws) beside the engine, and
    from then on read workspace diagnostics and re-indexed files in-process."""
    modules = tmp_path / "modules.json"
    async with window(engine_env, {"ENGRAM_LSP_MODULES_FILE": str(modules)}) as client:
        uri = open_doc(client, billing)
        for _ in range(600):  # the folder linked to the engine: a person selects later
            stats = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="engram.stats", arguments=[{}])
            )
            if stats.get("ready"):
                break
            await asyncio.sleep(0.1)
        selection = types.Range(types.Position(0, 0), types.Position(1, 10))
        await client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(uri=uri),
                range=selection,
                context=types.CodeActionContext(diagnostics=[]),
            )
        )
        await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.stats", arguments=[{}])
        )
    loaded = set(json.loads(modules.read_text()))
    assert "engram.app.engine" not in loaded
    # the hub's own tool ranking may load numpy; the store and the model stay out
    assert not [m for m in loaded if m.split(".")[0] in ("lancedb", "pyarrow", "onnxruntime")]
    assert not [m for m in loaded if m.startswith("engram.store.") and m != "engram.store.digest"]


def indexed_then_changed(engine_env: EngineEnv, billing: Path) -> None:
    """A memory, a code graph, then a changed file: a window's start-up index has work."""
    assert engine_env.run("remember", "--file", "billing.py", "--line", "1", "cents!").code == 0
    assert engine_env.run("index", "--no-embed").code == 0
    billing.write_text(SOURCE + "\n\ndef fee():\n    return 1\n")


def progress_of(client: LanguageClient, kind: type[T]) -> list[tuple[Any, T]]:
    """(token, value) of the ``$/progress`` values of one kind the window got."""
    return [
        (token, v)
        for token, values in client.progress_reports.items()
        for v in values
        if isinstance(v, kind)
    ]


@pytest.mark.timeout(300)
async def test_the_engines_start_up_index_says_whom_it_waits_for(
    engine_env: EngineEnv, billing: Path
) -> None:
    """``engram index`` runs in a terminal (it holds ``.engram/index.lock``; here this test
    holds it) as the editor starts: the workspace engine's start-up index waited for it
    and the window showed "indexing" with nothing moving. Its progress now names the
    process the lock names, the memories show meanwhile, and it indexes once let go."""
    from engram.app.index_lock import index_lock

    indexed_then_changed(engine_env, billing)

    def reports(client: LanguageClient) -> list[str]:
        return [v.message or "" for _, v in progress_of(client, types.WorkDoneProgressReport)]

    def ends(client: LanguageClient) -> list[str]:
        return [v.message or "" for _, v in progress_of(client, types.WorkDoneProgressEnd)]

    held: Any = index_lock(Workspace(engine_env.root))
    held.__enter__()
    try:
        async with window(engine_env) as client:
            uri = open_doc(client, billing)
            waits = lambda: [m for m in reports(client) if m.startswith("waiting for another")]  # noqa: E731
            await wait_for(waits)
            said = waits()[0]
            assert said.startswith(f"waiting for another index (pid {os.getpid()}"), said
            # the memories are served while it waits
            await wait_for(lambda: any("cents!" in m for m in messages(client, uri)))
            stats = await client.workspace_execute_command_async(
                types.ExecuteCommandParams(command="engram.stats", arguments=[{}])
            )
            assert str(stats["indexing"]).startswith("waiting for another index"), stats
            assert "ready" not in ends(client)  # it waits while the lock is held
            held.__exit__(None, None, None)
            held = None
            await wait_for(lambda: "ready" in ends(client), 120)
    finally:
        if held is not None:
            held.__exit__(None, None, None)


@pytest.mark.timeout(300)
async def test_cancelling_the_engines_start_up_index_stops_it(
    engine_env: EngineEnv, billing: Path
) -> None:
    """The window's start-up progress is cancellable (VS Code shows the button), and the
    cancel did nothing to the index the engine ran for it: here it kept waiting for the
    lock this test holds. It stops now; the folder is served, and the next index resumes."""
    from engram.app.index_lock import index_lock

    indexed_then_changed(engine_env, billing)
    with index_lock(Workspace(engine_env.root)):
        async with window(engine_env) as client:
            uri = open_doc(client, billing)

            def waiting() -> list[Any]:
                return [
                    token
                    for token, v in progress_of(client, types.WorkDoneProgressReport)
                    if (v.message or "").startswith("waiting for another index")
                ]

            await wait_for(waiting)
            client.window_work_done_progress_cancel(
                types.WorkDoneProgressCancelParams(token=waiting()[0])
            )
            # the progress ends while the lock is still held
            await wait_for(lambda: progress_of(client, types.WorkDoneProgressEnd), 30)
            await wait_for(lambda: any("cents!" in m for m in messages(client, uri)))


@pytest.mark.timeout(300)
async def test_a_folder_set_up_from_the_window_is_served_and_indexed_by_the_engine(
    engine_env: EngineEnv, tmp_path: Path
) -> None:
    """*Set Up This Folder* (``engram.setUp``) in a repository nobody set up: no engine
    and nothing written before it; then `.engram/`, the workspace engine (the thin server
    loads no store), its first index there, and the folder's memories in the window."""
    root = engine_env.root
    src = root / "billing.py"
    src.write_text(SOURCE)
    modules = tmp_path / "modules.json"
    async with window(engine_env, {"ENGRAM_LSP_MODULES_FILE": str(modules)}) as client:
        uri = open_doc(client, src)
        await asyncio.sleep(1.0)
        assert not (root / ".engram").exists() and not engine_env.engine_pids()
        done = await client.workspace_execute_command_async(
            types.ExecuteCommandParams(command="engram.setUp", arguments=[{}])
        )
        assert done["setUp"] is True and not done["error"], done
        assert engine_env.engine_pids()  # the workspace engine serves it
        graph = root / ".engram" / "graph.sqlite"

        def indexed() -> bool:
            import sqlite3

            if not graph.exists():
                return False
            with contextlib.closing(sqlite3.connect(graph)) as db:
                try:
                    return bool(
                        db.execute("SELECT 1 FROM files WHERE path = 'billing.py'").fetchall()
                    )
                except sqlite3.OperationalError:
                    return False

        await wait_for(indexed, 120)
        assert engine_env.run("remember", "--file", "billing.py", "--line", "1", "cents!").code == 0
        await wait_for(lambda: any("cents!" in m for m in messages(client, uri)))
    loaded = set(json.loads(modules.read_text()))
    assert not [m for m in loaded if m.split(".")[0] in ("lancedb", "pyarrow", "onnxruntime")]


@pytest.mark.timeout(300)
async def test_a_clone_shows_the_teams_memories_through_the_engine(engine_env: EngineEnv) -> None:
    """A teammate's clone (code and ``.engram-team/``, no ``.engram/``) opened in a window
    served by the workspace engine: the team folder is read at start, as in-process
    (tests/lsp/test_team_start.py; the window showed nothing until a manual sync)."""
    from tests.lsp.test_team_start import SHARED, teammates_clone

    shared = teammates_clone(engine_env.root)
    async with window(engine_env) as client:
        uri = open_doc(client, engine_env.root / "src" / "app.py")
        await wait_for(lambda: any(SHARED in m for m in messages(client, uri)))
        (diag,) = [d for d in client.diagnostics[uri] if d.source == "engram"]
        assert diag.data["id"] == shared and 'shared by "Ana"' in diag.message
