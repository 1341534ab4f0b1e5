"""Hand the C heap a large load freed back to the operating system.

Loading the memory snapshot reads the whole table through LanceDB and pyarrow and decodes
it into the snapshot's columns; the scan's buffers are freed afterwards, but glibc keeps
freed heap pages mapped, so a long-lived process (the language server, the workspace
engine) stays at the load's high-water mark. At 200,000 memories that was ~290 MB of the
810 MB a process held after the load (docs/lsp.md, "Memory at scale"). ``malloc_trim(0)``
returns those pages; where there is no glibc it is a no-op.
"""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)

_trim: object = None  # the resolved ``malloc_trim`` or False (unavailable); None: unresolved


def release_freed_heap() -> bool:
    """``malloc_trim(0)``: True when glibc was asked, False where it is not available."""
    global _trim
    if _trim is None:
        _trim = False
        if sys.platform.startswith("linux"):
            import ctypes
            import ctypes.util

            try:
                name = ctypes.util.find_library("c") or "libc.so.6"
                _trim = getattr(ctypes.CDLL(name), "malloc_trim", False)
            except OSError as exc:  # musl and friends: nothing to trim this way
                log.debug("no malloc_trim: %s", exc)
    if not _trim or not callable(_trim):
        return False
    _trim(0)
    return True
