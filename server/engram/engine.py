"""Moved: the composition root is :class:`engram.app.Engine`, the use cases are functions in
``engram.app.<group>`` (docs/architecture.md). This name stays for one step so branches
that still import it keep loading; new code imports ``engram.app``.
"""

from engram.app.engine import Engine

__all__ = ["Engine"]
