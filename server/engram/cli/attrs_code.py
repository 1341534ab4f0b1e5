"""The methods attrs writes for the language server's classes, compiled once, not per start.

``engram serve`` answers ``initialize`` only once pygls and lsprotocol are imported, and
``lsprotocol.types`` defines some 600 attrs classes: attrs writes each one's ``__init__``,
``__eq__``, ``__repr__`` … as Python source and compiles it, at every start. That compile
was a third of the import, the largest part of what an agent's client waits for before
its first diagnostics (scripts/bench/first_diagnostics.py: spawn -> ``initialize`` ->
diagnostics of an open file). Here the compiled code objects are kept in the user's cache
(``$XDG_CACHE_HOME/engram/attrs-code/<python>.marshal``), keyed by the generated source
and its file name; attrs still writes the source and runs the code, only ``compile`` is
skipped. A script not seen before (another attrs or lsprotocol version, a class whose
``__hash__`` embeds this process's string hash) is compiled as before.

The file holds code this process runs, so it is read only from a directory that is the
user's own and nobody else can write to (as the engine's runtime directory,
``engram.daemon.address``), and written atomically; anything unexpected (no such attrs
function, an unreadable or foreign file) leaves attrs as it is.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import marshal
import os
import stat
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from types import CodeType

log = logging.getLogger(__name__)

#: code objects by (generated file name, digest of the generated source)
Codes = dict[tuple[str, bytes], CodeType]


def cache_file(environ: Mapping[str, str] | None = None) -> Path:
    """Where this Python's compiled attrs methods are kept (marshal is per version)."""
    env = os.environ if environ is None else environ
    user = env.get("HOME") or os.path.expanduser("~")
    home = env.get("XDG_CACHE_HOME") or os.path.join(user, ".cache")
    tag = sys.implementation.cache_tag or "python"
    return Path(home) / "engram" / "attrs-code" / f"{tag}.marshal"


def _private(path: Path) -> bool:
    """``path`` is this user's and only this user may write it."""
    try:
        info = path.stat()
    except OSError:
        return False
    own = not hasattr(os, "getuid") or info.st_uid == os.getuid()
    return own and not info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _load(path: Path) -> Codes:
    if not (_private(path.parent) and _private(path)):
        return {}
    try:
        loaded: object = marshal.loads(path.read_bytes())
    except (OSError, EOFError, ValueError, TypeError) as exc:
        log.debug("attrs code cache unreadable: %s", exc)
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {
        key: code
        for key, code in loaded.items()
        if isinstance(key, tuple)
        and len(key) == 2
        and isinstance(key[0], str)
        and isinstance(key[1], bytes)
        and isinstance(code, CodeType)
    }


def _save(path: Path, codes: Codes) -> None:
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not _private(path.parent):
            return
        part = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        part.write_bytes(marshal.dumps(codes))
        os.replace(part, path)
    except (OSError, ValueError) as exc:
        log.debug("attrs code cache not written: %s", exc)


#: the parameters of ``attr._make._compile_and_eval`` this module replaces it for
_SHAPE = ("script", "globs", "locs", "filename")


def _same_shape(function: object) -> bool:
    """``function`` takes exactly the arguments :func:`attrs_code_cache`'s stand-in does."""
    if not callable(function):
        return False
    import inspect

    try:
        names = tuple(inspect.signature(function).parameters)
    except (TypeError, ValueError):
        return False
    return names == _SHAPE


@contextlib.contextmanager
def attrs_code_cache(path: Path | None = None) -> Iterator[Codes]:
    """While the block runs, attrs compiles no method source it compiled at an earlier
    start; afterwards the code the block used is kept for the next one. Yields what
    this block compiled anew (empty when every script came from the cache)."""
    try:
        import attr._make as make
    except ImportError:
        yield {}
        return
    original: object = getattr(make, "_compile_and_eval", None)
    if not _same_shape(original):
        # another attrs (the dependency is ``attrs>=24.2``, unpinned): its private helper
        # may take other arguments, and a replacement called with them would fail the
        # start of ``engram serve``, so attrs is left as it is
        yield {}
        return
    where = path or cache_file()
    kept = _load(where)
    used: Codes = {}
    fresh: Codes = {}

    def compile_and_eval(
        script: str,
        globs: dict[str, object] | None,
        locs: Mapping[str, object] | None = None,
        filename: str = "",
    ) -> None:
        key = (filename, hashlib.blake2b(script.encode("utf-8"), digest_size=16).digest())
        code = kept.get(key)
        if code is None:
            # as attrs does: this module, like attr._make, compiles with annotations
            # postponed (both have ``from __future__ import annotations``)
            code = compile(script, filename, "exec")
            fresh[key] = code
        used[key] = code
        eval(code, globs, locs)

    setattr(make, "_compile_and_eval", compile_and_eval)  # noqa: B010 - attrs' private name
    try:
        yield fresh
    finally:
        setattr(make, "_compile_and_eval", original)  # noqa: B010
        # most of it new (a first start, an upgrade): keep what this start used, so the
        # file never grows with scripts no start asks for again
        if len(fresh) * 2 > len(used):
            _save(where, used)


__all__ = ["attrs_code_cache", "cache_file"]
