"""``engram serve`` with one search held until the test lets it go (tests only).

A real server process; the only change is in the use case it runs: a search for
``HOLD`` writes ``started`` in ``$ENGRAM_TEST_HOLD_DIR`` and waits there for ``release``,
so a test can change settings while a command is certainly running on the old engine.
Every engine opened and closed is written to ``engines.log`` in the same folder.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from engram.app import recall
from engram.app.engine import Engine

HOLD_DIR = Path(os.environ["ENGRAM_TEST_HOLD_DIR"])
real_search = recall.search
real_open = Engine.open.__func__  # type: ignore[attr-defined]
real_close = Engine.close


def note(line: str) -> None:
    with (HOLD_DIR / "engines.log").open("a", encoding="utf-8") as fh:
        fh.write(line + "\n")


def held_search(engine: Engine, query: str, **kwargs: Any) -> Any:
    if query == "HOLD":
        # written whole, then renamed: the test never reads a half-written file
        (HOLD_DIR / "started.tmp").write_text(str(id(engine)))
        (HOLD_DIR / "started.tmp").replace(HOLD_DIR / "started")
        deadline = time.monotonic() + 60
        while not (HOLD_DIR / "release").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        # the engine must still be open: its store answers
        engine.store.count()
        note(f"search done {id(engine)}")
    return real_search(engine, query, **kwargs)


def opened(cls: type[Engine], *args: Any, **kwargs: Any) -> Engine:
    engine = real_open(cls, *args, **kwargs)
    note(f"open {id(engine)}")
    return engine


def closed(self: Engine) -> None:
    note(f"close {id(self)}")
    real_close(self)


recall.search = held_search  # type: ignore[assignment]
Engine.open = classmethod(opened)  # type: ignore[assignment,method-assign]
Engine.close = closed  # type: ignore[method-assign]

if __name__ == "__main__":
    from engram.lsp import run_server

    sys.exit(run_server())
