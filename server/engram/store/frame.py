"""Memories as Arrow columns, for aggregates over the whole store (``engram report``).

Why not ``MemoryStore.list()``: turning 100k JSON records into :class:`Memory` objects
through the codec is what made a 100k-memory report take minutes (docs/report.md). The
columns a chart counts are read instead: the snapshot's own columns (type, flags,
``updated_at``, files) and a handful of fields parsed out of the JSON records by Arrow's
JSON reader (one C++ pass, no Python object per memory; only the records of a team's memories
are decoded, for the label that says whose they are). A record the reader cannot take
(a hand-edited or foreign one) costs only its chunk: those rows are decoded by the codec
as ``get`` would, and a row the codec rejects is left out, as ``list`` leaves it out.

:data:`FRAME_COLUMNS` is the layout ``MemoryStore.frame()`` returns and
:func:`frame_from_memories` builds from memories (the slow path here, and tests).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import attrs
import numpy as np
import numpy.typing as npt

from engram.model import (
    DEFAULT_HALF_LIVES,
    SCHEMA_VERSION,
    CorrectionKind,
    Memory,
    MemoryType,
    RelationType,
    shared_by_text,
)

if TYPE_CHECKING:
    import pyarrow as pa

log = logging.getLogger(__name__)

#: Records parsed per call of the JSON reader: a record it cannot take costs this many
#: rows of codec decoding, not the whole store.
CHUNK = 4096
#: ``"team":`` in a record: only those rows are read as JSON for their author
_TEAM_MARK = '"team":'


def frame_schema() -> pa.Schema:
    """What ``MemoryStore.frame()`` returns: one row per readable memory."""
    import pyarrow as pa

    ts = pa.timestamp("us", tz="UTC")
    return pa.schema(
        [
            pa.field("id", pa.string(), nullable=False),
            pa.field("type", pa.string(), nullable=False),
            pa.field("content", pa.string(), nullable=False),
            #: ``Memory.files``: anchor files, then related files
            pa.field("files", pa.list_(pa.string()), nullable=False),
            pa.field("needs_review", pa.bool_(), nullable=False),
            pa.field("deprecated", pa.bool_(), nullable=False),
            pa.field("stale", pa.bool_(), nullable=False),
            #: a person's or an agent's flag is outstanding (``Memory.flagged``): never shown
            pa.field("flagged", pa.bool_(), nullable=False),
            pa.field("pinned", pa.bool_(), nullable=False),
            pa.field("confidence", pa.float64(), nullable=False),
            #: null: never decays (``Memory.current_confidence``)
            pa.field("half_life_days", pa.float64()),
            pa.field("created_at", ts, nullable=False),
            pa.field("updated_at", ts, nullable=False),
            pa.field("last_accessed_at", ts, nullable=False),
            #: ids this memory is linked to by ``conflicts_with``
            pa.field("conflicts_with", pa.list_(pa.string()), nullable=False),
            #: ``shared_by_text`` (``"shared by Ana"``), null for a local memory
            pa.field("shared_by", pa.string()),
        ]
    )


FRAME_COLUMNS = (
    "id", "type", "content", "files", "needs_review", "deprecated", "stale", "flagged", "pinned",
    "confidence", "half_life_days", "created_at", "updated_at", "last_accessed_at",
    "conflicts_with", "shared_by",
)  # fmt: skip


@attrs.frozen
class Hiding:
    """The trust model's rule of which memories no editor or agent is shown
    (``lifecycle.trust.hiding()``; the store does not import the rules): ``shown`` of a
    decoded memory, and ``marks``: a record holding none of these strings is hidden
    exactly when it is deprecated, so a frame decodes only the records holding one."""

    shown: Callable[[Memory], bool]
    marks: tuple[str, ...]

    def flagged(self, memory: Memory) -> bool:
        """Hidden, though not deprecated: a flag is outstanding (``state_of``)."""
        return not memory.deprecated and not self.shown(memory)


def frame_from_memories(memories: Sequence[Memory], hiding: Hiding | None = None) -> pa.Table:
    """The frame of ``memories`` (decoded objects): the reference the fast path matches.
    ``flagged`` by ``hiding``'s rule when given, else by ``Memory.flagged``."""
    import pyarrow as pa

    flagged = hiding.flagged if hiding is not None else (lambda m: m.flagged)

    return pa.table(
        {
            "id": [m.id for m in memories],
            "type": [m.type.value for m in memories],
            "content": [m.content for m in memories],
            "files": [m.files for m in memories],
            "needs_review": [m.needs_review for m in memories],
            "deprecated": [m.deprecated for m in memories],
            "stale": [m.is_stale for m in memories],
            "flagged": [flagged(m) for m in memories],
            "pinned": [m.pinned for m in memories],
            "confidence": [float(m.confidence) for m in memories],
            "half_life_days": [
                float(m.decay_half_life_days) if m.decay_half_life_days else None for m in memories
            ],
            "created_at": [m.created_at for m in memories],
            "updated_at": [m.updated_at for m in memories],
            "last_accessed_at": [m.last_accessed_at for m in memories],
            "conflicts_with": [
                [
                    r.target_memory_id
                    for r in m.relations
                    if r.relation_type is RelationType.CONFLICTS_WITH and r.target_memory_id
                ]
                for m in memories
            ],
            "shared_by": [shared_by_text(m) for m in memories],
        },
        schema=frame_schema(),
    )


