"""What every CLI command shares: the engine, notes on stderr, JSON on stdout, progress bars.

Kept apart from the commands so that the declared use cases (``cli/declared.py``) and the
CLI's own commands (``cli/commands.py``) use them without importing each other.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

from engram.errors import EngramError

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
        return nullcontext(lent)
    return Engine.open(workspace_arg(args), overrides, read_only=read_only)


def note(message: str) -> None:
    """A one-line message for the person at the terminal (never on stdout)."""
    sys.stderr.write(f"engram: {message}\n")


def emit_json(document: object) -> None:
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")


@contextmanager
def progress_bar(label: str) -> Iterator[Progress]:
    """A rich progress bar on stderr, driven by the one :class:`~engram.progress.Progress`."""
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    console = Console(stderr=True)
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


__all__ = ["emit_json", "note", "open_engine", "progress_bar", "workspace_arg"]
