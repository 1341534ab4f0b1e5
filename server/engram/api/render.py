"""The renderings the use-case declarations share: text for people, JSON for programs.

Text is plain, one memory per line, so ``grep`` and ``cut`` work on it. JSON goes through
the one memory rendering (:func:`engram.model.memory_json`) and the one generic converter
(:func:`engram.model.to_jsonable`). Front ends never render a result themselves.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from engram.api.declare import JsonObject
from engram.model import (
    Memory,
    RelationType,
    memory_json,
    shared_by_text,
    team_origin,
    to_json_object,
    to_jsonable,
    utcnow,
)
from engram.quoting import code_span, replace_controls

if TYPE_CHECKING:
    from engram.codegraph import CodeHit, ImpactReport
    from engram.model.audit import AuditEntry
    from engram.retrieval import SearchHit


def hit_json(hit: SearchHit) -> JsonObject:
    """One search hit: the memory's record (:func:`engram.model.memory_json`) with its score,
    why it ranked, whether it may be stale, and the conflict mark when its other side is
    shown. Each fact once: the hit *is* the record (the editors read either shape), which an
    agent pays for by the token; a hit used to carry the record twice (its fields at the top
    and again under ``memory``) and each conflict three times (relations, a ``conflicts``
    list and the mark): 17k characters for ten hits over MCP. ``stale`` is the search's
    judgement (a deleted anchor file too), not only the record's ``stale_at``."""
    memory: Memory = hit.memory
    record = _shown_relations(memory_json(memory), {cid for cid, _ in hit.conflicts})
    return {
        "id": memory.id,
        "score": round(float(hit.score), 6),
        "reasons": list(hit.reasons),
        **record,
        "stale": bool(hit.stale),
        **({"conflict": hit.conflict_mark} if hit.conflicts else {}),
    }


def _shown_relations(record: JsonObject, shown: set[str]) -> JsonObject:
    """The record without its conflict links to memories nobody may be shown (flagged,
    forgotten: docs/trust.md): a hidden memory's id never reaches an editor or agent."""
    relations = record.get("relations")
    if not isinstance(relations, list):
        return record
    kept = [
        r
        for r in relations
        if not (
            isinstance(r, dict)
            and r.get("relation_type") == RelationType.CONFLICTS_WITH
            and r.get("target_memory_id") not in shown
        )
    ]
    return {**record, "relations": kept}


def path_text(path: object) -> str:
    """A repository's file name as one line of text: every control character, newlines
    included, as ``?``. A clone names its files: ``"a.py\n## Critical\n- [verified] …"``
    is a legal name, and printed raw it forged lines in impact and search output (the CLI,
    MCP results) and in hover's markdown (docs/security.md, "Robust inputs")."""
    return replace_controls(str(path))


def where(memory: Memory) -> str:
    if not memory.anchors:
        return path_text(memory.related_files[0]) if memory.related_files else "-"
    anchor = memory.anchors[0]
    text = path_text(anchor.file)
    if anchor.start_line is not None:
        text += f":{anchor.start_line + 1}"
        if anchor.end_line is not None and anchor.end_line != anchor.start_line:
            text += f"-{anchor.end_line + 1}"
    if anchor.symbol:
        text += f" ({anchor.symbol})"
    return text


def _first_line(text: str, limit: int = 80) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _state(memory: Memory) -> str:
    """``verified,pinned``: the trust state (docs/trust.md), then the pin."""
    from engram.lifecycle.trust import TrustState, state_of

    state = state_of(memory)
    marks = [] if state is TrustState.ACTIVE else [state.value]
    if memory.pinned:
        marks.append("pinned")
    return ",".join(marks)


def log_text(entries: Sequence[AuditEntry], *, with_id: bool) -> str:
    """One line per audit entry: when, who, what, before -> after, and the cause.

    A memory's text and a flag's note are anyone's words (a teammate's file, an agent's
    ``flag``): each is one quoted string, so a ``; pinned: False -> True; state: review ->
    active`` inside one reads as text, not as more changes of the entry (stop 31)."""
    lines = []
    for entry in entries:
        changes = "; ".join(
            f"{key}: {_short(entry.before.get(key), quote=key == 'content')} -> "
            f"{_short(entry.after.get(key), quote=key == 'content')}"
            for key in entry.after
        )
        head = f"{entry.at:%Y-%m-%d %H:%M}  " + (f"{entry.memory_id}  " if with_id else "")
        line = f"{head}{entry.event:<14} {entry.actor}"
        if changes:
            line += f"  {changes}"
        if entry.note:
            line += f"  (note: {_short(entry.note, 200, quote=True)})"
        if entry.cause:
            line += f"  [{entry.cause}]"
        if entry.pending:
            line += "  PENDING: not known to have been stored (settled at the next change)"
        lines.append(line)
    return "\n".join(lines)


