"""The observer: learns from what editors and agents do (docs/observer.md).

Events (editor actions, agent tool calls and results, reasoning text, validations) go
through cheap signal detectors into a per-session scratchpad checkpointed to disk.
Nothing becomes a permanent memory until the session's work is validated (tests pass, a
commit, a task marked done, as the session type's gate says); then the promotion filter
pipeline turns the surviving signals into a few templated, reviewable memories.

Public surface (see ``observer.py`` for how the engine plugs it in)::

    Observer(EngineSink(engine))          # engram.app.observe: the engine's MemorySink
    observer.observe(event_dict) -> ObserveResult
    observer.finalize(session_id, outcome=None) -> PromotionReport
    observer.scratchpad_notes(session_id, file=None) -> list[ScratchpadNote]
    observer.session_summary(session_id=None) -> dict | None
    observer.coaccess_partners(file, k=10) -> list[tuple[str, float]]
    observer.seed_coaccess(edges) -> int
    engram.observer.claude_code.adapt(payload) -> list[dict]
"""

from engram.observer.events import (
    EventKind,
    InvalidEvent,
    ObservedEvent,
    ValidationKind,
    parse_event,
)
from engram.observer.methodology import (
    ENTRY_POINT_GROUP,
    BmadPlugin,
    MethodologyPlugin,
    NativePlugin,
    PluginRegistry,
    TddPlugin,
)
from engram.observer.observer import MemorySink, Observer
from engram.observer.patterns import error_fingerprint
from engram.observer.results import ObserveResult, PromotionReport, SessionSummary
from engram.observer.sessions import DEFAULT_GATES, SessionGate, gate_table
from engram.observer.signals import ScratchpadNote, Signal
from engram.observer.stats import ObserverStats

__all__ = [
    "DEFAULT_GATES",
    "ENTRY_POINT_GROUP",
    "BmadPlugin",
    "EventKind",
    "InvalidEvent",
    "MemorySink",
    "MethodologyPlugin",
    "NativePlugin",
    "ObserveResult",
    "ObservedEvent",
    "Observer",
    "ObserverStats",
    "PluginRegistry",
    "PromotionReport",
    "ScratchpadNote",
    "SessionGate",
    "SessionSummary",
    "Signal",
    "TddPlugin",
    "ValidationKind",
    "error_fingerprint",
    "gate_table",
    "parse_event",
]
