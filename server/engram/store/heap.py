"""Hand the C heap a large load freed back to the operating system.

Loading the memory snapshot reads the whole table through LanceDB and pyarrow and decodes
it into the snapshot's columns; the scan's buffers are freed afterwards, but glibc keeps
freed heap pages mapped, so a long-lived process (the language server, the workspace
engine) stays at the load's high-water mark. At 200,000 memories that was ~290 MB of the
810 MB a process held after the load (docs/lsp.md, "Memory at scale"). ``malloc_trim(0)``
returns those pages; where there is no glibc it is a no-op.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable

log = logging.getLogger(__name__)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, looked up once per process; None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util

    try:
        name = ctypes.util.find_library("c") or "libc.so.6"
        trim = getattr(ctypes.CDLL(name), "malloc_trim", None)
    except OSError as exc:  # musl and friends: nothing to trim this way
        log.debug("no malloc_trim: %s", exc)
        return None
    return trim if callable(trim) else None


def release_freed_heap() -> bool:
    """``malloc_trim(0)``: True when glibc was asked, False where it is not available."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
