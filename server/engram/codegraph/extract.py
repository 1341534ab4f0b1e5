"""Facts about one source file, read from its syntax tree with the language's queries.

The extractor knows only the capture-name convention of ``grammars/README.md``; what a
language calls a class or an import lives in its ``.scm`` files. Syntax errors do not stop
extraction: tree-sitter recovers and we keep what it could parse.
"""

from __future__ import annotations

import bisect
import contextlib
import gc
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Query, QueryCursor, Tree

    from engram.codegraph.languages import LoadedLanguage

#: Definition kinds that make a nested function a method and prefix qualified names.
CONTAINER_KINDS = frozenset({"class", "interface", "struct", "trait", "impl", "enum", "module"})
#: Kinds used only for nesting; they do not become graph nodes.
HIDDEN_KINDS = frozenset({"impl"})
#: The deepest node a query match may start at. tree-sitter's query cursor counts a match's
#: start depth in 16 bits: in a tree deeper than that (a generated JS object nested 50,000
#: levels is a tree 100,000 deep) the states it opens below never retire and one 200 KB
#: file took 5.5 CPU s of queries (quadratic); with this limit it takes 0.02 s and every
#: file shallower than it gets exactly the matches it got before. Nothing written by hand
#: nests near it; a file that does is indexed down to it and noted (:data:`DEPTH_NOTE`,
#: docs/codegraph.md "Pathological files").
MAX_QUERY_DEPTH = 65_535
DEPTH_NOTE = f"nested deeper than {MAX_QUERY_DEPTH:,} levels: partial structure (not read below)"


@attrs.define
class Definition:
    name: str
    kind: str
    qualname: str
    start_line: int  # 1-based, inclusive
    end_line: int
    start_byte: int
    end_byte: int
    parent: int | None = None  # index into FileFacts.definitions
    exported: bool = False


@attrs.define
class ImportRef:
    module: str
    names: list[str] = attrs.field(factory=list)
    wildcard: bool = False
    line: int = 0


@attrs.define
class CallRef:
    name: str
    obj: str | None
    line: int
    caller: int | None  # index of the enclosing definition, None = module level


@attrs.define
class InheritanceRef:
    class_name: str
    base: str
    kind: str  # "extends" | "implements"
    line: int


@attrs.define
class FileFacts:
    language: str
    definitions: list[Definition] = attrs.field(factory=list)
    imports: list[ImportRef] = attrs.field(factory=list)
    calls: list[CallRef] = attrs.field(factory=list)
    inheritance: list[InheritanceRef] = attrs.field(factory=list)
    package: str | None = None
    has_errors: bool = False
    #: the tree is deeper than :data:`MAX_QUERY_DEPTH`: nothing below it was read
    depth_limited: bool = False


def _text(node: Node) -> str:
    raw = node.text or b""
    return raw.decode("utf-8", errors="replace")


def _strip_quotes(text: str) -> str:
    return text.strip().strip("\"'`")


Matches = dict[str, list[tuple[int, dict[str, Any]]]]


def _matches(loaded: LoadedLanguage, root: Node) -> Matches:
    """Matches of every query kind, from one pass of the combined query when there is one.

    Each kind keeps its matches in the order its own query would give them (a combined
    query reports matches in tree order, like each of its parts).
    """
    by_kind: Matches = {kind: [] for kind in loaded.queries}
    if loaded.combined is not None:
        kinds = loaded.combined_kinds
        for pattern, captures in _cursor(loaded.combined).matches(root):
            by_kind[kinds[pattern]].append((pattern, captures))
        return by_kind
    for kind, query in loaded.queries.items():
        by_kind[kind] = list(_cursor(query).matches(root))
    return by_kind


def _cursor(query: Query) -> QueryCursor:
    from tree_sitter import QueryCursor

    cursor = QueryCursor(query)
    cursor.set_max_start_depth(MAX_QUERY_DEPTH)
    return cursor


