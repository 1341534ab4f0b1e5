"""Memory lifecycle: the trust model (``lifecycle.trust``), redaction, near-duplicate
merging, pruning, export/import.

Pure functions over :class:`engram.model.Memory`; the engine applies their results to the
store under its writer lock. Nothing here imports a heavy dependency at import time.
"""

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
