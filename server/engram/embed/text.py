"""Contextual embedding text for memories (docs/retrieval.md: context before content)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from engram.model import Memory

#: ``extra`` key holding a short excerpt of the memory recorded just before this one in its
#: episode (the previous turn of a conversation, the step before in a debugging session).
EPISODE_BEFORE_KEY = "episode_before"
#: ``extra`` key holding the ids of the memories recorded right before/after (retrieval
#: lifts them next to a top result).
ADJACENT_KEY = "adjacent"
#: Characters of the previous memory kept as episode context: enough for the question a
#: reply answers, short enough that the memory's own content dominates its vector.
EPISODE_EXCERPT_CHARS = 160


def episode_excerpt(text: str, limit: int = EPISODE_EXCERPT_CHARS) -> str:
    """The first ``limit`` characters of ``text`` on one line, cut at a word boundary."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + " …"


def link_episode(
    memories: Sequence[Memory], same_episode: Callable[[Memory, Memory], bool] | None = None
) -> None:
    """Link memories recorded in sequence: neighbours' ids and the previous one's excerpt.

    For each memory, ``extra["adjacent"]`` gets the ids of the memories right before and
    after it, and ``extra["episode_before"]`` a short excerpt of the one before, when they
    belong to the same episode (``same_episode``; default: the same, set
    ``provenance.session_id``).
    Observers and importers that record an episode call this before ``remember_many``.
    """

    def default_same(a: Memory, b: Memory) -> bool:
        session = a.provenance.session_id
        return session is not None and session == b.provenance.session_id

    same = same_episode or default_same
    for i, memory in enumerate(memories):
        before = memories[i - 1] if i > 0 and same(memories[i - 1], memory) else None
        after = memories[i + 1] if i + 1 < len(memories) and same(memory, memories[i + 1]) else None
        memory.extra[ADJACENT_KEY] = [m.id for m in (before, after) if m is not None]
        if before is not None:
            memory.extra[EPISODE_BEFORE_KEY] = episode_excerpt(before.content)
        else:
            memory.extra.pop(EPISODE_BEFORE_KEY, None)


def memory_embedding_text(memory: Memory) -> str:
    """``Type: gotcha | Files: a.py, b.py | Module: auth | Symbol: login`` + blank line + content.

    Prepending where a memory applies puts it near queries about that code even when the
    content never names the file (Anthropic's contextual embeddings, adapted to code).
    A memory recorded inside an episode also carries a short excerpt of what came just
    before it (``extra["episode_before"]``): a reply ("yes, twice, last spring") or a fix
    ("pinned it to 2.3") means little alone, and the question or error before it is what
    a later query names.
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
    header = " | ".join(parts)
    before = memory.extra.get(EPISODE_BEFORE_KEY)
    if isinstance(before, str) and before.strip():
        header += "\nAfter: " + episode_excerpt(before)
    return header + "\n\n" + memory.content
