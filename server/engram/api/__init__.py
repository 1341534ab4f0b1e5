"""Every use case of Engram, declared once (docs/architecture.md, "api").

``USE_CASES`` lists the declarations (:class:`~engram.api.declare.UseCase`) in the order the
docs show them; the CLI, the language server's ``workspace/executeCommand`` and the MCP
server build their commands and tools from it, and ``engram.cli.docs`` writes
docs/commands.md and the CLI reference from it. To add a use case: write the function in
``engram.app.<group>``, declare it in ``engram.api.memories``, ``corrections`` or ``workspace``
(arguments with :func:`~engram.api.declare.spec` limits, the two renderings) and add it to
that module's ``USE_CASES``; every surface it names then offers it.

The declaring modules are imported when first asked for (``USE_CASES``, :func:`on`,
:func:`by_name`), or one at a time with :func:`declared_in`: together they define some 70
attrs classes, and a CLI command that runs one use case imports only the module that
declares it (docs/cli.md, "Start-up").
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from engram.api.declare import Surface, UseCase

if TYPE_CHECKING:
    from types import ModuleType

    #: every declaration, in docs order (built on first access: see :func:`__getattr__`)
    USE_CASES: tuple[UseCase[object, object], ...]

#: The modules that declare use cases, in docs order.
MODULES = ("memories", "corrections", "workspace")


def _module(name: str) -> ModuleType:
    if name not in MODULES:
        raise KeyError(name)
    return importlib.import_module(f"{__name__}.{name}")


def declared_in(module: str) -> tuple[UseCase[object, object], ...]:
    """The use cases ``engram.api.<module>`` declares (importing only that module)."""
    found: tuple[UseCase[object, object], ...] = _module(module).USE_CASES
    return found


def all_use_cases() -> tuple[UseCase[object, object], ...]:
    """Every declaration, in docs order (imports every declaring module)."""
    return tuple(u for module in MODULES for u in declared_in(module))


def __getattr__(name: str) -> object:
    """``USE_CASES`` and the declaring modules, imported when first named (PEP 562)."""
    if name == "USE_CASES":
        return all_use_cases()
    if name in MODULES:
        return _module(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def on(surface: Surface) -> list[UseCase[object, object]]:
    """The use cases ``surface`` offers, in docs order."""
    return [u for u in all_use_cases() if surface in u.surfaces]


def by_name(name: str, module: str | None = None) -> UseCase[object, object]:
    """The declaration named ``name``; with ``module``, only that module is imported."""
    for usecase in declared_in(module) if module is not None else all_use_cases():
        if usecase.name == name:
            return usecase
    raise KeyError(name)


__all__ = [
    "MODULES",
    "USE_CASES",
    "Surface",
    "UseCase",
    "all_use_cases",
    "by_name",
    "declared_in",
    "on",
]
