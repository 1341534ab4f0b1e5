"""What the engine answers, besides hello/status/stop (docs/engine.md, "Requests").

* ``cli``: a command line forwarded by a thin ``engram`` process. The engine runs it with
  the very code a CLI process would (``engram.cli.main.main``, handed in as
  :attr:`FrontEnds.cli_main`; the declared use cases of ``engram.api`` among them), on the
  warm engine it lends to the command (``engram.app.engine.LENT_ENGINE``), with the
  caller's stdin and its own stdout/stderr captured (``engram.daemon.streams``), and
  returns those and the exit status. So every command prints exactly what it prints
  in-process, and there is no second list of commands here.
* ``call``: a declared use case by name with raw JSON arguments from a surface (the
  language server's ``workspace/executeCommand``, an MCP tool; sent by
  ``engram.daemon.calls``): checked by the declaration (``parse``), run (``execute``) and
  rendered (``to_json``/``to_text``/``notes``, and what an editor's session ledger
  records), exactly as the front end would have done in-process; an agent's ``actor``
  label travels with it.
* ``lsp``: what a thin language server reads (``engram.lsp.served.answer``, handed in as
  :attr:`FrontEnds.lsp_answer`).

Both front ends' code is handed in by ``engram.cli.engine_commands`` when it starts the
engine, so this package imports no front end: the layers in pyproject.toml
(docs/architecture.md). Every request runs in a worker thread of the engine process.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import attrs

from engram.api import Surface, UseCase, by_name
from engram.api.declare import with_actor
from engram.daemon import streams
from engram.errors import InvalidInput

if TYPE_CHECKING:
    from engram.app import Engine

log = logging.getLogger(__name__)

#: The longest command line the engine accepts (arguments, not stdin).
MAX_ARGV = 1000


class LspAnswer(Protocol):
    """``engram.lsp.served.answer``: a thin language server's read; ``note`` hears the
    progress of a long one (the ``stream`` frames of a request that asked for them)."""

    def __call__(
        self,
        engine: Engine,
        request: Mapping[str, object],
        note: Callable[[str], None] | None = None,
    ) -> dict[str, object]: ...


@attrs.frozen
class FrontEnds:
    """The front ends' code the engine runs (see the module docstring)."""

    #: ``engram.cli.main.main``: one command line, its exit status
    cli_main: Callable[[list[str]], int]
    #: ``engram.lsp.served.answer``: a thin language server's read
    lsp_answer: LspAnswer
    #: imports the code forwarded commands run, while the engine warms
    warm: Callable[[], None] = lambda: None


def run_cli(
    engine: Engine,
    request: Mapping[str, object],
    main: Callable[[list[str]], int],
    on_stderr: Callable[[str], None] | None = None,
) -> dict[str, object]:
    """Run a forwarded command line; ``{"exit", "stdout", "stderr"}``.

    ``main``: the CLI's entry (handed in: the engine never imports a front end).
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


def _declarations() -> tuple[Callable[[str], UseCase[object, object]], type[Surface]]:
    """``engram.api``'s lookup and its ``Surface`` enum (a test hands in its own)."""
    return by_name, Surface


def run_call(engine: Engine, request: Mapping[str, object]) -> dict[str, object]:
    """Run a declared use case: ``{"json", "text", "notes", "exit", "touched"}``."""
    name = request.get("usecase")
    surface_name = request.get("surface")
    raw = request.get("args", {})
    if not isinstance(name, str) or not isinstance(surface_name, str):
        raise InvalidInput("usecase and surface must be strings")
    if not isinstance(raw, dict):
        raise InvalidInput("the arguments must be a JSON object")
    lookup, surfaces = _declarations()
    try:
        usecase = lookup(name)
    except KeyError:
        raise InvalidInput(f"unknown use case {name!r}") from None
    try:
        surface = surfaces(surface_name)
    except ValueError:
        raise InvalidInput(f"unknown surface {surface_name!r}") from None
    args = usecase.parse(raw, surface)
    actor = request.get("actor")
    if actor is not None:
        args = with_actor(args, _agent_label(actor))
    result = usecase.execute(engine, args, surface)
    touched = usecase.touched(result) if usecase.touched is not None else None
    corrected = usecase.corrected(result) if usecase.corrected is not None else None
    return {
        "json": usecase.to_json(result),
        "text": usecase.to_text(result),
        "notes": list(usecase.notes(result)),
        "exit": int(usecase.exit_code(result)),
        "touched": None if touched is None else [_touched_id(t) for t in touched],
        # what an editor's session ledger records (engram.lsp.commands)
        "shown": list(usecase.shown(result)) if usecase.shown is not None else [],
        "learned": list(usecase.learned(result)) if usecase.learned is not None else [],
        "corrected": list(corrected) if corrected is not None else None,
    }


def _agent_label(raw: object) -> str:
    """The actor a front end sends: only ever an agent (``agent:mcp``, ``agent:lsp:<client>``;
    docs/trust.md "Agents are not people"). A front end that speaks for the person sends
    none, and the trust door names them from git, as in-process."""
    from engram.lifecycle.trust import Actor, ActorKind

    label = raw if isinstance(raw, str) else ""
    actor = Actor.parse(label)
    if actor is None or actor.kind is not ActorKind.AGENT:
        raise InvalidInput(f"actor must be an agent's label (agent:...), got {label[:80]!r}")
    return label


def _touched_id(item: object) -> str:
    memory_id = getattr(item, "id", item)
    return str(memory_id)


def workspace_matches(engine: Engine, root: object) -> bool:
    return isinstance(root, str) and Path(root).resolve() == engine.workspace.root


__all__ = ["FrontEnds", "run_call", "run_cli", "workspace_matches"]
