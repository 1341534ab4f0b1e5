"""Indexing for the editor: the index use case with ``$/progress``, and the child
``engram index`` that embeds afterwards so the model's memory never stays in the editor's
server (docs/lsp.md, "start-up"; ``index.embed_in_background``)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs

from engram.config import TeamConfig
from engram.lsp import progress
from engram.lsp.tracking import refresh_folder

if TYPE_CHECKING:
    from engram.app import Engine
    from engram.app.index_lock import IndexHolder
    from engram.codegraph import IndexReport
    from engram.config import EngramConfig
    from engram.jsontypes import JsonObject
    from engram.lsp.folder import Folder
    from engram.lsp.remote import EngineLink
    from engram.lsp.server import EngramLanguageServer

log = logging.getLogger(__name__)


def child_will_index(config: EngramConfig) -> bool:
    """Whether a child ``engram index`` follows this server's own index."""
    return config.index.embed_in_background


async def index_folder(
    ls: EngramLanguageServer,
    folder: Folder,
    engine: Engine,
    title: str | None,
    token: str | None = None,
) -> IndexReport:
    """The index use case in a thread, reporting ``$/progress``; cancellable by the client.

    The caller holds a lease on ``engine`` for the whole call.
    """
    own = token is None
    if own:
        token = await progress.begin(ls, title or "Engram: indexing")
    # keyword-only chunks here; embeddings (and, when that child runs, git history
    # mining) happen in a child process, see maybe_embed_in_child
    from engram.app.indexing import LSP_INDEX, index_phases, run_index
    from engram.progress import PhaseBar

    bar = PhaseBar(index_phases(), "indexing", interval=progress.PROGRESS_INTERVAL)

    def report(done: int, total: int | None, message: str = "") -> None:
        shown = bar(done, total, message)
        if shown is None:
            return
        text, pct = shown
        ls.threadsafe(_set_indexing, folder, text)
        ls.threadsafe(progress.report, ls, token, text, pct)

    def cancelled() -> bool:
        return progress.cancelled(ls, token)

    options = attrs.evolve(LSP_INDEX, history=not child_will_index(engine.config))

    def waiting(holder: IndexHolder) -> None:  # another index of this folder runs first
        text = f"waiting for another index ({holder.describe()})"
        ls.threadsafe(_set_indexing, folder, text)
        ls.threadsafe(progress.report, ls, token, text, None)

    def run() -> IndexReport:
        return run_index(engine, options, report, cancelled, on_wait=waiting).code

    try:
        folder.indexing = "indexing"
        return await asyncio.to_thread(run)
    finally:
        folder.indexing = None
        if own:
            progress.end(ls, token, "indexed")


def _set_indexing(folder: Folder, text: str) -> None:
    folder.indexing = text


async def index_in_engine(
    ls: EngramLanguageServer, folder: Folder, link: EngineLink, history: bool, token: str | None
) -> dict[str, object]:
    """The workspace engine's index for this window: its notes in the window's progress
    (:func:`engine_notes`), and the progress's cancel stops it in the engine (a cancel did
    nothing there: the button was shown, the index went on, waiting for another one too)."""
    import uuid

    from engram.daemon.client import EngineError
    from engram.daemon.wire import WireError

    run = uuid.uuid4().hex
    job = asyncio.ensure_future(
        asyncio.to_thread(link.index, history, engine_notes(ls, folder, token), run)
    )
    asked = False
    while not job.done():
        await asyncio.wait({job}, timeout=progress.PROGRESS_INTERVAL)
        if not asked and not job.done() and progress.cancelled(ls, token):
            asked = True
            with contextlib.suppress(WireError, EngineError):
                await asyncio.to_thread(link.cancel_index, run)
    return job.result()


def engine_notes(
    ls: EngramLanguageServer, folder: Folder, token: str | None
) -> Callable[[str], None]:
    """What the workspace engine says of an index it runs for this window (whom it waits
    for, how far it got: ``engram.lsp.served.IndexNotes``), shown in the window's progress
    and status as the in-process index shows its own. Called on the link's reader thread.
    """

    def hear(text: str) -> None:
        try:
            note = json.loads(text)
        except ValueError:
            return
        message, pct = note.get("message"), note.get("percentage")
        if not isinstance(message, str):
            return
        ls.threadsafe(_set_indexing, folder, message)
        ls.threadsafe(progress.report, ls, token, message, pct if isinstance(pct, int) else None)

    return hear


async def reindex(
    ls: EngramLanguageServer, folder: Folder, engine: Engine, files: Sequence[str] | None
) -> IndexReport | JsonObject:
    """``engram.index``: the given files in the graph, or everything with progress."""
    if files:
        rels = [engine.workspace.relative(f) for f in files]

        def run() -> JsonObject:
            graph = engine.codegraph
            results = [graph.reindex_file(rel) for rel in rels]
            return {"files": rels, "results": results}

        report: IndexReport | JsonObject = await asyncio.to_thread(run)
    else:
        report = await index_folder(ls, folder, engine, "Engram: re-indexing")
        maybe_embed_in_child(ls, folder, engine.config)
    folder.impact.clear()
    folder.symbols.clear()
    await refresh_folder(ls, folder)
    return report


