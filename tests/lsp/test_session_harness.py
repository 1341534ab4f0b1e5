"""The language server tests' own harness: a session ends its server, however slow the
server's shutdown (``tests.conftest.close_language_client``)."""

from __future__ import annotations

import asyncio
import sys

from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities
from tests.conftest import close_language_client

from engram.workspace import Workspace

# ``engram serve`` whose shutdown takes 3 s (closing a folder), as a loaded machine's did
SLOW_SHUTDOWN = """
import sys, time
import engram.lsp.handlers.lifecycle as lifecycle
real = lifecycle.retire
def retire(folder):
    time.sleep(3)
    real(folder)
lifecycle.retire = retire
from engram.lsp import run_server
sys.exit(run_server())
"""


async def test_a_shutdown_slower_than_its_limit_still_ends_the_server(
    app_workspace: Workspace,
) -> None:
    """The sessions gave the shutdown 10 s and then only waited for the server: one that
    took longer was never told ``exit`` and the run hung on it (tests/lsp at load 15)."""
    root = app_workspace.root
    config = ClientServerConfig(server_command=[sys.executable, "-c", SLOW_SHUTDOWN])
    client = await config.start()
    assert isinstance(client, LanguageClient)
    folder = types.WorkspaceFolder(uri=root.as_uri(), name=root.name)
    await client.initialize_session(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=folder.uri,
            workspace_folders=[folder],
            initialization_options={"embed": {"model": "none"}},
        )
    )
    server = client._server
    assert server is not None
    # the shutdown is given 1 s of its 3: the session still ends, and so does the server
    await asyncio.wait_for(close_language_client(client, limit=1.0), 120)
    assert server.returncode is not None
