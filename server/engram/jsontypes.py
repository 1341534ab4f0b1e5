"""The type of JSON data Engram hands to front ends (``to_dict()``, renderings, results).

``JsonObject`` instead of ``dict[str, Any]`` in public signatures: a reader knows the value
is plain JSON data (strings, numbers, booleans, null, lists and objects of them), and the
type checker makes a reader of a value check what it is before using it.
"""

from __future__ import annotations

from typing import TypeAlias

JsonValue: TypeAlias = str | int | float | bool | list["JsonValue"] | dict[str, "JsonValue"] | None
#: A JSON object as returned: values are JSON data (``object`` rather than ``JsonValue`` so a
#: ``dict[str, list[str]]`` built from typed parts needs no cast).
JsonObject: TypeAlias = dict[str, object]

__all__ = ["JsonObject", "JsonValue"]
