"""Code actions: teach from a selection, and the quick fixes of every Engram diagnostic.

Each action is a ``Command`` that runs an ``engram.*`` executeCommand, so editors and
agents share one code path. The LSP has no text prompt (``window/showMessageRequest``
offers buttons, not an input box), so "remember selection" uses the selected text as the
memory's content; clients with an input box (the VS Code extension, the Neovim plugin)
let the user edit it and pass ``text`` in the same command arguments.
"""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from engram.jsontypes import JsonObject
from engram.lsp.diagnostics import SOURCE
from engram.model import CorrectionKind, Memory

#: Longest default memory text taken from a selection.
MAX_SELECTION_CHARS = 500

TEACH_KIND = "refactor.engram.teach"
#: Not ``source.*``: LSP source actions apply to a whole file, and VS Code leaves them out of
#: the Ctrl+. menu, so "show impact" and the actions on a memory under the cursor were only
#: reachable through "Source Action…" (found by tests/clients/test_vscode_e2e.py).
MEMORY_KIND = "refactor.engram.memory"

TEACH_TYPES: tuple[tuple[str, str], ...] = (
    ("gotcha", "gotcha"),
    ("decision", "decision"),
    ("pattern", "pattern"),
    ("dead_end", "dead end"),
    ("workflow_recipe", "recipe step"),
)

FLAG_TITLES: dict[CorrectionKind, str] = {
    CorrectionKind.INCORRECT: "incorrect",
    CorrectionKind.OUTDATED: "outdated",
    CorrectionKind.WRONG_SCOPE: "wrong here (scope)",
    CorrectionKind.NOT_USEFUL: "not useful",
}


def selection_text(lines: Sequence[str], rng: types.Range) -> str:
    """The selected text (whole document lines when the selection is empty or partial)."""
    start, end = rng.start, rng.end
    if start.line == end.line:
        if start.line >= len(lines):
            return ""
        line = lines[start.line]
        picked = line[start.character : end.character] if end.character > start.character else ""
        return picked.strip() or line.strip()
    chunk = [lines[i] for i in range(start.line, min(end.line, len(lines) - 1) + 1)]
    if chunk:
        chunk[0] = chunk[0][start.character :]
        if end.line < len(lines):
            chunk[-1] = chunk[-1][: end.character] if end.character else chunk[-1]
    return "\n".join(chunk).strip()


def kind_requested(
    kind: types.CodeActionKind | str | None, only: Sequence[types.CodeActionKind | str]
) -> bool:
    """Whether an action of ``kind`` is one the client asked for (``context.only``).

    LSP kinds are dotted hierarchies: ``quickfix`` asks for ``quickfix`` and
    ``quickfix.*``. They are compared as their values because ``str()`` of lsprotocol's
    ``CodeActionKind.QuickFix`` is ``"CodeActionKind.QuickFix"``: compared that way, a
    request for quick fixes only (VS Code's hover on a squiggle) got none and said
    "No quick fixes available".
    """
    if kind is None:
        return False
    value = kind.value if isinstance(kind, types.CodeActionKind) else kind
    for wanted in only:
        prefix = wanted.value if isinstance(wanted, types.CodeActionKind) else wanted
        if value == prefix or value.startswith(f"{prefix}."):
            return True
    return False


def _command(title: str, name: str, args: JsonObject) -> types.Command:
    return types.Command(title=title, command=name, arguments=[args])


def teach_actions(
    rel_path: str,
    lines: Sequence[str],
    rng: types.Range,
    symbol: str | None,
    file_arg: str | None = None,
) -> list[types.CodeAction]:
    """ "Engram: remember selection as …" for a non-empty selection."""
    text = selection_text(lines, rng)
    if not text:
        return []
    text = text[:MAX_SELECTION_CHARS]
    end_line = rng.end.line
    if rng.end.character == 0 and end_line > rng.start.line:
        end_line -= 1  # a selection that ends at column 0 does not include that line
    actions: list[types.CodeAction] = []
    for mtype, label in TEACH_TYPES:
        args: JsonObject = {
            "text": text,
            "type": mtype,
            "file": file_arg or rel_path,
            "start_line": rng.start.line,
            "end_line": end_line,
        }
        if symbol:
            args["symbol"] = symbol
            del args["start_line"], args["end_line"]
        if mtype == "workflow_recipe":
            args["extra"] = {
                "steps": [{"order": 1, "description": text, "canonical_file": rel_path}]
            }
        actions.append(
            types.CodeAction(
                title=f"Engram: remember selection as {label}",
                kind=TEACH_KIND,
                command=_command(f"Remember as {label}", "engram.remember", args),
            )
        )
    return actions


