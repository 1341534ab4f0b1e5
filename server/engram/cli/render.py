"""Turning engine results into terminal text and JSON.

Plain text, one memory per line, so ``grep`` and ``cut`` work on it; JSON through the one
function every front end shares (:func:`engram.model.to_jsonable`), which understands attrs
records, ``to_dict()`` methods, enums, datetimes and paths.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from engram.model import Memory, memory_json, shared_by_text, team_origin, to_jsonable, utcnow


def hit_to_dict(hit: Any) -> dict[str, Any]:
    memory: Memory = hit.memory
    return {
        "id": memory.id,
        "score": float(getattr(hit, "score", 0.0)),
        "stale": bool(getattr(hit, "stale", memory.is_stale)),
        "reasons": list(getattr(hit, "reasons", [])),
        "citation": memory.citation(),
        "type": memory.type.value,
        "source": memory.source.value,
        "confidence": memory.confidence,
        "content": memory.content,
        "anchors": [to_jsonable(a) for a in memory.anchors],
        "memory": memory_json(memory),
        "conflicts": [{"id": cid, "content": text} for cid, text in getattr(hit, "conflicts", [])],
        **({"conflict": hit.conflict_mark} if getattr(hit, "conflicts", None) else {}),
    }


def where(memory: Memory) -> str:
    if not memory.anchors:
        return memory.related_files[0] if memory.related_files else "-"
    anchor = memory.anchors[0]
    text = anchor.file
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


def print_log(entries: Sequence[Any], *, with_id: bool) -> None:
    """One line per audit entry: when, who, what, before -> after, and the cause."""
    if not entries:
        import sys

        sys.stderr.write("engram: no changes recorded\n")
        return
    for entry in entries:
        changes = "; ".join(
            f"{key}: {_short(entry.before.get(key))} -> {_short(entry.after.get(key))}"
            for key in entry.after
        )
        head = f"{entry.at:%Y-%m-%d %H:%M}  " + (f"{entry.memory_id}  " if with_id else "")
        line = f"{head}{entry.event:<14} {entry.actor}"
        if changes:
            line += f"  {changes}"
        if entry.note:
            line += f"  ({entry.note})"
        if entry.cause:
            line += f"  [{entry.cause}]"
        print(line)


def _short(value: Any, limit: int = 60) -> str:
    if value is None:
        return "-"
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


def print_memory_table(memories: Sequence[Memory]) -> None:
    if not memories:
        import sys

        sys.stderr.write("engram: no memories match\n")
        return
    for m in memories:
        state = _state(m)
        print(
            f"{m.id}  {m.type.value:<15} {m.source.value:<17} {m.confidence:.2f}  "
            f"{where(m)}  {_first_line(m.content, 70)}" + (f"  [{state}]" if state else "")
        )


def print_hits(hits: Sequence[Any]) -> None:
    if not hits:
        import sys

        sys.stderr.write("engram: no memories match\n")
        return
    for rank, hit in enumerate(hits, start=1):
        memory: Memory = hit.memory
        stale = "  [STALE: may be outdated]" if getattr(hit, "stale", False) else ""
        print(
            f"{rank:>2}. {memory.id}  {float(hit.score):.3f}  [{memory.type.value}] "
            f"{_first_line(memory.content, 90)}{stale}"
        )
        location = where(memory)
        if location != "-":
            print(f"    {location}")
        if getattr(hit, "conflicts", None):  # docs/trust.md "Conflicts": shown together
            print(f"    {hit.conflict_mark}")


def print_code_hits(hits: Sequence[Any]) -> None:
    if not hits:
        import sys

        sys.stderr.write("engram: no code matches\n")
        return
    for rank, hit in enumerate(hits, start=1):
        data = to_jsonable(hit)
        if not isinstance(data, dict):
            print(f"{rank:>2}. {data}")
            continue
        file = data.get("file") or data.get("path") or "?"
        start = data.get("start_line")
        symbol = data.get("symbol") or data.get("name") or ""
        score = data.get("score")
        line = f":{int(start) + 1}" if isinstance(start, int) else ""
        score_text = f"{float(score):.3f}  " if isinstance(score, int | float) else ""
        print(f"{rank:>2}. {score_text}{file}{line}  {symbol}".rstrip())


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


def one_line_summary(report: Any) -> str:
    data = to_jsonable(report)
    if isinstance(data, dict):
        parts = [
            f"{k.replace('_', ' ')} {round(v, 1) if isinstance(v, float) else v}"
            for k, v in data.items()
            if isinstance(v, int | float) and not isinstance(v, bool)
        ]
        return ", ".join(parts) or "done"
    return str(data)


def print_impact(report: Any) -> None:
    """Ranked files a change may break, with why; notes go to stderr."""
    import sys

    text = getattr(report, "text", None)
    if isinstance(text, str) and text.strip():
        print(text.rstrip())
        return
    data = to_jsonable(report)
    if not isinstance(data, dict):
        print(data)
        return
    target = data.get("target", "?") + (f"::{data['symbol']}" if data.get("symbol") else "")
    score = data.get("score")
    score_text = f" (impact score {float(score):.2f})" if isinstance(score, int | float) else ""
    refs = data.get("symbol_references")
    if data.get("symbol") and isinstance(refs, list):
        # the symbol's own users lead (issue 12): where it is referenced, file:line
        print(f"references to {data['symbol']} ({len(refs)}):")
        if not refs:
            print("  none resolved from other files")
        for ref in refs:
            print(f"  {ref.get('file')}:{ref.get('line')}  {ref.get('kind')}")
    print(f"impact of {target}{score_text}")
    items: list[Any] = next(
        (
            data[key]
            for key in ("ranked_files", "affected", "items", "direct_dependents")
            if isinstance(data.get(key), list) and data[key]
        ),
        [],
    )
    if not items:
        print("  nothing in the workspace depends on it")
    for item in items:
        if not isinstance(item, dict):
            print(f"  {item}")
            continue
        name = item.get("file") or item.get("path") or item.get("name") or "?"
        weight = item.get("score", item.get("weight"))
        reasons = item.get("reasons") or item.get("reason") or ""
        if isinstance(reasons, list):
            reasons = "; ".join(str(r) for r in reasons)
        weight_text = f"{float(weight):.2f}  " if isinstance(weight, int | float) else ""
        print(f"  {weight_text}{name}  {reasons}".rstrip())
    tests = data.get("tests")
    if isinstance(tests, list) and tests:
        print("tests to run: " + ", ".join(str(t) for t in tests))
    for note_text in data.get("notes") or []:
        sys.stderr.write(f"engram: {note_text}\n")


def stats_text(stats: Mapping[str, Any]) -> str:
    lines = [
        f"workspace      {stats.get('workspace')}",
        f"memories       {stats.get('active')} active, {stats.get('deprecated')} deprecated "
        f"({stats.get('needs_review')} need review, {stats.get('stale')} stale, "
        f"{stats.get('pinned')} pinned, {stats.get('user_verified')} verified)",
    ]
    for key in ("by_type", "by_source", "by_scope"):
        values = stats.get(key) or {}
        if values:
            joined = ", ".join(f"{k} {v}" for k, v in values.items())
            lines.append(f"{key.replace('_', ' '):<14} {joined}")
    size = int(stats.get("store_bytes") or 0)
    lines.append(f"store size     {size / 1_048_576:.1f} MiB")
    lines.append(f"embedding      {stats.get('embedding_model')}")
    return "\n".join(lines)