def _short(value: object, limit: int = 60, *, quote: bool = False) -> str:
    """``value`` on one line within ``limit`` characters; ``quote``: a string as a JSON
    string literal (its own quotes escaped)."""
    if value is None:
        return "-"
    if quote and isinstance(value, str):
        return json.dumps(_short(value, limit), ensure_ascii=False)
    if isinstance(value, list):
        text = ", ".join(
            (v.get("file", "") + (f":{v['symbol']}" if v.get("symbol") else ""))
            if isinstance(v, dict)
            else str(v)
            for v in value
        )
        text = f"[{text}]"
    else:
        text = str(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def memory_table(memories: Sequence[Memory]) -> str:
    """One line per memory: id, type, source, confidence, where, text, state."""
    lines = []
    for m in memories:
        state = _state(m)
        lines.append(
            f"{m.id}  {m.type.value:<15} {m.source.value:<17} {m.confidence:.2f}  "
            f"{where(m)}  {_first_line(m.content, 70)}" + (f"  [{state}]" if state else "")
        )
    return "\n".join(lines)


def hits_text(hits: Sequence[SearchHit]) -> str:
    """Ranked hits, two lines each: the memory and where it applies."""
    lines = []
    for rank, hit in enumerate(hits, start=1):
        memory: Memory = hit.memory
        stale = "  [STALE: may be outdated]" if hit.stale else ""
        # the trust state as `list` shows it: an agent's or a teammate's memory says it
        # awaits review (docs/trust.md), which the search text left out
        state = "" if hit.stale else _state(memory)
        marks = f"  [{state}]" if state else ""
        lines.append(
            f"{rank:>2}. {memory.id}  {float(hit.score):.3f}  [{memory.type.value}] "
            f"{_first_line(memory.content, 90)}{stale}{marks}"
        )
        location = where(memory)
        if location != "-":
            lines.append(f"    {location}")
        shared = shared_by_text(memory)
        if shared:
            lines.append(f"    {shared}")
        if hit.conflicts:  # docs/trust.md "Conflicts": shown together, marked
            lines.append(f"    {hit.conflict_mark}")
    return "\n".join(lines)


def code_hits_text(hits: Sequence[CodeHit]) -> str:
    """Ranked code chunks: score, file:line, symbol."""
    lines = []
    for rank, hit in enumerate(hits, start=1):
        data = to_jsonable(hit)
        if not isinstance(data, dict):
            lines.append(f"{rank:>2}. {data}")
            continue
        file = path_text(data.get("file") or data.get("path") or "?")
        start = data.get("start_line")
        symbol = path_text(data.get("symbol") or data.get("name") or "")
        score = data.get("score")
        line = f":{int(start) + 1}" if isinstance(start, int) else ""
        score_text = f"{float(score):.3f}  " if isinstance(score, int | float) else ""
        lines.append(f"{rank:>2}. {score_text}{file}{line}  {symbol}".rstrip())
    return "\n".join(lines)


def memory_card(memory: Memory) -> str:
    now = utcnow()
    lines = [
        f"{memory.id}  [{memory.type.value}] [{memory.source.value}] scope {memory.scope.value}",
        f"confidence {memory.confidence:.2f} (now {memory.current_confidence(now):.2f})"
        + (
            f", half-life {memory.decay_half_life_days:g} days"
            if memory.decay_half_life_days
            else ", never decays"
        ),
    ]
    for anchor in memory.anchors:
        text = f"anchor: {anchor.file}"
        if anchor.start_line is not None:
            end = anchor.end_line if anchor.end_line is not None else anchor.start_line
            text += f" lines {anchor.start_line + 1}-{end + 1}"
        if anchor.symbol:
            text += f" symbol {anchor.symbol}"
        lines.append(text)
    if memory.related_files:
        lines.append("related: " + ", ".join(memory.related_files))
    if memory.tags:
        lines.append("tags: " + ", ".join(memory.tags))
    prov = memory.provenance
    origin = [f"created {memory.created_at:%Y-%m-%d %H:%M}"]
    if prov.session_id:
        origin.append(f"session {prov.session_id}")
    if prov.commit_sha:
        origin.append(f"commit {prov.commit_sha[:10]}")
    if prov.confirmed_by_sessions:
        origin.append(f"re-learned in {len(prov.confirmed_by_sessions)} sessions")
    origin.append(f"used {memory.access_count}×")
    lines.append(" · ".join(origin))
    state = _state(memory)
    if state:
        lines.append("state: " + state.replace(",", ", "))
    for correction in (
        memory.extra.get("corrections", [])
        if isinstance(memory.extra.get("corrections"), list)
        else []
    ):
        if isinstance(correction, dict):
            lines.append(
                f"correction: {correction.get('kind')} at {str(correction.get('at', ''))[:16]}"
                + (f" ({correction['note']})" if correction.get("note") else "")
            )
    for relation in memory.relations:
        target = relation.target_memory_id or relation.target_file
        if target:
            found = " (found automatically)" if relation.auto_extracted else ""
            lines.append(f"{relation.relation_type.value.replace('_', ' ')}: {target}{found}")
    team = team_origin(memory)
    if team is not None:
        lines.append(f"{shared_by_text(memory)} through {team.get('file')}")
    lines.append(f"citation: {memory.citation()}")
    lines.append("")
    lines.append(memory.content)
    return "\n".join(lines)


def one_line_summary(report: object) -> str:
    data = to_jsonable(report)
    if isinstance(data, dict):
        parts = [
            f"{k.replace('_', ' ')} {round(v, 1) if isinstance(v, float) else v}"
            for k, v in data.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        return ", ".join(parts) or "done"
    return str(data)


def impact_text(report: ImpactReport) -> str:
    """Ranked files a change may break, with why (its notes are the caller's)."""
    out: list[str] = []
    data = to_json_object(report)
    target = path_text(data.get("target", "?"))
    symbol = path_text(data["symbol"]) if data.get("symbol") else None
    score = data.get("score")
    score_text = f"impact score {float(score):.2f}" if isinstance(score, int | float) else ""
    refs = data.get("symbol_references")
    if symbol and isinstance(refs, list):
        # the symbol's own users lead (issue 12): where it is referenced, file:line; none
        # is one line, and the list below is the file's, said so (walk31: "0 references"
        # then a file-level list headed FILE::SYMBOL read as the symbol's own impact)
        if not refs:
            out.append(f"references to {symbol}: none resolved from other files")
        else:
            out.append(f"references to {symbol} ({len(refs)}):")
        for ref in refs:
            if isinstance(ref, dict):
                out.append(f"  {path_text(ref.get('file'))}:{ref.get('line')}  {ref.get('kind')}")
    said = [t for t in (symbol and f"the file that holds {symbol}", score_text) if t]
    out.append(f"impact of {target}" + (f" ({'; '.join(said)})" if said else ""))
    items = next(
        (
            found
            for key in ("ranked_files", "affected", "items", "direct_dependents")
            if isinstance(found := data.get(key), list) and found
        ),
        [],
    )
    if not items:
        out.append("  nothing in the workspace depends on it")
    for item in items:
        if not isinstance(item, dict):
            out.append(f"  {item}")
            continue
        name = path_text(item.get("file") or item.get("path") or item.get("name") or "?")
        weight = item.get("score", item.get("weight"))
        reasons = item.get("reasons") or item.get("reason") or ""
        if isinstance(reasons, list):
            reasons = "; ".join(str(r) for r in reasons)
        weight_text = f"{float(weight):.2f}  " if isinstance(weight, int | float) else ""
        out.append(f"  {weight_text}{name}  {reasons}".rstrip())
    tests = data.get("tests")
    if isinstance(tests, list) and tests:
        out.append("tests to run: " + ", ".join(path_text(t) for t in tests))
    return "\n".join(out)


def impact_summary(report: ImpactReport | None) -> str | None:
    """``3 dependents (7 transitive); usually changes with a.py (70%); tests: t.py``.

    The one-line summary hover shows and the impact result carries.
    """
    if report is None or not report.in_graph:
        return None
    direct = list(report.direct_dependents)
    transitive = list(report.transitive_dependents)
    parts: list[str] = []
    dependents = f"{len(direct)} dependent{'s' if len(direct) != 1 else ''}"
    if len(transitive) > len(direct):
        dependents += f" ({len(transitive)} transitive)"
    parts.append(dependents)
    cochange = sorted(report.cochange, key=lambda p: -float(p.confidence))
    if cochange:
        shown = ", ".join(
            f"{code_span(path_text(p.file))} ({round(float(p.confidence) * 100)}%)"
            for p in cochange[:2]
        )
        parts.append(f"usually changes with {shown}")
    tests = list(report.tests)
    if tests:
        more = f" (+{len(tests) - 2})" if len(tests) > 2 else ""
        parts.append("tests: " + ", ".join(code_span(path_text(t)) for t in tests[:2]) + more)
    return "; ".join(parts)


def stats_text(stats: Mapping[str, object]) -> str:
    lines = [
        f"workspace      {stats.get('workspace')}",
        f"memories       {stats.get('shown')} shown: {stats.get('active')} active, "
        f"{stats.get('needs_review')} in review, {stats.get('stale')} stale "
        f"({stats.get('pinned')} pinned, {stats.get('user_verified')} verified); "
        f"{stats.get('deprecated')} retired",
    ]
    for key in ("by_type", "by_source", "by_scope"):
        values = stats.get(key)
        if isinstance(values, Mapping) and values:
            joined = ", ".join(f"{k} {v}" for k, v in values.items())
            lines.append(f"{key.replace('_', ' '):<14} {joined}")
    stored = stats.get("store_bytes")
    size = stored if isinstance(stored, int) else 0
    lines.append(f"store size     {size / 1_048_576:.1f} MiB")
    lines.append(f"embedding      {stats.get('embedding_model')}")
    return "\n".join(lines)
