"""What the engine answers, besides hello/status/stop (docs/engine.md, "Requests").

* ``cli``: a command line forwarded by a thin ``engram`` process. The engine runs it with
  the very code a CLI process would (``engram.cli.main.main``; the declared use cases of
  ``engram.api`` among them), on the warm engine it lends to the command
  (``engram.app.engine.LENT_ENGINE``), with the caller's stdin and its own stdout/stderr
  captured (``engram.daemon.streams``), and returns those and the exit status. So every
  command prints exactly what it prints in-process, and there is no second list of
  commands here.
* ``call``: a declared use case by name with raw JSON arguments from a surface (the
  language server's ``workspace/executeCommand``, an MCP tool): checked by the
  declaration (``parse``), run (``execute``) and rendered (``to_json``/``to_text``/
  ``notes``), exactly as the front end would have done in-process.

Both run in a worker thread of the engine process.
"""

from __future__ import annotations

import base64
import importlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from engram.daemon import streams
from engram.errors import InvalidInput

if TYPE_CHECKING:
    from engram.app import Engine

log = logging.getLogger(__name__)

#: The longest command line the engine accepts (arguments, not stdin).
MAX_ARGV = 1000


def run_cli(
    engine: Engine,
    request: Mapping[str, object],
    on_stderr: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Run a forwarded command line; ``{"exit", "stdout", "stderr"}``.

    ``on_stderr``: the command's stderr as it is written (the caller asked for it to be
    streamed); the reply's ``stderr`` then holds nothing more.
    """
    argv = request.get("argv")
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise InvalidInput("argv must be a list of strings")
    if len(argv) > MAX_ARGV:
        raise InvalidInput(f"argv has {len(argv)} items, over the limit of {MAX_ARGV}")
    raw_stdin = request.get("stdin")
    data = base64.b64decode(raw_stdin) if isinstance(raw_stdin, str) else b""
    from engram.app.engine import LENT_ENGINE
    from engram.cli.main import main

    token = LENT_ENGINE.set(engine)
    try:
        with streams.captured(data, on_stderr) as capture:
            try:
                code = main(list(argv))
            except SystemExit as exc:  # argparse usage errors, --help
                code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
            return {
                "exit": int(code),
                "stdout": capture.text(capture.stdout),
                "stderr": capture.text(capture.stderr),
            }
    finally:
        LENT_ENGINE.reset(token)


class Declaration(Protocol):
    """What the engine needs of a use-case declaration (``engram.api``'s ``UseCase``)."""

    name: str

    def parse(self, raw: Mapping[str, object], surface: object) -> object: ...

    def execute(self, engine: Engine, args: object, surface: object) -> object: ...


def _declarations() -> tuple[object, object] | None:
    """``engram.api``'s lookup and ``Surface`` enum, when the package is there."""
    try:
        api = importlib.import_module("engram.api")
    except ModuleNotFoundError:
        return None
    return getattr(api, "by_name", None), getattr(api, "Surface", None)


def run_call(engine: Engine, request: Mapping[str, object]) -> dict[str, object]:
    """Run a declared use case: ``{"json", "text", "notes", "exit", "touched"}``."""
    name = request.get("usecase")
    surface_name = request.get("surface")
    raw = request.get("args", {})
    if not isinstance(name, str) or not isinstance(surface_name, str):
        raise InvalidInput("usecase and surface must be strings")
    if not isinstance(raw, dict):
        raise InvalidInput("the arguments must be a JSON object")
    found = _declarations()
    if found is None or not callable(found[0]) or found[1] is None:
        raise InvalidInput("this engine has no declared use cases (engram.api)")
    by_name, surface_enum = found
    try:
        usecase = by_name(name)  # type: ignore[operator]
    except KeyError:
        raise InvalidInput(f"unknown use case {name!r}") from None
    try:
        surface = surface_enum(surface_name)  # type: ignore[operator]
    except ValueError:
        raise InvalidInput(f"unknown surface {surface_name!r}") from None
    args = usecase.parse(raw, surface)
    result = usecase.execute(engine, args, surface)
    touched = usecase.touched(result) if getattr(usecase, "touched", None) else None
    return {
        "json": usecase.to_json(result),
        "text": usecase.to_text(result),
        "notes": list(usecase.notes(result)),
        "exit": int(usecase.exit_code(result)),
        "touched": None if touched is None else [_touched_id(t) for t in touched],
    }


def _touched_id(item: object) -> str:
    memory_id = getattr(item, "id", item)
    return str(memory_id)


def run_lsp(engine: Engine, request: Mapping[str, object]) -> dict[str, object]:
    """What a thin language server reads from the engine (``engram.lsp``'s remote folder).

    ``snapshot``: the memories of a file (``app.memories.for_file``) and its code symbols,
    after re-indexing it when asked (on save); ``impact``: the one-line impact summary
    hover shows; ``index``: the keyword-only index the language server runs at start;
    ``anchored``: files with diagnostic-type memories (pull diagnostics, workspace-wide).
    """
    from engram.lsp import folder as lsp_folder
    from engram.lsp.remote import partners_json
    from engram.model import memory_to_dict

    what = request.get("what")
    file = request.get("file")
    if what == "snapshot":
        if not isinstance(file, str):
            raise InvalidInput("snapshot needs a file")
        has_graph = bool(request.get("has_graph"))
        snap = lsp_folder.snapshot_blocking(
            engine, file, [], has_graph, bool(request.get("reindex"))
        )
        symbols = [[s.name, s.qualname, s.span.start, s.span.end] for s in snap.symbols]
        known = request.get("known")
        key = [list(k) for k in lsp_folder.memory_key(snap.memories)]
        partners = partners_json(snap.partners)  # a partner may change on its own
        if isinstance(known, list) and known == key:  # nothing to decode over there
            return {"unchanged": True, "symbols": symbols, "partners": partners}
        return {
            "memories": [memory_to_dict(m) for m in snap.memories],
            "symbols": symbols,
            "partners": partners,
        }
    if what == "impact":
        if not isinstance(file, str):
            raise InvalidInput("impact needs a file")
        return {"summary": lsp_folder.impact_blocking(engine, file)}
    if what == "index":
        from engram.app.indexing import index
        from engram.model import to_jsonable

        report = index(engine, embed_chunks=False, history=bool(request.get("history")))
        data = to_jsonable(report)
        return {"report": data if isinstance(data, dict) else {}}
    if what == "reindex":
        files = request.get("files")
        done = []
        for rel in files if isinstance(files, list) else []:
            if isinstance(rel, str):
                try:
                    engine.codegraph.reindex_file(rel)
                    done.append(rel)
                except Exception as exc:  # one file must not stop the others
                    log.debug("reindex of %s failed: %s", rel, exc)
        return {"files": done}
    if what == "anchored":
        from engram.app.memories import conflict_partners

        by_file = lsp_folder.anchored_files_blocking(engine)
        everyone = list({m.id: m for ms in by_file.values() for m in ms}.values())
        return {
            "files": {f: [memory_to_dict(m) for m in ms] for f, ms in by_file.items()},
            "partners": partners_json(conflict_partners(engine, everyone)),
        }
    raise InvalidInput(f"unknown language-server request {what!r}")


def workspace_matches(engine: Engine, root: object) -> bool:
    return isinstance(root, str) and Path(root).resolve() == engine.workspace.root


__all__ = ["Declaration", "run_call", "run_cli", "run_lsp", "workspace_matches"]
