"""``import lancedb`` without running the REST namespace client's package ``__init__``.

``lancedb`` imports ``lance_namespace``, which imports the models of the generated REST
client ``lance_namespace_urllib3_client``; importing any module of that package runs the
package's ``__init__`` first, and it imports all nine API modules (every REST operation of a
Lance namespace server, each method wrapped by pydantic's ``validate_call``). That is about
0.45 s of CPU of the ~1.1 s ``import lancedb`` costs, in every process that opens a store:
each CLI command, the workspace's engine, ``engram serve``, and so the test suite's few
hundred ``engram`` subprocesses. Engram opens tables with ``lancedb.connect`` (a directory or
an object store), never through a REST namespace, so it never calls those modules.

:func:`import_lancedb` registers the client package before lancedb imports it: the package
module with its ``__path__`` (its submodules, ``models`` among them, import as usual) whose
``__init__`` has not run yet. The first read of any other name of the package runs the
``__init__`` into that module (a module ``__getattr__``), so code that does use the client
sees the package it always saw. When the package is not found, or lancedb or the package
was imported already, it does nothing and ``import lancedb`` is the plain import.
"""

from __future__ import annotations

import sys
import threading
from types import ModuleType

#: the package whose ``__init__`` waits for its first use
CLIENT_PACKAGE = "lance_namespace_urllib3_client"


def import_lancedb() -> ModuleType:
    """The ``lancedb`` module, imported without the REST client's API modules."""
    if "lancedb" not in sys.modules and CLIENT_PACKAGE not in sys.modules:
        _defer_package_init(CLIENT_PACKAGE)
    import lancedb

    return lancedb


def _defer_package_init(name: str) -> None:
    """Put package ``name`` in ``sys.modules`` with its ``__init__`` run on first use."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return
    loader = spec.loader
    module = importlib.util.module_from_spec(spec)
    lock = threading.Lock()

    def load_on_first_use(attribute: str) -> object:
        with lock:
            if module.__dict__.get("__getattr__") is load_on_first_use:
                del module.__dict__["__getattr__"]
                loader.exec_module(module)
        return module.__dict__[attribute] if attribute in module.__dict__ else _missing(attribute)

    def _missing(attribute: str) -> object:
        raise AttributeError(f"module {name!r} has no attribute {attribute!r}")

    module.__dict__["__getattr__"] = load_on_first_use
    sys.modules[name] = module


__all__ = ["CLIENT_PACKAGE", "import_lancedb"]
