"""The type of JSON data Engram hands to front ends (``to_dict()``, renderings, results).

``JsonObject`` instead of ``dict[str, Any]`` in public signatures: a reader knows the value
is plain JSON data (strings, numbers, booleans, null, lists and objects of them), and the
type checker makes a reader of a value check what it is before using it.

And the two parsers for data a repository wrote (team files, ``.mcp.json``, ``package.json``,
``pyproject.toml``, ``.engram/config.toml``): :func:`parse_json` and :func:`parse_toml`.
"""

from __future__ import annotations

import json
from typing import TypeAlias

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
#: A JSON object as returned: values are JSON data (``object`` rather than ``JsonValue`` so a
#: ``dict[str, list[str]]`` built from typed parts needs no cast).
JsonObject: TypeAlias = dict[str, object]

_TOO_DEEP = "nested too deeply"


def parse_json(text: str, *, unique_keys: bool = False) -> object:
    """``json.loads`` for text a repository wrote: nesting too deep for the parser is a
    ``json.JSONDecodeError`` like any other malformed file.

    ``json.loads`` recurses per ``[`` or ``{`` and raises ``RecursionError``, which no
    caller expected: 200 KB of ``[`` in one ``.engram-team/m-….json`` of a clone stopped
    ``engram sync`` and ``engram index`` with an internal error (stop 30), and so every
    teammate's memory, the code graph and history with it.

    ``unique_keys``: an object naming a key twice is malformed too. ``json.loads`` keeps the
    last, and a reviewer reading the file (or its diff) sees the first: a team file with
    ``"content"`` twice showed one text in review and shared the other (stop 32)."""
    hook = _unique_pairs if unique_keys else None
    try:
        return json.loads(text, object_pairs_hook=hook)
    except RecursionError:
        raise json.JSONDecodeError(_TOO_DEEP, text, 0) from None


def _unique_pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"the key {key!r} is given twice")
        out[key] = value
    return out


def parse_toml(text: str) -> JsonObject:
    """``tomllib.loads`` for text a repository wrote: nesting too deep is a
    ``tomllib.TOMLDecodeError`` (a ``pyproject.toml`` of ``a = [[[[…`` stopped every
    command in the workspace with ``RecursionError`` when its settings were read)."""
    import tomllib  # only the callers that read TOML pay for it

    try:
        return tomllib.loads(text)
    except RecursionError:
        raise tomllib.TOMLDecodeError(_TOO_DEEP) from None


__all__ = ["JsonObject", "JsonValue", "parse_json", "parse_toml"]
