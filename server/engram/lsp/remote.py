"""A folder's link to the workspace engine: what keeps ``engram serve`` small and quick.

The language server does not open LanceDB or the model (docs/engine.md, "Front ends"): it
connects to the workspace's engine (starting it when no front end has), subscribes to its
write events, and reads what hover and diagnostics need through ``lsp`` requests
(``engram.lsp.served.answer``, run by the engine). Before the engine answers, a document shows the
memories the SQLite digest mirrors (``engram.store.digest``), read in milliseconds.

Every method here blocks: call them from a worker thread. A lost connection raises
:class:`~engram.daemon.wire.WireError`; the server then reconnects once (which restarts a
killed engine) and otherwise falls back to an in-process engine.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from engram.anchors import LineSpan
from engram.daemon.client import Connection, connect

if TYPE_CHECKING:
    from engram.daemon.calls import CallReply
    from engram.daemon.wire import Json
    from engram.lsp.anchors import SymbolInfo
    from engram.model import Memory

log = logging.getLogger(__name__)


def _memories(raw: object) -> tuple[Memory, ...]:
    from engram.model import memory_from_dict
    from engram.model.codec import make_converter

    converter = make_converter()  # one for the batch: building one costs more than a record
    out: list[Memory] = []
    for item in raw if isinstance(raw, list) else []:
        if isinstance(item, dict):
            try:
                out.append(memory_from_dict(item, converter))
            except Exception as exc:  # one bad record must not blank the file
                log.debug("skipping a memory record: %s", exc)
    return tuple(out)


#: memory id -> ``(id, text)`` of the shown memories it conflicts with (docs/trust.md
#: "Conflicts"; ``engram.app.memories.conflict_partners``)
Partners = dict[str, list[tuple[str, str]]]


def _partners(raw: object) -> Partners:
    out: Partners = {}
    for key, items in raw.items() if isinstance(raw, dict) else ():
        pairs = [
            (str(item[0]), str(item[1]))
            for item in items if isinstance(items, list)
            if isinstance(item, list) and len(item) == 2
        ]  # fmt: skip
        if pairs:
            out[str(key)] = pairs
    return out


def partners_json(partners: Partners) -> dict[str, list[list[str]]]:
    return {k: [[oid, text] for oid, text in v] for k, v in partners.items()}


def digest_memories(root: Path, rel: str) -> tuple[tuple[Memory, ...], Partners]:
    """The file's memories as the digest mirrors them, with their shown conflict partners
    (no engine, no LanceDB)."""
    from engram.lifecycle.trust import conflict_ids
    from engram.store.digest import Digest
    from engram.workspace import Workspace

    digest = Digest(Workspace(root))
    try:
        memories = _memories(digest.records_for_file(rel))
        partners: Partners = {}
        for memory in memories:
            others = [b for b in digest.shown(conflict_ids(memory)) if b.id != memory.id]
            if others:
                partners[memory.id] = [(b.id, b.content) for b in others]
        return memories, partners
    except Exception as exc:  # no digest yet, or an older one: the engine will answer
        log.debug("digest unavailable for %s: %s", rel, exc)
        return (), {}
    finally:
        digest.close()


def preload() -> None:
    """Import what the first didOpen reads (digest, record codec) before it comes."""
    _memories([])
    import engram.store.digest  # noqa: F401


class EngineLink:
    """One folder's connection to the engine (see the module docstring)."""

    def __init__(self, connection: Connection, root: Path) -> None:
        self.connection = connection
        self.root = root

    @classmethod
    def open(
        cls,
        root: Path,
        on_event: Callable[[Json], None],
        on_close: Callable[[], None],
    ) -> EngineLink:
        """Connect (starting the engine if needed); raises ``EngineUnavailable``."""
        connection = connect(root, "lsp", subscribe=True)
        connection.on_close = on_close
        connection.listen(on_event)
        return cls(connection, root)

    @property
    def alive(self) -> bool:
        return not self.connection.closed

    @property
    def pid(self) -> int:
        return self.connection.pid

    def request(self, what: str, **params: object) -> dict[str, object]:
        """One ``lsp`` request (see ``engram.lsp.served.answer``)."""
        return self._lsp(what, **params)

    def _lsp(self, what: str, **params: object) -> dict[str, object]:
        result = self.connection.call("lsp", {"what": what, **params})
        return result if isinstance(result, dict) else {}

    def snapshot(
        self,
        rel: str,
        has_graph: bool,
        reindex: bool = False,
        known: Sequence[Memory] | None = None,
    ) -> tuple[tuple[Memory, ...] | None, tuple[SymbolInfo, ...], Partners]:
        """The file's memories (``None``: the same as ``known``), its symbols and the
        memories' conflict partners."""
        from engram.lsp.anchors import SymbolInfo, memory_key

        params: dict[str, object] = {"file": rel, "has_graph": has_graph, "reindex": reindex}
        if known is not None:
            params["known"] = [list(k) for k in memory_key(known)]
        result = self._lsp("snapshot", **params)
        symbols: list[SymbolInfo] = []
        raw_symbols = result.get("symbols")
        for item in raw_symbols if isinstance(raw_symbols, list) else []:
            if isinstance(item, list) and len(item) == 4:
                name, qualname, start, end = item
                symbols.append(SymbolInfo(str(name), str(qualname), LineSpan(int(start), int(end))))
        partners = _partners(result.get("partners"))
        if result.get("unchanged"):
            return None, tuple(symbols), partners
        return _memories(result.get("memories")), tuple(symbols), partners

    def impact(self, rel: str) -> str | None:
        summary = self._lsp("impact", file=rel).get("summary")
        return summary if isinstance(summary, str) else None

    def index(
        self, history: bool, on_note: Callable[[str], None] | None = None, run: str = ""
    ) -> dict[str, object]:
        """The engine's keyword-only index; ``on_note`` hears its progress as it runs
        (``engram.lsp.served.IndexNotes``: whom it waits for, how far it got); ``run``
        names it for :meth:`cancel_index`."""
        params = {"what": "index", "history": history, "stream_stderr": True, "run": run}
        result = self.connection.call("lsp", params, on_note)
        return result if isinstance(result, dict) else {}

    def cancel_index(self, run: str) -> bool:
        """Stop the engine's index ``run`` (it keeps what it stored; the next one resumes)."""
        return bool(self._lsp("cancel_index", run=run).get("cancelled"))

    def anchored(self) -> tuple[dict[str, list[Memory]], Partners]:
        """Files with diagnostic-type memories, and those memories' conflict partners."""
        result = self._lsp("anchored")
        files = result.get("files")
        if not isinstance(files, dict):
            return {}, {}
        by_file = {str(f): list(_memories(ms)) for f, ms in files.items()}
        return by_file, _partners(result.get("partners"))

    def observe(self, events: Sequence[dict[str, object]]) -> None:
        """Editor events to the engine's observer (the ``observe`` command, JSON lines)."""
        data = "\n".join(json.dumps(e) for e in events).encode("utf-8")
        self.connection.call(
            "cli",
            {
                "argv": ["observe", "--workspace", str(self.root)],
                "stdin": base64.b64encode(data).decode("ascii"),
            },
        )

    def call(self, usecase: str, raw: Mapping[str, object], actor: str | None) -> CallReply:
        """A declared use case run by the engine (``engram.daemon.calls``), as the client
        sent it; ``actor``: an agent client's label."""
        from engram.daemon.calls import call_request, send

        return send(self.connection, call_request(usecase, "lsp", raw, actor))

    def memories(self, ids: Sequence[str], review: int) -> tuple[list[Memory], list[Memory]]:
        """Memories by id and the review queue (``engram.lsp.served.answer``)."""
        result = self._lsp("memories", ids=list(ids), review=review)
        return list(_memories(result.get("memories"))), list(_memories(result.get("review")))

    def run_cli(self, *argv: str) -> dict[str, object]:
        result = self.connection.call("cli", {"argv": [*argv, "--workspace", str(self.root)]})
        return result if isinstance(result, dict) else {}

    def close(self) -> None:
        self.connection.on_close = None
        self.connection.close()


__all__ = ["EngineLink", "Partners", "digest_memories", "partners_json"]
