"""The link to the workspace engine survives the engine dying while the link opens."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

import attrs
import pytest

from engram.daemon.wire import Json
from engram.lsp import linking
from engram.lsp.folder import Folder
from engram.lsp.remote import EngineLink


@attrs.define
class FakeLink:
    """What ``EngineLink.open`` returns: alive, or already closed by its engine's death."""

    alive: bool
    pid: int
    closed: bool = False

    def close(self) -> None:
        self.closed = True


@attrs.define
class FakeSession:
    shutting_down: bool = False


@attrs.define
class FakeServer:
    """The two things ``connect_engine`` and ``engine_lost`` ask of the server."""

    loop: asyncio.AbstractEventLoop
    session: FakeSession = attrs.field(factory=FakeSession)
    spawned: list[str] = attrs.field(factory=list)

    def threadsafe(self, fn: Callable[..., object], *args: object) -> None:
        self.loop.call_soon_threadsafe(fn, *args)

    def spawn(self, coro: Awaitable[object], what: str) -> None:
        self.spawned.append(what)
        if asyncio.iscoroutine(coro):
            coro.close()


async def test_an_engine_that_dies_while_its_link_opens_is_not_kept_as_the_link(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The engine was killed after the window connected but before the link was set (a
    window shows the digest first, so a user or a test can act before the link exists):
    the reader thread's ``on_close`` reached the loop first and found no link to lose.
    The old code then kept the dead link for good; now the folder connects again."""
    dead, live = FakeLink(alive=False, pid=1), FakeLink(alive=True, pid=2)
    opened: list[FakeLink] = []

    def fake_open(
        root: Path, on_event: Callable[[Json], None], on_close: Callable[[], None]
    ) -> FakeLink:
        link = dead if not opened else live
        opened.append(link)
        if not link.alive:
            on_close()  # the reader thread saw the socket close before open returned
        return link

    monkeypatch.setattr(EngineLink, "open", staticmethod(fake_open))
    monkeypatch.setenv("ENGRAM_ENGINE", "auto")
    server = FakeServer(asyncio.get_running_loop())
    folder = Folder(uri=tmp_path.as_uri(), root=tmp_path)

    link = await linking.connect_engine(server, folder)  # type: ignore[arg-type]

    assert link is live and folder.link is live
    assert opened == [dead, live]
    assert dead.closed  # the dead link was retired, not kept


async def test_two_deaths_in_a_row_leave_the_folder_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One more try only: an engine that dies at every start is not chased for ever."""
    deaths = [FakeLink(alive=False, pid=1), FakeLink(alive=False, pid=2)]

    def fake_open(
        root: Path, on_event: Callable[[Json], None], on_close: Callable[[], None]
    ) -> FakeLink:
        on_close()
        return deaths.pop(0)

    monkeypatch.setattr(EngineLink, "open", staticmethod(fake_open))
    monkeypatch.setenv("ENGRAM_ENGINE", "auto")
    server = FakeServer(asyncio.get_running_loop())
    folder = Folder(uri=tmp_path.as_uri(), root=tmp_path)

    assert await linking.connect_engine(server, folder) is None  # type: ignore[arg-type]
    assert folder.link is None and not deaths
