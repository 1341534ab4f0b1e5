"""The one progress callback every long step reports through.

``progress(done, total, message)``: ``done`` items of ``total`` (``None`` when unknown),
``message`` what is being worked on (a file, "embedding"). The CLI draws it as a bar on
stderr, the language server as ``$/progress``; indexing, history mining, embedding and
consolidation call it the same way, so no front end adapts one signature to another.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def __call__(self, done: int, total: int | None, message: str = "") -> None: ...


__all__ = ["Progress"]
