"""JSON (un)structuring of memories with cattrs, and schema migrations.

Building a converter is not cheap: with the unstructure functions it generates on first
use, about 14 ms, more than a hundred records. A digest rebuild of 10,000 memories that
built one per record spent 190 of its 200 s there (docs/codegraph.md, "At 50,000 files").
So :func:`default_converter` builds one per process, configured once in
:func:`make_converter` and never registered on afterwards; callers that want their own
hooks still build one with :func:`make_converter`. Datetimes travel as ISO 8601 strings in
UTC. cattrs itself is imported with the first converter: naming the model's types (the CLI
parsing a command line, docs/cli.md "Start-up") needs none.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

import attrs

from engram.jsontypes import JsonObject, JsonValue
from engram.model.memory import SCHEMA_VERSION, Memory

if TYPE_CHECKING:
    import cattrs


class SchemaError(ValueError):
    """A stored or imported record cannot be read as a memory."""


def _parse_dt(value: object, _type: object) -> datetime:
    if isinstance(value, datetime):
        dt = value
    else:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def make_converter() -> cattrs.Converter:
    import cattrs

    conv = cattrs.Converter(forbid_extra_keys=False)
    conv.register_unstructure_hook(datetime, lambda dt: dt.astimezone(UTC).isoformat())
    conv.register_structure_hook(datetime, _parse_dt)
    conv.register_unstructure_hook_func(
        lambda t: isinstance(t, type) and issubclass(t, enum.Enum), lambda e: e.value
    )
    # ``object`` (``Memory.extra``): free-form JSON kept as it was stored
    conv.register_structure_hook_func(lambda t: t is object, lambda v, _t: v)
    return conv


@functools.cache
def default_converter() -> cattrs.Converter:
    """The process's converter for memories (built once: see the module docstring)."""
    return make_converter()


def _v0_to_v1(raw: JsonObject) -> JsonObject:
    """v0 (pre-release exports) kept ``file``/``symbol`` flat on the record."""
    if "file" in raw and not raw.get("anchors"):
        raw["anchors"] = [{"file": raw.pop("file"), "symbol": raw.pop("symbol", None)}]
    raw.pop("file", None)
    raw.pop("symbol", None)
    return raw


#: ``MIGRATIONS[n]`` upgrades a raw record from schema n to n+1.
MIGRATIONS: dict[int, Callable[[JsonObject], JsonObject]] = {0: _v0_to_v1}


def migrate(raw: JsonObject) -> JsonObject:
    found = raw.get("schema_version", 0)
    version = found if isinstance(found, int) else int(str(found))
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"memory {raw.get('id', '?')} has schema {version}, newer than this Engram "
            f"({SCHEMA_VERSION}); upgrade Engram"
        )
    while version < SCHEMA_VERSION:
        raw = MIGRATIONS[version](dict(raw))
        version += 1
        raw["schema_version"] = version
    return raw


def memory_to_dict(memory: Memory, converter: cattrs.Converter | None = None) -> JsonObject:
    result: JsonObject = (converter or default_converter()).unstructure(memory)
    return result


def memory_from_dict(raw: JsonObject, converter: cattrs.Converter | None = None) -> Memory:
    try:
        return (converter or default_converter()).structure(migrate(dict(raw)), Memory)
    except SchemaError:
        raise
    except Exception as exc:  # cattrs raises ClassValidationError groups; flatten to one line
        import cattrs  # imported already: a converter ran

        if isinstance(exc, cattrs.BaseValidationError):
            detail = "; ".join(cattrs.transform_error(exc))
        else:
            detail = str(exc)
        raise SchemaError(f"not a valid memory record: {detail}") from exc


def memory_json(memory: Memory) -> JsonObject:
    """A memory as every front end returns it: the codec's record plus its citation chip,
    its decayed confidence and whether it is stale.

    Each fact once: the record's ``citation_text`` is left out, being the label the chip
    (``citation``) already shows. With it, a short memory's text came three times in every
    show, remember, review and confirm result (``content``, ``citation_text``,
    ``citation``), each one paid for by an agent's tokens. The store, the team files and
    the engine's replies to a language server keep the field (``memory_to_dict``)."""
    data = memory_to_dict(memory)
    del data["citation_text"]
    data["citation"] = memory.citation()
    data["current_confidence"] = round(memory.current_confidence(), 4)
    data["stale"] = memory.is_stale
    return data


def to_json_object(value: object) -> JsonObject:
    """:func:`to_jsonable` of a value that renders as a JSON object (a record, a mapping)."""
    data = to_jsonable(value)
    if not isinstance(data, dict):
        raise TypeError(f"{type(value).__name__} does not render as a JSON object")
    out: JsonObject = dict(data)
    return out


def to_jsonable(value: object) -> JsonValue:
    """Any engine result (memories, attrs records with ``to_dict``, enums, paths, dates) as
    plain JSON data: one rendering for the CLI's ``--json``, LSP commands and MCP tools."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Memory):
        return {k: to_jsonable(v) for k, v in memory_json(value).items()}
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        rendered: object = to_dict()
        return to_jsonable(rendered)
    if isinstance(value, enum.Enum):
        member: object = value.value
        return to_jsonable(member)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Path):
        return value.as_posix()
    if attrs.has(type(value)):
        record = cast("attrs.AttrsInstance", value)
        return {f.name: to_jsonable(getattr(value, f.name)) for f in attrs.fields(type(record))}
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, Sequence | set | frozenset):
        return [to_jsonable(v) for v in value]
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # NumPy scalars and arrays
        listed: object = tolist()
        return to_jsonable(listed)
    if hasattr(value, "__dict__"):
        return {k: to_jsonable(v) for k, v in vars(value).items() if not k.startswith("_")}
    return str(value)
