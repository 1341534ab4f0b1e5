"""The code graph: tree-sitter structure, impact analysis and code search.

Importing this package is cheap: tree-sitter grammars load on the first parse, and the
code-search half (embeddings, LanceDB) is imported only when its names are first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.codegraph.graph import (
    EDGE_WEIGHTS,
    MAX_DEPTH,
    CodeGraph,
    IndexReport,
    ReindexResult,
    build_graph_at,
)
from engram.codegraph.project import ProjectFact, detect_project
from engram.codegraph.symbols import Symbol

if TYPE_CHECKING:
    from engram.codegraph.chunking import CodeChunk, chunk_file
    from engram.codegraph.impact import (
        CoAccessSource,
        CoChangeRanking,
        CoChangeSource,
        ImpactAnalyzer,
        ImpactReport,
        rank_related_files,
        structure_prior,
    )
    from engram.codegraph.search import CodeHit, CodeSearch

_LAZY = {
    "CodeChunk": "engram.codegraph.chunking",
    "chunk_file": "engram.codegraph.chunking",
    "CoAccessSource": "engram.codegraph.impact",
    "CoChangeRanking": "engram.codegraph.impact",
    "CoChangeSource": "engram.codegraph.impact",
    "ImpactAnalyzer": "engram.codegraph.impact",
    "ImpactReport": "engram.codegraph.impact",
    "rank_related_files": "engram.codegraph.impact",
    "structure_prior": "engram.codegraph.impact",
    "CodeHit": "engram.codegraph.search",
    "CodeSearch": "engram.codegraph.search",
}


def __getattr__(name: str) -> object:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'engram.codegraph' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(module_name), name)


__all__ = [
    "EDGE_WEIGHTS",
    "MAX_DEPTH",
    "CoAccessSource",
    "CoChangeRanking",
    "CoChangeSource",
    "CodeChunk",
    "CodeGraph",
    "CodeHit",
    "CodeSearch",
    "ImpactAnalyzer",
    "ImpactReport",
    "IndexReport",
    "ProjectFact",
    "ReindexResult",
    "Symbol",
    "build_graph_at",
    "chunk_file",
    "detect_project",
    "rank_related_files",
    "structure_prior",
]
