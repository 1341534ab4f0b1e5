"""The workspace engine applies a settings change by ``config.SECTION_RELOAD``, as the
language server does: a section read per request keeps the open (warm) engine, one baked
in at open (embed, store) gets a new engine and the old one closes after its last user."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.app import Engine
from engram.daemon.server import EngineSlot
from engram.workspace import Workspace


@pytest.fixture
def slot(tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch, tmp_path: Path):  # type: ignore[no-untyped-def]
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user settings
    (tmp_workspace.root / ".engram").mkdir(exist_ok=True)
    (tmp_workspace.root / ".engram" / "config.toml").write_text('[embed]\nmodel = "none"\n')
    opened: list[Engine] = []

    def opener() -> Engine:
        engine = Engine.open(tmp_workspace.root)
        opened.append(engine)
        return engine

    slot = EngineSlot(opener, lambda: None)
    slot.start()
    slot.opened = opened  # type: ignore[attr-defined]
    yield slot
    slot.close()


def write_config(workspace: Workspace, text: str) -> None:
    (workspace.root / ".engram" / "config.toml").write_text('[embed]\nmodel = "none"\n' + text)


def test_a_section_read_per_request_keeps_the_open_engine(
    slot: EngineSlot, tmp_workspace: Workspace
) -> None:
    engine = slot.current()
    assert engine is not None and engine.config.retrieval.default_k != 3
    write_config(
        tmp_workspace,
        "[retrieval]\ndefault_k = 3\n[index]\nmax_file_bytes = 10\n[mcp]\nmax_connections = 2\n",
    )
    assert slot.reload_settings() == {"retrieval", "index", "mcp"}
    assert slot.current() is engine and len(slot.opened) == 1  # type: ignore[attr-defined]
    assert engine.config.retrieval.default_k == 3 and engine.config.index.max_file_bytes == 10


def test_a_section_baked_in_at_open_gets_a_new_engine_after_the_running_request(
    slot: EngineSlot, tmp_workspace: Workspace
) -> None:
    old = slot.current()
    assert old is not None
    _ = old.store  # open: Engine.close drops it
    write_config(tmp_workspace, '[store]\nuri = ""\nrefresh_seconds = 5.0\n')
    with slot.borrow() as running:  # a request in flight on the old engine
        assert slot.reload_settings() == {"store"}
        fresh = slot.current()
        assert fresh is not None and fresh is not old and running is old
        assert old._store is not None and old in slot._retired  # not closed under it
    assert old._store is None and old not in slot._retired  # closed by its last user
    assert fresh.config.store.refresh_seconds == 5.0
