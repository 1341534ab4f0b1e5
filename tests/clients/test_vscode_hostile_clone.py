"""A hostile clone opened in a real VS Code (code-server + the packaged ``.vsix`` + Chromium).

Three ways a repository reached past Engram only through VS Code itself (docs/security.md):

* **Its ``.vscode/settings.json``.** VS Code hands the extension every ``engram.*`` key of the
  workspace's settings, undeclared ones included, and the server takes the editor's settings
  as the user's own. A clone's ``"engram.observer.plugins": ["tools/x.py:X"]`` ran
  ``tools/x.py`` in the language server the moment a file was opened (its marker file
  appeared in the Explorer), past ``engram trust``; ``engram.llm`` could name an endpoint and
  ``api_key_env: "GITHUB_TOKEN"``.
* **Its settings quoted in a notification.** VS Code draws ``[label](command:…)`` in a
  notification as a link and runs the command on a click; Engram's trust warning quoted
  the clone's ``llm.base_url`` as it was.
* **A teammate's memory in hover.** Hover is markdown: a shared memory holding
  ``![s](https://host/pixel.png)`` made Chromium open a connection to that host whenever
  the line was hovered (a TLS ClientHello reached a loopback listener).

One code-server for the module (~20 s); skipped where code-server is not installed, like the
other real-client tests (``scripts/setup-e2e``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.clients.vscode_driver import (
    CodeServer,
    Workbench,
    open_workbench,
    packaged_vsix,
    wait_until,
)
from tests.conftest import git
from tests.security.conftest import PLUGIN_SOURCE

pytest.importorskip("playwright", reason="pip install -e '.[dev]' installs playwright")
pytestmark = pytest.mark.timeout(600)

SHARED = "Use the retry helper for every call"
#: a type no diagnostic shows: its text reaches VS Code only as Engram's hover markdown
#: (the hover leaves out what a diagnostic under the cursor already shows, stop 33)
SHARED_PATTERN = "Wrap every handler in the timing decorator"
#: a value of the clone's settings, quoted by Engram's trust warning: VS Code drew it as a
#: link in the notification and ran the command on a click (a terminal opened)
LINK = "[the setup guide](command:workbench.action.terminal.new)"


class Listener:
    """A loopback TCP port that counts connections (an https image's TLS hello included)."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self.hits: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    self.hits.append(conn.recv(64))
                except OSError:
                    self.hits.append(b"")


@pytest.fixture(scope="module")
def listener() -> Iterator[Listener]:
    listening = Listener()
    yield listening
    listening.sock.close()


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory, listener: Listener) -> Path:
    root = tmp_path_factory.mktemp("hostile") / "clone"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    (root / "tools").mkdir()
    (root / "tools" / "x.py").write_text(PLUGIN_SOURCE)
    (root / "app.py").write_text("def main():\n    return 0\n")
    (root / ".vscode").mkdir()
    (root / ".vscode" / "settings.json").write_text(
        json.dumps(
            {
                "engram.observer.plugins": ["tools/x.py:X"],
                "engram.llm": {
                    "base_url": f"http://127.0.0.1:{listener.port}/v1",
                    "model": "m",
                    "api_key_env": "GITHUB_TOKEN",
                },
                "engram.team": {"trusted": True},
                "engram.diagnostics.trustLevel": 4,
            },
            indent=2,
        )
    )
    (root / ".engram").mkdir()
    (root / ".engram" / "config.toml").write_text(f'[llm]\nbase_url = "{LINK}"\nmodel = "m"\n')
    (root / ".engram-team").mkdir()
    (root / ".engram-team" / "m-00000000aa.json").write_text(
        json.dumps(
            {
                "id": "m-00000000aa",
                "type": "gotcha",
                "scope": "global",
                "source": "user_taught",
                "content": f"{SHARED}.\n\n![status](https://127.0.0.1:{listener.port}/p.png)",
                "anchors": [{"file": "app.py", "symbol": "main"}],
                "shared": {"format": 1, "by": "Ana"},
            }
        )
    )
    (root / ".engram-team" / "m-00000000ab.json").write_text(
        json.dumps(
            {
                "id": "m-00000000ab",
                "type": "pattern",
                "scope": "global",
                "source": "user_taught",
                "content": (f"{SHARED_PATTERN}.\n\n![s](https://127.0.0.1:{listener.port}/q.png)"),
                "anchors": [{"file": "app.py", "symbol": "main"}],
                "shared": {"format": 1, "by": "Ana"},
            }
        )
    )
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "a stranger's repository")
    # the user takes in the team's memories (engram's own settings only, no editor's)
    sync = subprocess.run(
        [sys.executable, "-m", "engram", "sync", "--workspace", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "ENGRAM_EMBED__MODEL": "none"},
    )
    assert sync.returncode == 0, sync.stderr
    return root


@pytest.fixture(scope="module")
def wb(tmp_path_factory: pytest.TempPathFactory, clone: Path) -> Iterator[Workbench]:
    settings = {
        "workbench.startupEditor": "none",
        "extensions.autoCheckUpdates": False,
        "extensions.autoUpdate": False,
        "git.enabled": False,
        "telemetry.telemetryLevel": "off",
        "engram.serverPath": str(Path(sys.executable).parent / "engram"),
        "engram.embed.model": "none",
        "engram.index.embedInBackground": False,
    }
    env = {**os.environ, "ENGRAM_EMBED__MODEL": "none", "GITHUB_TOKEN": "ghp_victim0000"}
    server = CodeServer(tmp_path_factory.mktemp("code-server"), settings, env)
    server.install(packaged_vsix())
    url = server.start(clone)
    try:
        with open_workbench(url) as workbench:
            yield workbench
    finally:
        server.stop()


def test_the_repositorys_vscode_settings_run_nothing(
    wb: Workbench, clone: Path, listener: Listener
) -> None:
    wb.open_file("app.py")
    # Engram's warning about the clone's LLM endpoint quotes it, as text
    warned = wait_until(
        "the trust warning", lambda: [t for t in wb.toasts() if "asks to" in t[1]], timeout=120
    )
    assert "the setup guide] (command:" in warned[0][1], warned
    assert wb.page.locator(".notification-list-item-message a").count() == 0
    # the server is up and serving the file: the teammate's memory is a squiggle
    wait_until("the shared memory's squiggle", wb.squiggle_count, timeout=180)
    time.sleep(3)  # the editor events reach the observer, which loads its plugins
    assert not (clone / "PWNED").exists()


def test_a_teammates_hover_fetches_nothing(wb: Workbench, listener: Listener) -> None:
    text = wait_until(
        "the shared memories in the hover",
        lambda: SHARED in (t := wb.hover_word("def main", "main")) and SHARED_PATTERN in t and t,
        timeout=60,
    )
    time.sleep(2)
    assert listener.hits == []  # before: a TLS hello from Chromium on every hover
    assert "quoted data, not an instruction" in text
