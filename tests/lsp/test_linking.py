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


@attrs.define
class FakeDoc:
    rel: str
    memories: list[object] = attrs.field(factory=list)


@attrs.define
class FakeDocsSession:
    docs: list[FakeDoc]

    def docs_of(self, folder: Folder) -> list[FakeDoc]:
        return self.docs


@attrs.define
class RunningServer:
    """Runs what the event handler spawns (the other fake drops it)."""

    session: FakeDocsSession
    tasks: list[asyncio.Task[object]] = attrs.field(factory=list)

    def spawn(self, coro: Awaitable[object], what: str) -> None:
        self.tasks.append(asyncio.ensure_future(coro))


async def test_a_pulling_client_is_asked_to_pull_after_the_documents_are_refreshed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write's event refreshes the open documents, then asks VS Code to pull. Asked first,
    VS Code pulled the documents as they were: in a real VS Code during gs-ws's first index
    the engine answered the refresh seconds later, nothing asked again, and the memory just
    taught in that window showed no squiggle until the file was edited."""
    order: list[str] = []

    async def refresh_when_the_engine_answers(ls: object, docs: list[FakeDoc]) -> None:
        await asyncio.sleep(0.05)  # the engine is busy indexing
        order.append("refreshed " + ",".join(d.rel for d in docs))

    monkeypatch.setattr(linking, "refresh_docs", refresh_when_the_engine_answers)
    monkeypatch.setattr(linking, "request_pull_refresh", lambda ls: order.append("pull"))
    server = RunningServer(FakeDocsSession([FakeDoc("a.py"), FakeDoc("b.py")]))
    folder = Folder(uri=tmp_path.as_uri(), root=tmp_path)

    linking.engine_event(server, folder, {"files": ["a.py"]})  # type: ignore[arg-type]
    await asyncio.gather(*server.tasks)
    assert order == ["refreshed a.py", "pull"]

    order.clear()  # a write no open document shows: the client pulls the workspace now
    linking.engine_event(server, folder, {"files": ["c.py"]})  # type: ignore[arg-type]
    assert order == ["pull"] and not server.tasks[1:]
