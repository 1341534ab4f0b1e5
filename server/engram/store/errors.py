"""Store failures, each a one-line message for the user.

``StoreLocked`` is defined in :mod:`engram.errors` (the contract) and re-exported here so
callers of the store find every store error in one place.
"""

from __future__ import annotations

from engram.errors import EngramError, StoreLocked


class StoreError(EngramError):
    """The store cannot be opened, read or written; ``str(exc)`` says where and what to do."""


class AfterCommitError(StoreError):
    """A write was committed, and a step after it (index upkeep, the change log) failed:
    the data is stored, so what describes it (the audit trail) must stay."""


__all__ = ["AfterCommitError", "StoreError", "StoreLocked"]
