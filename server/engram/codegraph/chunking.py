"""Code chunks for search: definitions stay whole, the rest is cut into overlapping windows.

Boundaries come from the graph's definitions (the ``definitions.scm`` queries), so a function
body is never split across chunks unless it is longer than a window itself. Every chunk
carries a contextual prefix (file, kind, name, lines; docs/codegraph.md) used for embedding, and a
search text with identifiers split into words for keyword search.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from functools import lru_cache
from typing import Protocol

import attrs

from engram.codegraph.symbols import Symbol

#: Longest definition kept as one chunk; longer ones are windowed.
MAX_CHUNK_LINES = 120
#: Window size and overlap for code outside definitions and for text files.
WINDOW_LINES = 40
WINDOW_OVERLAP = 8
#: Loose code (outside definitions) shorter than this is not worth its own chunk.
MIN_LOOSE_LINES = 3
#: Characters of a chunk kept for embedding (the model truncates long input anyway).
MAX_EMBED_CHARS = 2000

_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_HEADING_RE = re.compile(r"^\s{0,3}#{1,6}\s+(.+?)\s*#*\s*$")
_CLASS_KINDS = frozenset({"class", "interface", "struct", "trait", "enum", "module"})
#: Lines that belong to the definition below them when nothing separates the two: doc and
#: line comments of every supported language (``//``, ``///``, ``//!``, ``/** … */``, ``#``)
#: and decorators/annotations/attributes (``@x``, ``#[x]``). Go and Rust keep their docs in
#: comments above the definition, so without them ``ld``'s "levenshtein distance" was never
#: part of its chunk.
_LEADING_RE = re.compile(r"^\s*(//|/\*|\*|#|@|--)")
#: At most this many such lines are pulled in (a licence header is not a doc comment).
MAX_LEADING_LINES = 40


def split_identifier(identifier: str) -> list[str]:
    """``parseHTTPResponse_v2`` -> ``["parse", "http", "response", "v", "2"]``."""
    words: list[str] = []
    for part in re.split(r"[^0-9A-Za-z]+", identifier):
        if part:
            words.extend(w.lower() for w in _CAMEL_RE.findall(part))
    return words


@lru_cache(maxsize=4096)
def _name_words(name: str) -> str:
    """:func:`split_identifier` of a definition's name, joined (names repeat: ``get``,
    ``toString``, ``__init__``)."""
    return " ".join(split_identifier(name))


@attrs.define
class CodeChunk:
    file: str
    kind: str  # function | method | class | ... | module (code outside definitions) | text
    name: str | None
    start_line: int
    end_line: int
    content: str
    language: str | None = None

    @property
    def chunk_id(self) -> str:
        return f"{self.file}:{self.start_line}-{self.end_line}:{self.kind}"

    def context_prefix(self) -> str:
        """``File: a/b.py | function: load_config (load config) | Lines: 3-20``."""
        parts = [f"File: {self.file}"]
        if self.name:
            words = _name_words(self.name.rsplit(".", 1)[-1])
            parts.append(f"{self.kind}: {self.name}" + (f" ({words})" if words else ""))
        parts.append(f"Lines: {self.start_line}-{self.end_line}")
        return " | ".join(parts)

    def embedding_text(self) -> str:
        return embedding_text(self.context_prefix(), self.content)

    def search_text(self) -> str:
        """What keyword search sees: path, name and content (tokenised later)."""
        return f"{self.file} {self.name or ''} {self.content}"


def embedding_text(prefix: str, content: str) -> str:
    """What is embedded (and, with its split identifiers, keyword-indexed) of a chunk."""
    return f"{prefix}\n\n{content[:MAX_EMBED_CHARS]}"


def text_digest(text: str) -> str:
    """Hash of a chunk's embedding text: equal digests can share one vector."""
    return hashlib.sha1(text.encode("utf-8", "replace")).hexdigest()


#: One stored chunk of a file, in plain data: ``(id, kind, name or "", start_line,
#: end_line, content, digest of its embedding text)``; the chunk table keeps no copy of the
#: embedding text (docs/storage.md), only its digest in the stored hash.
ChunkRow = tuple[str, str, str, int, int, str, str]


class ChunkSink(Protocol):
    """Where a run's parse phase hands the chunks its workers cut
    (``engram.codegraph.search.ChunkPrefill``): the indexing process writes them while the
    workers parse on, instead of reading every file again after the graph (issue 18)."""

    def add(self, path: str, file_hash: str, chunks: list[ChunkRow]) -> None:
        """The chunks of ``path`` (content hash ``file_hash``), just stored in the graph."""

    def parsed(self) -> None:
        """No more chunks come: the parse phase is over (a stopped one never says so)."""


def unique_chunks(
    file: str, text: str, symbols: Sequence[Symbol], language: str | None
) -> list[CodeChunk]:
    """:func:`chunk_file` with one chunk per id (ids are the store's key: the last wins,
    at the place of the first)."""
    unique: dict[str, CodeChunk] = {}
    for chunk in chunk_file(file, text, symbols, language):
        unique[chunk.chunk_id] = chunk
    return list(unique.values())