def _record_schema() -> pa.Schema:
    """The record fields read by Arrow's JSON reader (everything else is skipped)."""
    import pyarrow as pa

    relation = pa.struct([("relation_type", pa.string()), ("target_memory_id", pa.string())])
    return pa.schema(
        [
            ("schema_version", pa.int64()),
            ("content", pa.string()),
            ("confidence", pa.float64()),
            ("decay_half_life_days", pa.float64()),
            ("pinned", pa.bool_()),
            ("created_at", pa.string()),
            ("last_accessed_at", pa.string()),
            ("relations", pa.list_(relation)),
            ("flags", pa.list_(pa.string())),
        ]
    )


def _parse_chunk(records: pa.Array) -> pa.Table | None:
    """One chunk of JSON records as a table, or None when the reader refuses any of them."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.json as pj

    # the codec writes one compact line per record (json.dumps escapes newlines), so the
    # records joined by newlines are newline-delimited JSON; a null record is an empty one
    lines = pc.binary_join(
        pa.ListArray.from_arrays(pa.array([0, len(records)], pa.int32()), records.fill_null("{}")),
        "\n",
    )
    buffer = lines[0].as_buffer()
    options = pj.ParseOptions(explicit_schema=_record_schema(), unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(
            pa.BufferReader(buffer),
            read_options=pj.ReadOptions(block_size=max(1 << 20, buffer.size + 1)),
            parse_options=options,
        )
    except (pa.ArrowInvalid, ValueError) as exc:
        log.info("record chunk not read by Arrow (decoded one by one): %s", exc)
        return None
    return table if table.num_rows == len(records) else None


def _stamp(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """ISO 8601 strings as UTC timestamps (null where a string is not one)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    ts = pa.timestamp("us", tz="UTC")
    try:
        return pc.cast(values, ts)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.nulls(len(values), ts)


