"""Export and import: JSON, Markdown, and the rule files agents already use.

Exports are how people share memories and take them elsewhere (docs/lifecycle.md GDPR controls):
JSON is exact and machine-readable; Markdown is readable and still importable (each
memory carries its JSON in an HTML comment). Import also reads CLAUDE.md, AGENTS.md and
.cursorrules, turning their bullet rules into typed ``user_taught`` memories so a team's
existing guidance shows up as diagnostics and context from day one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from engram.jsontypes import JsonObject

if TYPE_CHECKING:
    import cattrs

import attrs

from engram.errors import InvalidInput
from engram.model import (
    AuditEntry,
    Memory,
    MemoryScope,
    MemorySource,
    MemoryType,
    SchemaError,
    check_memory_id,
    memory_from_dict,
    memory_to_dict,
    utcnow,
)
from engram.model.codec import make_converter

EXPORT_FORMAT_VERSION = 1
EXPORT_FORMATS = ("json", "md")
_MD_RECORD = re.compile(r"<!--\s*engram:\s*(\{.*?\})\s*-->", re.DOTALL)
#: "-->" inside a record would end the HTML comment early; JSON reads the escape back.
_ESCAPED_COMMENT_END = "--\\u003e"
RULE_FILE_NAMES = frozenset({"claude.md", "agents.md", ".cursorrules", "copilot-instructions.md"})


@attrs.define
class ParsedImport:
    """Memories read from a file, before the engine's remember pipeline runs on them."""

    kind: str  # "json" | "markdown" | "rules"
    memories: list[Memory]
    skipped: list[str] = attrs.field(factory=list)
    #: memory id -> the audit trail the export carried for it (docs/trust.md)
    audit: dict[str, list[AuditEntry]] = attrs.field(factory=dict)


#: Each exported record carries its audit trail under this key (not a Memory field).
AUDIT_KEY = "audit"
Trails = Mapping[str, Sequence[AuditEntry]]


def _record(memory: Memory, conv: cattrs.Converter, audit: Trails | None) -> JsonObject:
    data = memory_to_dict(memory, conv)
    if audit is not None:
        data[AUDIT_KEY] = [entry.to_dict() for entry in audit.get(memory.id, ())]
    return data


def _read_record(raw: JsonObject, conv: cattrs.Converter, out: ParsedImport) -> None:
    """One exported record into ``out``: the memory, and its trail when it has one."""
    raw = dict(raw)
    trail = raw.pop(AUDIT_KEY, None)
    memory = memory_from_dict(raw, conv)
    out.memories.append(memory)
    if isinstance(trail, list):
        entries: list[AuditEntry] = []
        for item in trail:
            try:
                entries.append(AuditEntry.from_dict(item))
            except (KeyError, ValueError, TypeError, AttributeError):
                out.skipped.append(f"{memory.id}: an audit entry could not be read")
        out.audit[memory.id] = [e for e in entries if e.memory_id == memory.id]


def export_memories(
    memories: Sequence[Memory],
    fmt: str,
    *,
    now: datetime | None = None,
    audit: Trails | None = None,
) -> str:
    """All ``memories`` as one JSON document or a Markdown page; with ``audit``, each
    record carries its trail (``"audit": [...]``, oldest first)."""
    now = now or utcnow()
    conv = make_converter()
    if fmt == "json":
        doc = {
            "engram_export": EXPORT_FORMAT_VERSION,
            "exported_at": now.isoformat(),
            "count": len(memories),
            "memories": [_record(m, conv, audit) for m in memories],
        }
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    if fmt in ("md", "markdown"):
        return _export_markdown(memories, now, conv, audit)
    raise InvalidInput(f"unknown export format {fmt!r}; use one of: {', '.join(EXPORT_FORMATS)}")


