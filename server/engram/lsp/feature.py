"""What a language-server feature is: a name, how it registers, which settings it reads.

``features.py`` holds the one explicit list (as esbonio registers its features); a
settings change (``workspace/didChangeConfiguration``) computes which sections of
``EngramConfig`` changed and calls ``reconfigure`` only on the features that read one
of them (``handlers/settings.py``; docs/lsp.md "Settings").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from engram.config import EngramConfig
    from engram.lsp.folder import Folder
    from engram.lsp.server import EngramLanguageServer


def config_sections() -> frozenset[str]:
    """Every top-level section of ``EngramConfig`` (``diagnostics``, ``embed``, …)."""
    from engram.config import EngramConfig

    return frozenset(f.name for f in attrs.fields(EngramConfig))


def changed_sections(old: EngramConfig | None, new: EngramConfig) -> frozenset[str]:
    """The sections whose values differ (all of them when there was nothing before)."""
    if old is None:
        return config_sections()
    return frozenset(
        f.name for f in attrs.fields(type(new)) if getattr(old, f.name) != getattr(new, f.name)
    )


@attrs.frozen
class SettingsChange:
    """One folder's settings before and after, and the sections that differ."""

    folder: Folder
    old: EngramConfig | None
    new: EngramConfig
    sections: frozenset[str]


Reconfigure = Callable[["EngramLanguageServer", SettingsChange], Awaitable[None]]


@attrs.frozen
class Feature:
    """One feature of the server (an LSP method or family, or a piece of upkeep)."""

    name: str
    register: Callable[[EngramLanguageServer], None]
    #: the ``EngramConfig`` sections it reads: a change elsewhere leaves it alone
    settings: frozenset[str] = frozenset()
    #: applies a change of those sections (after the folder's new settings are in place)
    reconfigure: Reconfigure | None = None

    def affected_by(self, change: SettingsChange) -> bool:
        return self.reconfigure is not None and bool(self.settings & change.sections)