async def reindex_in_engine(
    ls: EngramLanguageServer, folder: Folder, link: EngineLink
) -> JsonObject:
    """``engram.index`` of the whole folder, run by the workspace engine it is linked to.

    The palette's *Re-index Workspace* (and VS Code's first index after *Start in This
    Workspace*) opened an in-process engine instead: the thin server loaded LanceDB, the
    graph and the chunk index (52 -> 288 MB on click) beside the engine that already had
    them, and kept them until the window closed. Same steps as the start-up index there.
    """
    from engram.model.codec import to_json_object

    config = folder.settings.config
    embed_later = config is not None and child_will_index(config)
    token = await progress.begin(ls, "Engram: re-indexing")
    folder.indexing = "indexing"
    progress.report(ls, token, "indexing")
    try:
        report = await index_in_engine(ls, folder, link, not embed_later, token)
    finally:
        folder.indexing = None
        progress.end(ls, token, "indexed")
    folder.impact.clear()
    folder.symbols.clear()
    await refresh_folder(ls, folder)
    if config is not None:
        maybe_embed_in_child(ls, folder, config)
    return to_json_object(report)


def maybe_embed_in_child(ls: EngramLanguageServer, folder: Folder, config: EngramConfig) -> None:
    """After a keyword-only index: embeddings in a child, unless off or one runs.

    With the workspace engine, the child is a thin ``engram index`` that the engine
    runs; the memory it needs is the engine's, never this server's.
    """
    if not child_will_index(config):
        return
    if folder.children:
        return  # the running child embeds whatever this index added, too
    ls.spawn(embed_in_child(ls, folder), f"embedding in {folder.root}")


async def embed_in_child(ls: EngramLanguageServer, folder: Folder) -> None:
    """Run ``engram index`` in a child process for the embeddings, then refresh.

    Embedding code chunks loads the ONNX model and its buffers (hundreds of MB, for
    minutes on a large repository); in a child, that memory is returned to the
    system when it exits, and the editor's server stays small. The child writes
    through the stores' own writer locks; this server sees the new vectors as
    foreign writes. Its output goes to ``.engram/logs/background-index.log``; it is
    started, locked and reaped by ``engram.jobs`` like every background job.
    """
    from engram.jobs import start
    from engram.workspace import WorkspaceError

    settings = folder.settings  # one snapshot for the whole run
    delay = settings.config.index.background_delay_seconds if settings.config else 0.0
    if delay > 0:
        await asyncio.sleep(delay)  # cancelled at shutdown: no child is started then
    # the child reads the workspace's config files itself; in-process, the editor's
    # embedding settings travel as environment overrides so both use the same model.
    # Served by the workspace engine, the child is forwarded to that engine, which the
    # ENGRAM_* environment names (daemon.address.engine_key): overrides there named a
    # second engine for the same workspace, which embedded with its own model and then
    # held it (~650 MB on click) for its idle time. The linked engine's model is the one
    # its searches use, so its vectors must come from it.
    embed = settings.config.embed if settings.config is not None else None
    env: dict[str, str] = {}
    if embed is not None and folder.link is None:
        env["ENGRAM_EMBED__MODEL"] = embed.model
        env["ENGRAM_EMBED__BATCH_SIZE"] = str(embed.batch_size)
    try:
        child = start(
            folder.workspace,
            "index",
            ["index"],
            log_name="background-index.log",
            env=env,
            lower_priority=True,
        )
    except (OSError, WorkspaceError) as exc:  # WorkspaceError: a link out of .engram/
        log.warning("background embedding not started: %s", exc)
        return
    if child is None:
        return  # another process indexes this workspace now
    folder.children.append(child)
    try:
        code = await asyncio.to_thread(child.wait)
    except asyncio.CancelledError:  # shutdown cancels this task first: end the child
        with contextlib.suppress(ProcessLookupError):
            child.terminate()
        raise
    finally:
        if child in folder.children:
            folder.children.remove(child)
    if code != 0:
        log.warning("background embedding exited with %s (see .engram/logs/)", code)
        return
    await refresh_folder(ls, folder)


def team_dir(folder: Folder) -> str:
    """The folder's team directory (``team.dir``), workspace-relative, no slashes around."""
    return (folder.config.team if folder.config is not None else TeamConfig()).folder


async def on_engine(
    folder: Folder,
    who: str,
    remote: Callable[[EngineLink], object],
    local: Callable[[Engine], object],
) -> bool:
    """Run ``remote`` on the workspace engine when the folder is served by one, else
    ``local`` on a lease of its in-process engine, in a thread, once the folder is ready;
    whether one ran (False: the folder is gone or not ready). A failure is logged, never
    raised: a bad file or a lost engine must not take the server down.

    The one place for "ask the workspace engine, else the in-process one" of a
    background job (the team sync, a re-index of files changed outside): it was written
    out twice, and the two copies differed on what a folder that was not ready got.
    """
    link_lease = folder.links.acquire(who) if folder.engine is None else None
    if link_lease is not None:
        with link_lease as link:
            if not folder.ready:
                return False
            try:
                await asyncio.to_thread(remote, link)
            except Exception as exc:
                log.warning("%s in %s failed: %s", who, folder.root, exc)
        return True
    lease = folder.engines.acquire(who)
    if lease is None:
        return False
    with lease as engine:
        if not folder.ready:
            return False
        try:
            await asyncio.to_thread(local, engine)
        except Exception as exc:
            log.warning("%s in %s failed: %s", who, folder.root, exc)
    return True


async def sync_team(ls: EngramLanguageServer, folder: Folder) -> None:
    """Read the team folder into the store (after a pull or checkout), then refresh."""
    config = folder.config  # this run's settings snapshot

    def in_engine(link: EngineLink) -> None:
        if config is not None and config.team.auto_sync:
            link.run_cli("sync")

    def here(engine: Engine) -> None:
        if not engine.config.team.auto_sync:
            return
        from engram.app.team import sync_team

        report = sync_team(engine)
        if report.added or report.updated or report.retired:
            log.info("team sync in %s: %s", folder.root, report.to_dict())

    if await on_engine(folder, "team sync", in_engine, here):
        await refresh_folder(ls, folder)
