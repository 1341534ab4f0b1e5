"""Fixtures for the language server tests: a seeded workspace and a real server process."""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tests.conftest import close_language_client, git

from engram.workspace import Workspace

APP_SOURCE = '''"""A tiny module with a few functions."""


def parse_config(path):
    """Read the config file."""
    with open(path) as fh:
        return fh.read()


def connect(url, retries=3):
    for attempt in range(retries):
        pass
    return url


class Cache:
    def get(self, key):
        return None
'''

#: Settings every test server gets: no embedding model (keyword search only; fast), and no
#: background ``engram index`` child writing to the store while a test asserts on it.
FAST = {
    "embed": {"model": "none"},
    "diagnostics": {"debounceMs": 50},
    "index": {"embedInBackground": False},
}


def seed(root: Path, memories: list[dict[str, Any]]) -> list[str]:
    """Remember memories through the real engine (as the CLI would); returns ids."""
    from engram.app import Engine
    from engram.app.remember import remember

    with Engine.open(Workspace.open(root), {"embed": {"model": "none"}}) as engine:
        return [remember(engine, m.pop("content"), **m).memory.id for m in memories]


@pytest.fixture
def app_workspace(tmp_workspace: Workspace) -> Workspace:
    """A git repo with ``src/app.py`` committed, set up for Engram (its ``.engram/``, as
    any ``engram`` command there leaves it): a server leaves a folder nobody set up out."""
    src = tmp_workspace.root / "src"
    src.mkdir()
    (src / "app.py").write_text(APP_SOURCE)
    (src / "util.py").write_text("import app\n\n\ndef helper():\n    return 1\n")
    git(tmp_workspace.root, "add", ".")
    git(tmp_workspace.root, "commit", "-q", "-m", "init")
    tmp_workspace.ensure_engram_dir()
    return tmp_workspace


def uri(path: Path) -> str:
    return path.resolve().as_uri()


@contextlib.asynccontextmanager
async def lsp_session(
    roots: list[Path],
    *,
    preset: str = "visual-studio-code",
    options: dict[str, Any] | None = None,
    client_name: str | None = None,
    capabilities: types.ClientCapabilities | None = None,
    configuration: dict[str, Any] | None = None,
    before_init: Callable[[LanguageClient], None] | None = None,
    server_command: list[str] | None = None,
    server_env: dict[str, str] | None = None,
    fast: bool = True,
) -> AsyncIterator[LanguageClient]:
    """A real ``engram serve`` process driven by a pytest-lsp client.

    ``fast`` adds :data:`FAST` to the initialization options; tests of the workspace
    engine pass False so the editor asks for nothing the engine's own settings lack.
    """
    config = ClientServerConfig(
        server_command=server_command or [sys.executable, "-m", "engram", "serve"],
        server_env=server_env,
    )
    client = await config.start()
    assert isinstance(client, LanguageClient)
    if configuration is not None:
        client.set_configuration(configuration, section="engram")
    if before_init is not None:
        before_init(client)
    caps = capabilities or client_capabilities(preset)
    folders = [types.WorkspaceFolder(uri=uri(r), name=r.name) for r in roots]
    try:
        result = await client.initialize_session(
            types.InitializeParams(
                capabilities=caps,
                root_uri=folders[0].uri,
                workspace_folders=folders,
                initialization_options={**(FAST if fast else {}), **(options or {})},
                client_info=types.ClientInfo(name=client_name or preset),
            )
        )
        client.init_result = result  # type: ignore[attr-defined]
        yield client
    except BaseException:
        await close_language_client(client)
        raise
    killed = await close_language_client(client)
    assert not killed, "the server did not exit when told to (shutdown, then exit)"


def progress_ends(client: LanguageClient) -> list[types.WorkDoneProgressEnd]:
    return [
        v
        for values in client.progress_reports.values()
        for v in values
        if isinstance(v, types.WorkDoneProgressEnd)
    ]


async def wait_for(predicate: Callable[[], Any], timeout: float = 60.0, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out waiting for {what or predicate}")


async def wait_ready(client: LanguageClient, folders: int = 1) -> None:
    """Until every folder's start-up progress has ended (``ready``)."""
    await wait_for(
        lambda: sum(1 for e in progress_ends(client) if e.message == "ready") >= folders,
        what="server ready",
    )


async def open_doc(client: LanguageClient, path: Path, language: str = "python") -> str:
    doc_uri = uri(path)
    client.text_document_did_open(
        types.DidOpenTextDocumentParams(
            text_document=types.TextDocumentItem(
                uri=doc_uri, language_id=language, version=1, text=path.read_text()
            )
        )
    )
    return doc_uri


async def command(client: LanguageClient, name: str, args: Any = None) -> Any:
    return await client.workspace_execute_command_async(
        types.ExecuteCommandParams(command=name, arguments=None if args is None else [args])
    )


def action_commands(actions: Any) -> list[tuple[str, str, list[Any]]]:
    """(title, command, arguments) of code actions.

    lsprotocol's client-side structuring of ``(Command | CodeAction)[]`` mistakes a
    CodeAction for a Command and stringifies its nested command (a client library quirk;
    the JSON the server sends is a proper CodeAction), so both shapes are read here.
    """
    import ast

    out: list[tuple[str, str, list[Any]]] = []
    for action in actions or []:
        if isinstance(action, types.CodeAction) and action.command is not None:
            out.append((action.title, action.command.command, list(action.command.arguments or [])))
        elif isinstance(action, types.Command):
            inner = action.command
            if inner.startswith("{"):
                parsed = ast.literal_eval(inner)
                out.append((action.title, parsed["command"], list(parsed.get("arguments") or [])))
            else:
                out.append((action.title, inner, list(action.arguments or [])))
    return out
