"""The scratchpad checkpoint: one append-only JSONL file per session (docs/observer.md
checkpointing).

Each observed event is appended (and flushed to the OS) before ``observe`` returns, so a
crashed or killed editor, agent or CLI hook loses nothing it already reported. The file
holds the validated events, the signals they produced (so that signals which depended on
other sessions, like parallel conflicts, replay identically) and promotion marks (so a
reload never promotes the same part twice). A torn last line from a kill mid-write is
skipped on load. Finished sessions move to ``done/`` and the oldest are pruned.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TypedDict
from urllib.parse import quote, unquote

from engram.jsontypes import JsonObject
from engram.redaction import redact_value

log = logging.getLogger(__name__)

#: Finished scratchpads kept in ``done/`` (they are handy traces for observer_replay.py).
KEEP_DONE = 50


class PromotedMark(TypedDict):
    """How far a session's events were promoted, and what into."""

    upto: int
    keys: list[str]
    ids: list[str]


class ScratchpadRecord(TypedDict, total=False):
    """One scratchpad line: an observed event (``ts``, ``event``, ``signals``) or a
    promotion mark (``promoted``)."""

    ts: float
    event: JsonObject
    signals: list[JsonObject]
    promoted: PromotedMark


def checked_record(raw: JsonObject) -> ScratchpadRecord:
    """A line read back from disk, checked (the file is ours, but a crash can tear it);
    ``ValueError`` or ``TypeError`` names what is wrong."""
    mark = raw.get("promoted")
    if mark is not None:
        if not isinstance(mark, dict):
            raise ValueError("'promoted' is not an object")
        upto = mark.get("upto", -1)
        if not isinstance(upto, int):
            raise ValueError("'promoted.upto' is not a number")
        return {
            "promoted": {
                "upto": upto,
                "keys": [str(k) for k in _items(mark.get("keys"))],
                "ids": [str(i) for i in _items(mark.get("ids"))],
            }
        }
    event = raw.get("event")
    if not isinstance(event, dict):
        raise ValueError("no 'event' object")
    ts = raw.get("ts") or 0.0
    if not isinstance(ts, int | float):
        raise ValueError("'ts' is not a number")
    signals = [s for s in _items(raw.get("signals")) if isinstance(s, dict)]
    return {"ts": float(ts), "event": event, "signals": signals}


def _items(value: object) -> list[object]:
    return list(value) if isinstance(value, list) else []


class ScratchpadStore:
    """Reads and appends ``<dir>/<session>.jsonl`` checkpoints."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def path(self, session_id: str) -> Path:
        return self.directory / (quote(session_id, safe="") + ".jsonl")

    def append(self, session_id: str, record: Mapping[str, object]) -> None:
        """Append one record and flush it (a process kill after this loses nothing)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # events carry commands and tool output: secrets never reach the disk (security.md)
        line = json.dumps(redact_value(record), separators=(",", ":"), ensure_ascii=False)
        with self.path(session_id).open("a", encoding="utf-8") as fh:
            fh.write(line + "\n")
            fh.flush()

    def exists(self, session_id: str) -> bool:
        return self.path(session_id).is_file()

    def load(self, session_id: str) -> Iterator[ScratchpadRecord]:
        path = self.path(session_id)
        try:
            with path.open(encoding="utf-8") as fh:
                lines = fh.readlines()
        except FileNotFoundError:
            return
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                log.warning("%s line %d is torn or not JSON; skipped", path.name, number)
                continue
            if not isinstance(record, dict):
                log.warning("%s line %d is not a JSON object; skipped", path.name, number)
                continue
            try:
                yield checked_record(record)
            except (TypeError, ValueError) as exc:
                log.warning("%s line %d is not a checkpoint (%s); skipped", path.name, number, exc)

    def active(self) -> list[tuple[str, float]]:
        """(session id, last modification time) of every unfinished scratchpad."""
        if not self.directory.is_dir():
            return []
        out = []
        for entry in os.scandir(self.directory):
            if entry.is_file() and entry.name.endswith(".jsonl"):
                out.append((unquote(entry.name[: -len(".jsonl")]), entry.stat().st_mtime))
        return out

    def archive(self, session_id: str) -> None:
        """Move a finished session's checkpoint to ``done/`` and prune old ones."""
        path = self.path(session_id)
        if not path.exists():
            return
        done = self.directory / "done"
        done.mkdir(parents=True, exist_ok=True)
        target = done / path.name
        if target.exists():
            target = done / f"{path.stem}.{int(path.stat().st_mtime * 1000)}.jsonl"
        os.replace(path, target)
        finished = sorted(done.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
        for old in finished[:-KEEP_DONE]:
            with contextlib.suppress(OSError):
                old.unlink()

    def write_summary(self, session_id: str, summary: Mapping[str, object]) -> None:
        folder = self.directory / "summaries"
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (quote(session_id, safe="") + ".json.tmp")
        tmp.write_text(json.dumps(summary, indent=1, ensure_ascii=False), encoding="utf-8")
        os.replace(tmp, folder / (quote(session_id, safe="") + ".json"))
        (self.directory / "last_summary").write_text(session_id, encoding="utf-8")

    def read_summary(self, session_id: str | None = None) -> JsonObject | None:
        if session_id is None:
            try:
                session_id = (self.directory / "last_summary").read_text(encoding="utf-8").strip()
            except OSError:
                return None
        path = self.directory / "summaries" / (quote(session_id, safe="") + ".json")
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None
        return data if isinstance(data, dict) else None


__all__ = ["ScratchpadStore"]
