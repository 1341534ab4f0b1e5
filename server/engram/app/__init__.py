"""Engram's use cases over one composition root (docs/architecture.md, "Use cases").

``Engine`` (``app/engine.py``) wires the components of one workspace; each module next to
it holds one group of use cases as functions taking the engine first:

* ``remember``: ``remember``, ``remember_many`` (the write path)
* ``recall``: ``search``, ``search_code``, ``context``, ``record_access``, ``credit_session``
* ``usage``: ``PendingUses`` (``Engine.uses``: the uses reads count, written later)
* ``memories``: ``get``, ``list_memories``, ``for_file``, ``confirm``, ``flag``, ``pin``,
  ``forget``, ``restore`` (the moves themselves go through ``trust``)
* ``trust``: every change of what a memory is trusted to be, through ``lifecycle.trust``
  (docs/trust.md), with its audit entry: ``confirm``, ``flag``, ``pin``, ``forget``,
  ``restore``, ``edit``, ``audit_log``
* ``impact``: ``impact``
* ``indexing``: ``index``, ``index_chunks``, ``seed_workspace``, ``embed_missing``,
  ``rebuild_digest``
* ``history_sync``: ``sync_history``
* ``team``: ``share``, ``sync_team``
* ``maintenance``: ``prune``, ``consolidate``
* ``portability``: ``export``, ``import_file``
* ``doctor``: ``doctor``, ``stats``
* ``observe``: ``observe``, ``session_summary``
* ``report``: ``report``, ``write_report`` (the HTML report, docs/report.md)

Only the engine is imported here, so importing this package stays cheap; import a use-case
module where it is called.
"""

from engram.app.engine import Engine

__all__ = ["Engine"]
