"""Memory lifecycle: the trust model (``lifecycle.trust``), redaction, near-duplicate
merging, pruning, export/import.

Pure functions over :class:`engram.model.Memory`; the engine applies their results to the
store under its writer lock. Nothing here imports a heavy dependency at import time.

The names below are imported on first use (PEP 562): importing ``engram.lifecycle.trust``
(the language server's way to ``initialize`` does, for ``Actor``) must not compile the
redaction's dozens of patterns or load the import/export code.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.lifecycle.dedup import DuplicateMatch, find_duplicate, merge_memories, text_ratio
    from engram.lifecycle.portability import (
        EXPORT_FORMATS,
        ParsedImport,
        classify_rule,
        export_memories,
        parse_import,
        parse_rules,
        stable_memory_id,
    )
    from engram.lifecycle.prune import PruneReport, plan_prune
    from engram.lifecycle.redaction import RedactionResult, redact_secrets

#: name -> the submodule that defines it
_LAZY = {
    "DuplicateMatch": "dedup",
    "find_duplicate": "dedup",
    "merge_memories": "dedup",
    "text_ratio": "dedup",
    "EXPORT_FORMATS": "portability",
    "ParsedImport": "portability",
    "classify_rule": "portability",
    "export_memories": "portability",
    "parse_import": "portability",
    "parse_rules": "portability",
    "stable_memory_id": "portability",
    "PruneReport": "prune",
    "plan_prune": "prune",
    "RedactionResult": "redaction",
    "redact_secrets": "redaction",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "EXPORT_FORMATS",
    "DuplicateMatch",
    "ParsedImport",
    "PruneReport",
    "RedactionResult",
    "classify_rule",
    "export_memories",
    "find_duplicate",
    "merge_memories",
    "parse_import",
    "parse_rules",
    "plan_prune",
    "redact_secrets",
    "stable_memory_id",
    "text_ratio",
]