def deeper_than(root: Node, depth: int) -> bool:
    """Whether the tree goes below ``depth``, looked for along the largest child at each
    level: deep nesting is most of a file's bytes, so that path finds it. Only a file of
    more than ``depth`` bytes can be that deep (every level takes a byte at least), so
    other files cost nothing here."""
    if root.end_byte - root.start_byte <= depth:
        return False
    cursor = root.walk()
    level = 0
    while cursor.goto_first_child():
        level += 1
        if level > depth:
            return True
        largest, widest, index = 0, -1, 0
        while True:
            node = cursor.node
            if node is not None and node.end_byte - node.start_byte > widest:
                largest, widest = index, node.end_byte - node.start_byte
            if not cursor.goto_next_sibling():
                break
            index += 1
        cursor.goto_parent()
        cursor.goto_first_child()
        for _ in range(largest):
            cursor.goto_next_sibling()
    return False


def parse(parser: Parser, loaded: LoadedLanguage, source: bytes) -> Tree:
    parser.language = loaded.language
    return parser.parse(source)


def _common_prefix(a: bytes, b: bytes) -> int:
    """Length of the common prefix: binary search over slice comparisons (memcmp in C)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[:middle] == b[:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _common_suffix(a: bytes, b: bytes, limit: int) -> int:
    low, high = 0, limit
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle :] == b[len(b) - middle :]:
            low = middle
        else:
            high = middle - 1
    return low


def _point(source: bytes, offset: int) -> tuple[int, int]:
    """tree-sitter's (row, byte column) of a byte offset."""
    row = source.count(b"\n", 0, offset)
    return row, offset - (source.rfind(b"\n", 0, offset) + 1)


def reparse(
    parser: Parser, loaded: LoadedLanguage, old_source: bytes, old_tree: Tree, source: bytes
) -> Tree:
    """Parse ``source`` reusing ``old_tree`` (the tree of ``old_source``): tree-sitter's
    incremental parsing, as editors do it.

    The edit is the span between the common prefix and the common suffix of the two versions,
    which is exact for one contiguous edit and a superset for several. Re-indexing a 3,000-line
    file after a keystroke then costs ~2 ms of parsing instead of ~12 ms. ``old_tree`` is
    edited in place and must not be used afterwards.
    """
    start = _common_prefix(old_source, source)
    tail = _common_suffix(old_source, source, min(len(old_source), len(source)) - start)
    old_end, new_end = len(old_source) - tail, len(source) - tail
    old_tree.edit(
        start_byte=start,
        old_end_byte=old_end,
        new_end_byte=new_end,
        start_point=_point(old_source, start),
        old_end_point=_point(old_source, old_end),
        new_end_point=_point(source, new_end),
    )
    parser.language = loaded.language
    return parser.parse(source, old_tree)


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while one file's matches are read (or a bulk index
    pass runs: ``CodeGraph.index``).

    The matches are tens of thousands of short-lived dicts, lists and nodes that form no
    reference cycles and are all freed by reference counting when extraction returns. With
    the collector on, they trip its allocation thresholds: young collections walk them and
    every few files a full collection walks everything the process holds (15-30 ms in a
    language server: the tail of re-indexing one file). Paused, nothing is lost: what
    survives is still counted and collected later. Left as found when something else
    paused it.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def extract(loaded: LoadedLanguage, tree: Tree) -> FileFacts:
    """All facts of one parsed file; the tree is not kept."""
    root = tree.root_node
    facts = FileFacts(
        language=loaded.spec.name,
        has_errors=root.has_error,
        depth_limited=deeper_than(root, MAX_QUERY_DEPTH),
    )
    with collector_paused():
        matches = _matches(loaded, root)
        _collect_definitions(matches, facts)
        _collect_imports(matches, facts)
        _collect_calls(matches, facts)
        _collect_inheritance(matches, facts)
    return facts


