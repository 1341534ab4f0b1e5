"""Anchors are validated once, here: the file, the lines and the symbol a memory points at.

``remember`` and ``edit`` (CLI, LSP, MCP: they all call these functions) and ``impact`` use
the same rules (issue 12 "Anchors validated"; docs/trust.md "Anchors"):

* the file must be inside the workspace (``Engine.relative`` refuses the rest) and exist,
  unless the caller says it is about to be created (``allow_missing``);
* a line range must lie inside the file;
* a symbol must be defined in the file. An unknown name is an error naming the closest
  definitions (rapidfuzz); a name defined several times resolves to the one implementation
  when the others are ``typing.overload`` stubs, to the one holding the given line, and
  otherwise is an error listing the candidates with their lines. Go's ``(*T).M`` is ``T.M``.
  The anchor keeps the definition's qualified name (``T.M`` for ``M``).

A file whose language has no grammar keeps the symbol as given: nothing can check it (so
does a code graph that cannot be read, with a warning in the log).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING

from engram.errors import InvalidInput
from engram.model import CodeAnchor, content_hash
from engram.workspace import WorkspaceError

if TYPE_CHECKING:
    from engram.app.engine import Engine
    from engram.codegraph import Symbol

log = logging.getLogger(__name__)

#: ``@overload``, ``@typing.overload``, ``@t.overload`` on the lines above a definition
_OVERLOAD = re.compile(r"^\s*@\s*(?:[A-Za-z_][\w]*\.)*overload\s*$")
#: how many candidates an error names
SHOWN = 5
#: Go's method expression, as a stack trace or ``go doc`` prints it: ``(*Mux).ServeHTTP``
#: and ``(Mux).ServeHTTP`` name ``Mux.ServeHTTP`` (a new user pasted one from a panic)
_GO_METHOD_EXPRESSION = re.compile(r"^\(\s*\*?\s*([A-Za-z_]\w*)(?:\[[^\]]*\])?\s*\)\.")


def anchor_for(
    engine: Engine,
    file: str,
    symbol: str | None = None,
    start_line: int | None = None,
    end_line: int | None = None,
    *,
    allow_missing: bool = False,
) -> CodeAnchor:
    """A validated anchor: workspace-relative path, 0-based inclusive lines, the lines' hash.

    Lines are 0-based as in LSP (the CLI converts from 1-based). Raises ``InvalidInput``
    with one line saying what is wrong (module docstring).
    """
    rel = engine.relative(file)
    if start_line is not None and start_line < 0:
        raise InvalidInput("line numbers start at 1")
    if end_line is not None and start_line is None:
        raise InvalidInput("an end line needs a start line")
    if end_line is not None and start_line is not None and end_line < start_line:
        raise InvalidInput(f"line range {start_line + 1}-{end_line + 1} is backwards")
    if end_line is None and start_line is not None:
        end_line = start_line
    path = engine.workspace.root / rel
    if not path.is_file():
        if path.exists():
            raise InvalidInput(f"{rel} is not a file")
        if not allow_missing:
            raise InvalidInput(
                f"{rel} does not exist (--allow-missing anchors a file you are about to create)"
            )
        return CodeAnchor(file=rel, symbol=symbol or None, start_line=start_line, end_line=end_line)
    lines = _read_lines(engine, rel)
    if start_line is not None and end_line is not None:
        _check_range(rel, start_line, end_line, len(lines))
    if symbol:
        found = resolve_symbol(engine, rel, symbol, line=start_line, lines=lines)
        if found is not None:
            # the definition's qualified name: a short one (`Flush`, which four Go types
            # define) made the editor's relocation, once the anchored lines changed, put the
            # memory on the first definition of that name (stop 33, go-chi/chi)
            symbol = found.qualname
            if start_line is None:
                start_line, end_line = found.start_line - 1, found.end_line - 1
    anchored_hash = (
        content_hash("\n".join(lines[start_line : (end_line or start_line) + 1]))
        if start_line is not None and lines
        else None
    )
    return CodeAnchor(
        file=rel,
        symbol=symbol or None,
        start_line=start_line,
        end_line=end_line,
        content_hash=anchored_hash,
    )


def resolve_symbol(
    engine: Engine,
    rel: str,
    name: str,
    *,
    line: int | None = None,
    lines: Sequence[str] | None = None,
    by_line: bool = True,
) -> Symbol | None:
    """The one definition ``name`` means in ``rel`` (module docstring), or ``None`` when the
    file's language has no grammar. ``line``: 0-based, a line the definition must hold;
    ``by_line`` False: the caller takes no line (``impact``), so an ambiguity asks only for
    the qualified name.

    The file is re-indexed first (incremental, cheap) so a symbol written a moment ago is
    found; the graph's lines are 1-based.
    """
    from engram.codegraph.languages import language_for

    if language_for(rel) is None:
        return None
    try:
        graph = engine.codegraph
        if not engine.read_only:
            graph.reindex_file(rel)
        symbols = graph.symbols_in(rel)
    except Exception as exc:  # a damaged or locked graph must not stop remember or impact
        log.warning("cannot check symbol %r in %s (code graph: %s); kept as given", name, rel, exc)
        return None
    if lines is None:
        lines = _read_lines(engine, rel)
    name = _GO_METHOD_EXPRESSION.sub(r"\1.", name.strip())
    named = [s for s in symbols if s.qualname == name] or [s for s in symbols if s.name == name]
    if not named:
        raise InvalidInput(f"no symbol {name!r} in {rel}; {_closest(name, symbols)}")
    if line is not None:
        holding = [s for s in named if s.start_line - 1 <= line <= s.end_line - 1]
        if not holding:
            raise InvalidInput(
                f"line {line + 1} is not inside {name!r} in {rel} ({_listed(named)})"
            )
        named = holding
    real = [s for s in named if not _is_overload_stub(s, lines)]
    candidates = real or named
    if len(candidates) > 1 and line is not None:  # nested: the innermost holds the line
        candidates = [min(candidates, key=lambda s: s.end_line - s.start_line)]
    if len(candidates) > 1:
        settle = "give the qualified name or a line" if by_line else "give the qualified name"
        raise InvalidInput(f"{name!r} is ambiguous in {rel}: {_listed(candidates)}; {settle}")
    return candidates[0]


def _is_overload_stub(symbol: Symbol, lines: Sequence[str]) -> bool:
    """A definition decorated ``@overload`` (its decorators sit right above its first line)."""
    index = symbol.start_line - 2  # the line above, 0-based
    while index >= 0 and lines[index].lstrip().startswith("@"):
        if _OVERLOAD.match(lines[index]):
            return True
        index -= 1
    return False


def _listed(symbols: Sequence[Symbol]) -> str:
    return ", ".join(f"{s.qualname} (line {s.start_line})" for s in symbols[:SHOWN])


def _closest(name: str, symbols: Sequence[Symbol]) -> str:
    from rapidfuzz import fuzz, process

    if not symbols:
        return "it defines no symbols"
    by_label = {s.qualname: s for s in symbols}
    choices = {label: s.name for label, s in by_label.items()}
    ranked = process.extract(name, choices, scorer=fuzz.WRatio, limit=3, score_cutoff=60)
    if not ranked:
        return "it defines " + _listed(symbols)
    return "closest: " + _listed([by_label[label] for _, _, label in ranked])


def _check_range(rel: str, start: int, end: int, count: int) -> None:
    if start >= count:
        raise InvalidInput(f"line {start + 1} is outside {rel} ({count} lines)")
    if end >= count:
        raise InvalidInput(f"lines {start + 1}-{end + 1} are outside {rel} ({count} lines)")


def _read_lines(engine: Engine, rel: str) -> list[str]:
    try:  # through the one confinement check (docs/security.md)
        text = engine.workspace.read_text(rel)
    except WorkspaceError as exc:
        raise InvalidInput(str(exc)) from exc
    except OSError as exc:
        raise InvalidInput(f"{rel} cannot be read: {exc.strerror or exc}") from exc
    return text.splitlines()


__all__ = ["anchor_for", "resolve_symbol"]