def chunk_rows(
    file: str, text: str, symbols: Sequence[Symbol], language: str | None
) -> list[ChunkRow]:
    """The stored chunks of one file as :data:`ChunkRow` (a parse worker makes them from
    the text and definitions it has, so the main process neither reads the file again
    nor asks the graph for its symbols; docs/codegraph.md "The whole cold index")."""
    unique: dict[str, CodeChunk] = {}  # as unique_chunks, each id made once
    for chunk in chunk_file(file, text, symbols, language):
        unique[chunk.chunk_id] = chunk
    return [
        (chunk_id, chunk.kind, chunk.name or "", chunk.start_line, chunk.end_line,
         chunk.content, text_digest(embedding_text(chunk.context_prefix(), chunk.content)))
        for chunk_id, chunk in unique.items()
    ]  # fmt: skip


def _windows(
    lines: list[str], start: int, end: int, size: int, overlap: int
) -> list[tuple[int, int]]:
    """1-based inclusive windows covering ``start..end``."""
    spans: list[tuple[int, int]] = []
    position = start
    step = max(1, size - overlap)
    while position <= end:
        stop = min(end, position + size - 1)
        if any(map(str.strip, lines[position - 1 : stop])):
            spans.append((position, stop))
        if stop == end:
            break
        position += step
    return spans


def _text_name(lines: list[str], start: int, end: int) -> str | None:
    """The first Markdown heading in lines ``start..end``; a line without ``#`` is none
    (looked for in C before the regex: most lines of a text file hold no heading)."""
    for line in lines[start - 1 : end]:
        if "#" in line and (match := _HEADING_RE.match(line)):
            return match.group(1)[:80]
    return None


def chunk_file(
    file: str,
    text: str,
    symbols: Sequence[Symbol] = (),
    language: str | None = None,
) -> list[CodeChunk]:
    """Chunks of one file: one per definition (methods of big classes apart), windows elsewhere."""
    lines = text.splitlines()
    if not lines:
        return []
    total = len(lines)
    chunks: list[CodeChunk] = []
    # 1 where a chunk holds the line (index 0 and the sentinel past the end too): lines are
    # marked a slice at a time and the free runs found by ``find``, not a loop per line
    covered = bytearray(total + 2)
    covered[0] = covered[total + 1] = 1

    def body(start: int, end: int) -> str:
        return "\n".join(lines[start - 1 : end])

    def add(kind: str, name: str | None, start: int, end: int) -> None:
        start, end = max(1, start), min(total, end)
        if end < start:
            return
        chunks.append(CodeChunk(file, kind, name, start, end, body(start, end), language))
        covered[start : end + 1] = b"\x01" * (end - start + 1)

    def leading_start(start: int) -> int:
        """The first line of the comments/decorators directly above line ``start``."""
        first = start
        while (
            first > 1
            and start - first < MAX_LEADING_LINES
            and not covered[first - 1]
            and _LEADING_RE.match(lines[first - 2])
        ):
            first -= 1
        return first

    def add_definition(symbol: Symbol) -> None:
        start, end = leading_start(symbol.start_line), symbol.end_line
        if end - start + 1 <= MAX_CHUNK_LINES:
            add(symbol.kind, symbol.qualname, start, end)
            return
        for w_start, w_end in _windows(lines, start, end, MAX_CHUNK_LINES, WINDOW_OVERLAP):
            add(symbol.kind, symbol.qualname, w_start, w_end)

    ordered = sorted(symbols, key=lambda s: (s.start_line, -s.end_line))
    starts = [s.start_line for s in ordered]
    top_level: list[Symbol] = []
    for symbol in ordered:
        if not top_level or symbol.start_line > top_level[-1].end_line:
            top_level.append(symbol)
    for symbol in top_level:
        size = symbol.end_line - symbol.start_line + 1
        members = [  # those starting inside it, in order (the others cannot be members)
            s
            for s in ordered[
                bisect_left(starts, symbol.start_line) : bisect_right(starts, symbol.end_line)
            ]
            if s is not symbol
            and symbol.start_line <= s.start_line
            and s.end_line <= symbol.end_line
            and "." not in s.qualname[len(symbol.qualname) + 1 :]
        ]
        if symbol.kind in _CLASS_KINDS and size > MAX_CHUNK_LINES and members:
            # a big class: its header (up to the first member), then each member alone
            first = min(m.start_line for m in members)
            header_end = max(symbol.start_line, leading_start(first) - 1)
            add(symbol.kind, symbol.qualname, symbol.start_line, header_end)
            for member in members:
                add_definition(member)
        else:
            add_definition(symbol)
    # everything else: module-level code, or the whole file when nothing was parsed
    kind = "module" if symbols or language else "text"
    run_start = covered.find(0)
    while run_start != -1:
        run_end = covered.find(1, run_start)  # the sentinel ends the last run
        spans = _windows(lines, run_start, run_end - 1, WINDOW_LINES, WINDOW_OVERLAP)
        for w_start, w_end in spans:
            filled = len([line for line in map(str.strip, lines[w_start - 1 : w_end]) if line])
            if filled < MIN_LOOSE_LINES and (chunks or len(spans) > 1):
                continue  # a stray import or blank gap between definitions
            name = _text_name(lines, w_start, w_end) if kind == "text" else None
            chunks.append(
                CodeChunk(file, kind, name, w_start, w_end, body(w_start, w_end), language)
            )
        run_start = covered.find(0, run_end)
    chunks.sort(key=lambda c: (c.start_line, c.end_line))
    return chunks
