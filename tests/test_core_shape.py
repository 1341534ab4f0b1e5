"""Issue 14's scenarios: each failed on the core before the restructuring."""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram.anchors import LineSpan
from engram.app.history_sync import AnchorFinder
from engram.lsp.anchors import locate_anchor
from engram.model import CodeAnchor, content_hash
from engram.workspace import uri_to_path

ROOT = Path(__file__).resolve().parents[1]


def test_layers_hold_and_there_are_no_import_cycles() -> None:
    """import-linter: front ends > api > app > domain > store/embed > foundations."""
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint is not None, "import-linter is a dev dependency"
    run = subprocess.run([lint], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]


def test_a_windows_file_uri_is_a_drive_path() -> None:
    """The LSP used to turn file:///C:/… into /C:/… (urlparse); pygls.uris knows drives."""
    path = uri_to_path("file:///C:/work/a%20b.py")
    assert path is not None and str(path).lower().startswith("c:") and path.name == "a b.py"
    assert uri_to_path("untitled:Untitled-1") is None


def test_the_editor_and_the_index_place_a_moved_anchor_alike(tmp_path: Path) -> None:
    """One relocator: the LSP and engram index agree where a memory sits now."""
    body = ["def charge(amount):", "    return amount * 100", ""]
    text = ["import os", "", *body]
    anchor = CodeAnchor(
        file="billing.py",
        start_line=0,
        end_line=1,
        content_hash=content_hash("\n".join(body[:2])),
    )
    (tmp_path / "billing.py").write_text("\n".join(text))
    in_editor = locate_anchor(anchor, text)
    on_disk = AnchorFinder(tmp_path).find(anchor)
    assert in_editor == LineSpan(2, 3) and on_disk == 2


def test_one_content_hash_for_anchors_and_indexed_files() -> None:
    import engram.codegraph.graph as graph

    assert graph.content_hash is content_hash  # no second (blake2b) hash of file contents


def test_a_settings_change_never_closes_an_engine_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The old engine may be serving a hover in a thread: it is retired, closed at exit."""
    from engram.config import EmbedConfig, EngramConfig
    from engram.lsp.folder import Folder
    from engram.lsp.handlers import lifecycle

    class FakeEngine:
        def __init__(self, model: str) -> None:
            self.config = EngramConfig(embed=EmbedConfig(model=model))
            self.closed = False

        def close(self) -> None:
            self.closed = True

    class FakeServer:
        def __init__(self, folder: Folder) -> None:
            self.folders = {folder.uri: folder}
            self.docs: dict[str, Any] = {}

        async def fetch_overrides(self, folder: Folder) -> dict[str, Any]:
            return {"embed": {"model": "other"}}

        def configure_folder(self, folder: Folder, config: EngramConfig) -> None:
            folder.config = config

        def request_pull_refresh(self) -> None:
            pass

    folder = Folder("file:///ws", tmp_path)
    old = FakeEngine("none")
    folder.engine = old  # type: ignore[assignment]
    monkeypatch.setattr(lifecycle, "open_engine_blocking", lambda root, o: FakeEngine("other"))
    asyncio.run(lifecycle.reload_settings(FakeServer(folder), folder.uri))  # type: ignore[arg-type]
    assert folder.engine is not old and not old.closed
    assert folder.retired == [old]
