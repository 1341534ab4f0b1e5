"""What every CLI command shares: the engine, notes on stderr, JSON on stdout, progress bars.

Kept apart from the commands so that the declared use cases (``cli/declared.py``) and the
CLI's own commands (``cli/commands.py``) use them without importing each other.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, ExitStack, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import EngramError
from engram.quoting import replace_controls

if TYPE_CHECKING:  # the use cases cost ~70 ms to import: imported when a command runs
    from engram.app import Engine
    from engram.progress import Progress


def workspace_arg(args: argparse.Namespace) -> str | None:
    value = getattr(args, "workspace", None)
    return str(value) if value else None


def open_engine(
    args: argparse.Namespace,
    *,
    read_only: bool = False,
    overrides: dict[str, object] | None = None,
) -> AbstractContextManager[Engine]:
    """The engine a command runs on, for a ``with`` block.

    Inside the engine process (``engram.daemon``) that is the warm engine it lends to the
    command (never closed by it; ``overrides`` only keep a fresh process small, as
    ``index --no-embed`` does, and the warm engine holds its model already); elsewhere a
    fresh one, closed when the block ends.
    """
    from engram.app.engine import LENT_ENGINE, Engine

    lent = LENT_ENGINE.get()
    if lent is not None:
        wanted = workspace_arg(args)
        if wanted is not None and Path(wanted).expanduser().resolve() != lent.workspace.root:
            raise EngramError(f"this engine serves {lent.workspace.root}, not {wanted}")
        from engram.config import held_back

        # loading settings in-process logs these on stderr; the engine loaded them at its
        # start, into its own log, and the command said nothing of a held-back plugin
        for line in held_back(lent.settings_trust):
            note(f"WARNING: {line}")
        return nullcontext(lent)
    return Engine.open(workspace_arg(args), overrides, read_only=read_only)


def terminal_text(text: str) -> str:
    """``text`` as the terminal should show it: every control character but tab and newline
    as ``?`` (:func:`engram.quoting.replace_controls`, the one rule for them).

    Memory text, tags and anchors come from agents, teammates' files and imports: a text
    with an escape sequence passes the store's checks (a few control characters are not
    "binary"), and ``engram search``/``show``/``list`` printed it raw to the person's
    terminal. ``--json`` is unchanged (JSON escapes them).
    """
    return replace_controls(text, "?", keep="\t\n")


def note(message: str) -> None:
    """A one-line message for the person at the terminal (never on stdout)."""
    sys.stderr.write(f"engram: {terminal_text(message)}\n")


def emit_json(document: object) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")


@contextmanager
def progress_bar(label: str) -> Iterator[Progress]:
    """Progress on stderr, driven by the one :class:`~engram.progress.Progress`: a rich bar
    on a terminal, else plain periodic lines (:class:`~engram.cli.progress.ProgressLines`;
    docs/cli.md): a bar's control characters are garbage in a log or an agent's tool call,
    and no output at all left a long index silent for minutes."""
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    console = Console(stderr=True)
    if not console.is_terminal:
        with _progress_lines(label) as lines:
            yield lines
        return
    bar = Bar(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
        disable=not console.is_terminal,
    )
    task = bar.add_task(label, total=None)

    def update(done: int, total: int | None, message: str = "") -> None:
        if message:
            bar.update(task, description=f"{label}: {message}")
        bar.update(task, completed=done, total=total)

    with bar:
        yield update


@contextmanager
def staged_progress(stages: Sequence[str]) -> Iterator[Progress]:
    """One :func:`progress_bar` per stage of a pipeline whose progress messages are
    ``STAGE`` or ``STAGE: detail`` (``app.indexing.STAGES``): each stage gets its own label
    and its own last line with its total and time, as a person reads a long index."""
    with ExitStack() as stack:
        current: list[tuple[str, Progress]] = []

        def update(done: int, total: int | None, message: str = "") -> None:
            stage, _, detail = message.partition(": ")
            if stage not in stages:
                if not current:
                    return
                stage, detail = current[0][0], message
            if not current or current[0][0] != stage:
                stack.close()  # the previous stage's last line
                current[:] = [(stage, stack.enter_context(progress_bar(stage)))]
            current[0][1](done, total, detail)

        yield update


@contextmanager
def _progress_lines(label: str) -> Iterator[Progress]:
    """:class:`~engram.cli.progress.ProgressLines` on stderr, flushed per line (the engine
    streams a forwarded command's stderr to its caller as it is written);
    ``ENGRAM_PROGRESS_SECONDS`` sets the interval."""
    import os

    from engram.cli.progress import INTERVAL_SECONDS, ProgressLines

    try:
        interval = float(os.environ.get("ENGRAM_PROGRESS_SECONDS", INTERVAL_SECONDS))
    except ValueError:
        interval = INTERVAL_SECONDS

    def write(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    lines = ProgressLines(label, write, interval=max(0.0, interval))
    yield lines
    lines.finish()  # not after a failure: its error line is the last word


__all__ = [
    "emit_json",
    "note",
    "open_engine",
    "progress_bar",
    "staged_progress",
    "workspace_arg",
]
