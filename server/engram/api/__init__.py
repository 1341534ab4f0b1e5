"""Every use case of Engram, declared once (docs/architecture.md, "api").

``USE_CASES`` lists the declarations (:class:`~engram.api.declare.UseCase`) in the order the
docs show them; the CLI, the language server's ``workspace/executeCommand`` and the MCP
server build their commands and tools from it, and ``engram.cli.docs`` writes
docs/commands.md and the CLI reference from it. To add a use case: write the function in
``engram.app.<group>``, declare it in ``engram.api.memories``, ``corrections`` or ``workspace``
(arguments with :func:`~engram.api.declare.spec` limits, the two renderings) and add it to
that module's ``USE_CASES``; every surface it names then offers it.
"""

from __future__ import annotations

from engram.api import corrections, memories, workspace
from engram.api.declare import Surface, UseCase

USE_CASES: tuple[UseCase[object, object], ...] = (
    *memories.USE_CASES,
    *corrections.USE_CASES,
    *workspace.USE_CASES,
)


def on(surface: Surface) -> list[UseCase[object, object]]:
    """The use cases ``surface`` offers, in docs order."""
    return [u for u in USE_CASES if surface in u.surfaces]


def by_name(name: str) -> UseCase[object, object]:
    for usecase in USE_CASES:
        if usecase.name == name:
            return usecase
    raise KeyError(name)


__all__ = ["USE_CASES", "Surface", "UseCase", "by_name", "on"]