def _export_markdown(
    memories: Sequence[Memory], now: datetime, conv: cattrs.Converter, audit: Trails | None
) -> str:
    lines = [
        "# Engram memories",
        "",
        f"Exported {now.date().isoformat()}: {len(memories)} memories. Re-import with "
        "`engram import FILE`.",
        "",
    ]
    by_type: dict[MemoryType, list[Memory]] = {}
    for memory in memories:
        by_type.setdefault(memory.type, []).append(memory)
    for mtype in MemoryType:
        group = by_type.get(mtype)
        if not group:
            continue
        lines += [f"## {mtype.value}", ""]
        for memory in group:
            where = ", ".join(
                a.file + (f"::{a.symbol}" if a.symbol else "") for a in memory.anchors
            )
            badges = [memory.source.value, f"confidence {memory.confidence:.2f}"]
            if memory.user_verified:
                badges.append("verified")
            if memory.is_stale:
                badges.append("stale")
            if memory.deprecated:
                badges.append("deprecated")
            body = memory.content.replace("\n", "\n  ")
            lines.append(f"- **{memory.id}** {body}")
            lines.append(f"  _{' · '.join(badges)}{' · ' + where if where else ''}_")
            record = json.dumps(_record(memory, conv, audit), ensure_ascii=False)
            record = record.replace("-->", _ESCAPED_COMMENT_END)
            lines.append(f"  <!-- engram: {record} -->")
        lines.append("")
    return "\n".join(lines)


def import_kind(path: Path, text: str) -> str:
    """What ``text`` (read from ``path``) claims to be: ``json`` (an export, or JSON that is
    not one), ``markdown`` (an export) or ``rules``."""
    if path.suffix.lower() == ".json" or text.lstrip().startswith(("{", "[")):
        return "json"
    return "markdown" if _MD_RECORD.search(text) else "rules"


def is_rules_file(path: Path) -> bool:
    """Whether ``path``'s name is one a rules file has: Markdown or text (CLAUDE.md,
    AGENTS.md, copilot-instructions.md, a ``.mdc`` rule) or a dotfile ending in ``rules``
    (``.cursorrules``, ``.windsurfrules``). Any text file was read as rules: ``engram import
    app.py`` stored three lines of Python as the user's rules."""
    name = path.name.lower()
    return path.suffix.lower() in RULES_SUFFIXES or (
        name.startswith(".") and name.endswith("rules")
    )


#: The suffixes of a rules file (:func:`is_rules_file`).
RULES_SUFFIXES = frozenset({".md", ".markdown", ".mdc", ".txt"})


def parse_import(path: Path, text: str) -> ParsedImport:
    """Decide what ``text`` (read from ``path``) is and read its memories."""
    kind = import_kind(path, text)
    if kind == "json":
        return _parse_json(text, path)
    if kind == "markdown":
        return _parse_markdown_export(text)
    return ParsedImport("rules", parse_rules(text, source_name=path.name))


def _parse_json(text: str, path: Path) -> ParsedImport:
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path.name} is not valid JSON (line {exc.lineno}: {exc.msg})") from exc
    records = doc.get("memories") if isinstance(doc, dict) else doc
    if not isinstance(records, list):
        raise InvalidInput(f"{path.name} is not an Engram export (no 'memories' list)")
    conv = make_converter()
    out = ParsedImport("json", [])
    for index, raw in enumerate(records):
        if not isinstance(raw, dict):
            out.skipped.append(f"record {index}: not an object")
            continue
        try:
            check_memory_id(raw.get("id", "m-new"))  # an id names a team file: no paths
            _read_record(raw, conv, out)
        except (SchemaError, ValueError, TypeError) as exc:
            out.skipped.append(f"record {index}: {exc}")
    return out


def _parse_markdown_export(text: str) -> ParsedImport:
    conv = make_converter()
    out = ParsedImport("markdown", [])
    for index, match in enumerate(_MD_RECORD.finditer(text)):
        try:
            raw = json.loads(match.group(1).replace(_ESCAPED_COMMENT_END, "-->"))
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            check_memory_id(raw.get("id", "m-new"))  # an id names a team file: no paths
            _read_record(raw, conv, out)
        except (json.JSONDecodeError, SchemaError, ValueError, TypeError) as exc:
            out.skipped.append(f"record {index}: {exc}")
    return out


