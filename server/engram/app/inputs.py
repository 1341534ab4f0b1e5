"""Parsing the arguments every use case shares: enum names, memory text, lists.

Why here: a front end hands over whatever the user typed (``"Gotcha"``, ``"dead-end"``, a
string where a list was meant); every use case reads it through these so that the same
input gets the same answer and the same one-line error on every surface.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TypeVar

from engram.errors import InvalidInput
from engram.model import CorrectionKind, MemoryScope, MemorySource, MemoryType, UniversalPhase

E = TypeVar("E", bound=enum.Enum)


def parse_enum(enum_cls: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``enum_cls`` (case, ``-`` and spaces forgiven)."""
    if isinstance(value, enum_cls):
        return value
    if isinstance(value, str):
        try:
            return enum_cls(value.strip().lower().replace("-", "_"))
        except ValueError:
            pass
    valid = ", ".join(str(m.value) for m in enum_cls)
    raise InvalidInput(f"unknown {what} {value!r}; valid values: {valid}")


def parse_type(value: object) -> MemoryType:
    return parse_enum(MemoryType, value, "memory type")


def parse_source(value: object) -> MemorySource:
    return parse_enum(MemorySource, value, "source")


def parse_scope(value: object) -> MemoryScope:
    return parse_enum(MemoryScope, value, "scope")


def parse_phase(value: object) -> UniversalPhase | None:
    if value is None:
        return None
    return parse_enum(UniversalPhase, value, "phase")


def parse_correction(value: object) -> CorrectionKind:
    return parse_enum(CorrectionKind, value, "correction kind")


def validate_text(content: object, max_chars: int) -> str:
    """The memory text, or :class:`InvalidInput` saying why it cannot be stored."""
    if not isinstance(content, str):
        raise InvalidInput("memory text must be a string")
    if "\x00" in content or "\ufffd" in content:
        raise InvalidInput("memory text looks binary (it contains NUL or undecodable bytes)")
    controls = sum(1 for ch in content if ord(ch) < 32 and ch not in "\n\r\t")
    if controls and controls * 20 > len(content):
        raise InvalidInput("memory text looks binary (too many control characters)")
    text = content.strip()
    if not text:
        raise InvalidInput("memory text is empty")
    if len(text) > max_chars:
        raise InvalidInput(
            f"memory text is {len(text)} characters, over the limit of {max_chars} "
            "(safety.max_content_chars); store a summary and anchor it to the file instead"
        )
    return text


def as_list(value: object) -> list[object]:
    """One value or several as a list (a string is one value, not its characters)."""
    if isinstance(value, str) or not isinstance(value, Sequence):
        return [value]
    return list(value)


__all__ = [
    "as_list",
    "parse_correction",
    "parse_enum",
    "parse_phase",
    "parse_scope",
    "parse_source",
    "parse_type",
    "validate_text",
]


#: A symbol name (``Class.method``) is one identifier path, never a document.
MAX_SYMBOL_CHARS = 512


def validate_symbol(symbol: str | None) -> str | None:
    """A symbol name, or :class:`InvalidInput` saying why it is not one (too long, NUL)."""
    if symbol is None:
        return None
    if not isinstance(symbol, str):
        raise InvalidInput("symbol must be a string")
    if "\x00" in symbol:
        raise InvalidInput("symbol contains a NUL byte")
    if len(symbol) > MAX_SYMBOL_CHARS:
        raise InvalidInput(
            f"symbol is {len(symbol)} characters, over the limit of {MAX_SYMBOL_CHARS}"
        )
    if not symbol.strip():
        raise InvalidInput("symbol name is empty")
    return symbol.strip()