def parse_records(records: pa.Array) -> tuple[pa.Table, npt.NDArray[np.bool_]]:
    """The JSON-only fields of every record, and which rows were read whole.

    Returns columns ``content, confidence, half_life_days, pinned, flagged, created_at,
    last_accessed_at, conflicts_with, shared_by`` and a mask: False where the row must be
    decoded by the codec instead (its chunk was refused, a field is missing or out of range,
    or its schema version needs a migration).
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(records)
    parts: list[pa.Table] = []
    ok = np.zeros(n, np.bool_)
    empty = pa.table({f.name: pa.nulls(0, f.type) for f in _record_schema()})
    for start in range(0, n, CHUNK):
        chunk = records.slice(start, min(CHUNK, n - start))
        table = _parse_chunk(chunk)
        if table is None:
            table = pa.table({f.name: pa.nulls(len(chunk), f.type) for f in _record_schema()})
        else:
            ok[start : start + len(chunk)] = True
        parts.append(table.select(empty.column_names))
    table = pa.concat_tables([empty, *parts])
    parsed = {name: table.column(name).combine_chunks() for name in table.column_names}

    confidence = parsed["confidence"]
    created = _stamp(parsed["created_at"])
    accessed = _stamp(parsed["last_accessed_at"])
    for good in (
        pc.equal(parsed["schema_version"].fill_null(-1), SCHEMA_VERSION),
        parsed["content"].is_valid(),
        pc.and_(pc.greater_equal(confidence, 0.0), pc.less_equal(confidence, 1.0)),
        created.is_valid(),
        accessed.is_valid(),
    ):
        ok &= np.asarray(good.fill_null(False).to_numpy(zero_copy_only=False), np.bool_)

    # conflicts_with: the targets of the relations of that type, kept in their lists
    relations = parsed["relations"]
    relations = relations.fill_null(pa.scalar([], relations.type))
    flat = pc.list_flatten(relations)
    parents = pc.list_parent_indices(relations)
    keep = pc.and_(
        pc.equal(flat.field("relation_type"), RelationType.CONFLICTS_WITH.value),
        flat.field("target_memory_id").is_valid(),
    ).fill_null(False)
    keep = pc.and_(keep, pc.not_equal(flat.field("target_memory_id"), "")).fill_null(False)
    targets = pc.filter(flat.field("target_memory_id"), keep)
    owners = np.asarray(pc.filter(parents, keep).to_numpy(zero_copy_only=False), np.int64)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(np.bincount(owners, minlength=n), out=offsets[1:])
    conflicts = pa.ListArray.from_arrays(pa.array(offsets), targets)

    # flagged: a correction kind among the record's flags (``Memory.flagged``)
    flags = parsed["flags"].fill_null(pa.scalar([], parsed["flags"].type))
    kinds = pa.array(sorted(kind.value for kind in CorrectionKind))
    marked = pc.is_in(pc.list_flatten(flags), value_set=kinds).fill_null(False)
    parents = np.asarray(pc.list_parent_indices(flags).to_numpy(), np.int64)
    flagged = np.zeros(n, np.bool_)
    flagged[parents[np.asarray(marked.to_numpy(zero_copy_only=False), np.bool_)]] = True

    half_life = parsed["decay_half_life_days"]
    return (
        pa.table(
            {
                "content": parsed["content"],
                "confidence": confidence,
                "half_life_days": half_life,
                "pinned": parsed["pinned"].fill_null(False),
                "flagged": pa.array(flagged),
                "created_at": created,
                "last_accessed_at": accessed,
                "conflicts_with": conflicts,
                "shared_by": _shared_by(records),
            }
        ),
        ok,
    )


def _shared_by(records: pa.Array) -> pa.Array:
    """``shared_by_text`` per record. Only records that mention ``"team":`` can be a team's
    (a local store has none): those are decoded by the codec and asked, so the label is the
    one hovers and ``show`` give, whatever it comes to say (docs/team.md)."""
    import json

    import pyarrow as pa
    import pyarrow.compute as pc

    from engram.model import SchemaError, memory_from_dict
    from engram.model.codec import make_converter

    out: list[str | None] = [None] * len(records)
    marked = np.flatnonzero(
        np.asarray(
            pc.match_substring(records, _TEAM_MARK).fill_null(False).to_numpy(False), np.bool_
        )
    )
    converter = make_converter() if len(marked) else None
    for row in marked.tolist():
        try:
            memory = memory_from_dict(json.loads(records[row].as_py()), converter)
        except (SchemaError, ValueError, TypeError):
            continue  # an unreadable record is left out of the frame anyway
        out[row] = shared_by_text(memory)
    return pa.array(out, pa.string())


def default_half_lives(
    types: npt.NDArray[np.str_] | npt.NDArray[np.object_], half_life: npt.NDArray[np.float64]
) -> None:
    """Fill a missing half-life with the type's default, in place (``Memory`` does it on
    construction, so a record written without one decodes with it)."""
    missing = np.isnan(half_life)
    if not missing.any():
        return
    for memory_type, days in DEFAULT_HALF_LIVES.items():
        if days:
            half_life[missing & (types == MemoryType(memory_type).value)] = float(days)


__all__ = ["FRAME_COLUMNS", "frame_from_memories", "frame_schema", "parse_records"]