_BULLET = re.compile(r"^(\s*)(?:[-*+]|\d+[.)])\s+(.*)$")
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_GOTCHA = re.compile(
    r"\b(never|don'?t|do not|avoid|must not|mustn'?t|should not|shouldn'?t|no longer)\b", re.I
)
_DECISION = re.compile(r"\b(we decided|decided to|decision|because|chose|we chose)\b", re.I)
_PREFERENCE = re.compile(r"\b(prefer|prefers|preferred|use|always|should)\b", re.I)


def classify_rule(text: str) -> MemoryType:
    """never/don't/avoid -> gotcha; we decided/because -> decision; prefer/use/always ->
    preference; anything else -> pattern."""
    if _GOTCHA.search(text):
        return MemoryType.GOTCHA
    if _DECISION.search(text):
        return MemoryType.DECISION
    if _PREFERENCE.search(text):
        return MemoryType.PREFERENCE
    return MemoryType.PATTERN


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:40]


def stable_memory_id(key: str) -> str:
    """A deterministic id, so re-reading the same rule or fact updates instead of piling up
    (a merge would raise confidence on every re-import, which it must not)."""
    import hashlib

    return "m-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:10]


def parse_rules(text: str, *, source_name: str = "rules") -> list[Memory]:
    """Bullet rules (or, with no bullets, paragraphs) as typed ``user_taught`` memories.

    Ids are derived from the file name and the rule text, so importing the file again
    leaves unchanged rules alone.

    The headings above a rule become its tags; fenced code blocks are skipped; a bullet's
    indented continuation lines belong to it.
    """
    headings: list[tuple[int, str]] = []
    rules: list[tuple[str, list[str]]] = []
    paragraphs: list[tuple[str, list[str]]] = []
    current: list[str] | None = None
    paragraph: list[str] = []
    in_fence = False

    def tags() -> list[str]:
        return [s for s in (_slug(h) for _, h in headings) if s]

    def flush_paragraph() -> None:
        if paragraph:
            paragraphs.append((" ".join(paragraph), tags()))
            paragraph.clear()

    for line in text.splitlines():
        if line.strip().startswith(("```", "~~~")):
            in_fence = not in_fence
            current = None
            flush_paragraph()
            continue
        if in_fence:
            continue
        heading = _HEADING.match(line)
        if heading:
            flush_paragraph()
            level = len(heading.group(1))
            headings = [h for h in headings if h[0] < level] + [(level, heading.group(2))]
            current = None
            continue
        bullet = _BULLET.match(line)
        if bullet:
            flush_paragraph()
            current = [bullet.group(2).strip()]
            rules.append(("", tags()))
            rules[-1] = (current[0], rules[-1][1])
            continue
        if not line.strip():
            current = None
            flush_paragraph()
            continue
        if current is not None and line.startswith((" ", "\t")) and rules:
            body, rule_tags = rules[-1]
            rules[-1] = (body + " " + line.strip(), rule_tags)
            continue
        current = None
        paragraph.append(line.strip())
    flush_paragraph()

    chosen = rules if rules else paragraphs
    memories: list[Memory] = []
    source_tag = _slug(source_name) or "rules"
    for body, rule_tags in chosen:
        clean = body.strip()
        if len(clean) < 3:
            continue
        memories.append(
            Memory(
                id=stable_memory_id(f"rule:{source_name}:{clean}"),
                content=clean,
                type=classify_rule(clean),
                source=MemorySource.USER_TAUGHT,
                scope=MemoryScope.GLOBAL,
                confidence=0.8,
                tags=list(dict.fromkeys([*rule_tags, source_tag])),
                extra={"imported_from": source_name},
            )
        )
    return memories
