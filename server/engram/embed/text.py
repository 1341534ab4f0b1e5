"""Contextual embedding text for memories (V5 §8: context before content)."""

from __future__ import annotations

from engram.model import Memory


def memory_embedding_text(memory: Memory) -> str:
    """``Type: gotcha | Files: a.py, b.py | Module: auth | Symbol: login`` + blank line + content.

    Prepending where a memory applies puts it near queries about that code even when the
    content never names the file (Anthropic's contextual embeddings, adapted to code).
    """
    files: list[str] = []
    symbols: list[str] = []
    for anchor in memory.anchors:
        if anchor.file not in files:
            files.append(anchor.file)
        if anchor.symbol and anchor.symbol not in symbols:
            symbols.append(anchor.symbol)
    files.extend(f for f in memory.related_files if f not in files)
    parts = [f"Type: {memory.type.value.replace('_', ' ')}"]
    if files:
        parts.append("Files: " + ", ".join(files[:5]))
    if memory.related_modules:
        parts.append("Module: " + memory.related_modules[0])
    if symbols:
        parts.append("Symbol: " + ", ".join(symbols[:3]))
    if memory.tags:
        parts.append("Tags: " + ", ".join(memory.tags[:8]))
    return " | ".join(parts) + "\n\n" + memory.content
