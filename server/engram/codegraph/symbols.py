"""A definition as the graph's queries hand it out (:class:`Symbol`).

A module of its own so that code chunking (:mod:`engram.codegraph.chunking`), which the
parse workers run on a file's definitions before the graph has them
(:mod:`engram.codegraph.parse_worker`), needs nothing of the graph's module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject


@attrs.define
class Symbol:
    """A definition for the LSP (hover, anchors by symbol) and the impact report."""

    name: str
    kind: str
    qualname: str
    file: str
    start_line: int
    end_line: int
    exported: bool = False

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)