def memory_actions(
    memory_id: str,
    label: str,
    diagnostic: types.Diagnostic | None = None,
) -> list[types.CodeAction]:
    """Confirm, flag ×4 and pin for one memory (quick fixes when tied to a diagnostic)."""
    kind = types.CodeActionKind.QuickFix if diagnostic is not None else MEMORY_KIND
    diags = [diagnostic] if diagnostic is not None else None
    actions = [
        types.CodeAction(
            title=f"Engram: confirm {label}",
            kind=kind,
            diagnostics=diags,
            command=_command("Confirm memory", "engram.confirm", {"id": memory_id}),
        )
    ]
    for correction, title in FLAG_TITLES.items():
        actions.append(
            types.CodeAction(
                title=f"Engram: flag {label} as {title}",
                kind=kind,
                diagnostics=diags,
                command=_command(
                    f"Flag memory {title}",
                    "engram.flag",
                    {"id": memory_id, "kind": correction.value},
                ),
            )
        )
    actions.append(
        types.CodeAction(
            title=f"Engram: pin {label}",
            kind=kind,
            diagnostics=diags,
            command=_command("Pin memory", "engram.pin", {"id": memory_id, "pinned": True}),
        )
    )
    return actions


def diagnostic_memory_id(diagnostic: types.Diagnostic) -> str | None:
    if diagnostic.source != SOURCE:
        return None
    data = diagnostic.data
    if isinstance(data, dict) and isinstance(data.get("id"), str):
        return str(data["id"])
    return None


def build_code_actions(
    *,
    rel_path: str,
    lines: Sequence[str],
    rng: types.Range,
    diagnostics: Sequence[types.Diagnostic],
    memories_here: Sequence[Memory],
    symbol: str | None,
    impact_available: bool,
    file_arg: str | None = None,
) -> list[types.CodeAction]:
    """Every Engram action for a range: quick fixes, memory actions, impact, teach.

    ``file_arg``: how the commands' arguments name the file (default ``rel_path``). The
    server passes the absolute path: a path relative to its own folder is routed to the
    first folder of a multi-root window, so "remember selection" on the second folder's
    file went to the first folder's store (anchored to a file of the same name there).
    """
    actions: list[types.CodeAction] = []
    seen: set[str] = set()
    for diagnostic in diagnostics:
        memory_id = diagnostic_memory_id(diagnostic)
        if memory_id and memory_id not in seen:
            seen.add(memory_id)
            actions += memory_actions(memory_id, f"memory {memory_id}", diagnostic)
    for memory in memories_here:
        if memory.id not in seen:
            seen.add(memory.id)
            actions += memory_actions(memory.id, f"memory {memory.id}")
        for relation in memory.relations:
            if relation.target_memory_id:
                actions.append(
                    types.CodeAction(
                        title=f"Engram: open related memory {relation.target_memory_id} "
                        f"({relation.relation_type.value})",
                        kind=MEMORY_KIND,
                        command=_command(
                            "Open related memory",
                            "engram.open",
                            {"id": relation.target_memory_id},
                        ),
                    )
                )
    if impact_available:
        target = f"`{symbol}`" if symbol else rel_path
        args: JsonObject = {"file": file_arg or rel_path}
        if symbol:
            args["symbol"] = symbol
        actions.append(
            types.CodeAction(
                title=f"Engram: show impact of {target}",
                kind=MEMORY_KIND,
                command=_command("Show impact", "engram.impact", args),
            )
        )
    has_selection = (rng.start.line, rng.start.character) != (rng.end.line, rng.end.character)
    if has_selection:
        actions += teach_actions(rel_path, lines, rng, None, file_arg)
    return actions