def _collect_definitions(matches: Matches, facts: FileFacts) -> None:
    seen: dict[tuple[int, int], Definition] = {}
    exported: set[str] = set()
    # a Go method is declared at top level; its receiver's type names it (``Type.Method``)
    receivers: dict[int, str] = {}
    for _, caps in matches.get("definitions", []):
        for cap_name, nodes in caps.items():
            if cap_name == "export.name":
                exported.update(_text(n) for n in nodes)
        def_caps = [(k, v) for k, v in caps.items() if k.startswith("definition.")]
        names = caps.get("name")
        if not def_caps or not names:
            continue
        cap_name, nodes = def_caps[0]
        node = nodes[0]
        key = (node.start_byte, node.end_byte)
        if key in seen:
            continue
        seen[key] = Definition(
            name=_text(names[0]),
            kind=cap_name.removeprefix("definition."),
            qualname="",
            start_line=node.start_point[0] + 1,
            end_line=node.end_point[0] + 1,
            start_byte=node.start_byte,
            end_byte=node.end_byte,
        )
        receiver = caps.get("receiver")
        if receiver:
            receivers[node.start_byte] = _text(receiver[0])
    ordered = sorted(seen.values(), key=lambda d: (d.start_byte, -d.end_byte))
    stack: list[int] = []
    for index, definition in enumerate(ordered):
        while stack and ordered[stack[-1]].end_byte < definition.end_byte:
            stack.pop()
        # a definition nested in a non-container keeps the container chain for its name
        definition.parent = stack[-1] if stack else None
        parent = ordered[definition.parent] if definition.parent is not None else None
        if parent is not None:
            if definition.kind == "function" and parent.kind in CONTAINER_KINDS - {"module"}:
                definition.kind = "method"
            definition.qualname = f"{parent.qualname}.{definition.name}"
        else:
            receiver_type = receivers.get(definition.start_byte)
            definition.qualname = (
                f"{receiver_type}.{definition.name}" if receiver_type else definition.name
            )
            definition.exported = definition.name in exported
        stack.append(index)
    facts.definitions = ordered


def _collect_imports(matches: Matches, facts: FileFacts) -> None:
    by_key: dict[tuple[str, int], ImportRef] = {}
    for _, caps in matches.get("imports", []):
        if "package" in caps:
            facts.package = _text(caps["package"][0])
            continue
        modules = caps.get("import.module")
        if not modules:
            continue
        node = modules[0]
        module = _strip_quotes(_text(node))
        if not module:
            continue
        line = node.start_point[0] + 1
        ref = by_key.setdefault((module, line), ImportRef(module=module, line=line))
        for name_node in caps.get("import.name", []):
            name = _text(name_node)
            if name not in ref.names:
                ref.names.append(name)
        if "import.wildcard" in caps:
            ref.wildcard = True
    facts.imports = list(by_key.values())


def _enclosing(definitions: list[Definition], starts: list[int], byte: int) -> int | None:
    index = bisect.bisect_right(starts, byte) - 1
    while index >= 0:
        definition = definitions[index]
        if definition.start_byte <= byte < definition.end_byte:
            return index
        parent = definition.parent
        if parent is None:
            return None
        index = parent
    return None


def _collect_calls(matches: Matches, facts: FileFacts) -> None:
    starts = [d.start_byte for d in facts.definitions]
    seen: set[tuple[str, str | None, int | None]] = set()
    for _, caps in matches.get("calls", []):
        names = caps.get("call.name")
        if not names:
            continue
        node = names[0]
        name = _text(node)
        objects = caps.get("call.object")
        obj = _text(objects[0]) if objects else None
        if obj is not None and len(obj) > 80:
            obj = None
        caller = _enclosing(facts.definitions, starts, node.start_byte)
        key = (name, obj, caller)
        if key in seen:  # one edge per (callee, caller) is enough for the graph
            continue
        seen.add(key)
        facts.calls.append(CallRef(name, obj, node.start_point[0] + 1, caller))


def _collect_inheritance(matches: Matches, facts: FileFacts) -> None:
    seen: set[tuple[str, str, str]] = set()
    for _, caps in matches.get("inheritance", []):
        classes = caps.get("class.name")
        if not classes:
            continue
        class_name = _text(classes[0])
        for kind in ("extends", "implements"):
            for base_node in caps.get(kind, []):
                key = (class_name, _text(base_node), kind)
                if key not in seen:
                    seen.add(key)
                    facts.inheritance.append(
                        InheritanceRef(class_name, key[1], kind, base_node.start_point[0] + 1)
                    )
