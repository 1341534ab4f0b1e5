"""Export carries the audit trail; import keeps it as history and never raises trust.

docs/trust.md said "`engram export` writes each memory's trail with it"; on the old main the
export had no trail and a re-import replaced the stored record as the file said (a file
could verify a memory, lift a flag or raise its confidence).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engram.app import Engine
from engram.app.memories import confirm, flag, get
from engram.app.portability import export, import_file
from engram.app.remember import remember
from engram.app.trust import audit_log, edit
from engram.lifecycle import trust as rules
from engram.workspace import Workspace

NO_MODEL = {"embed": {"model": "none"}}


def _workspace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "jobs.py").write_text("TIMEOUT = 30\n\ndef run():\n    return 1\n")
    return root


@pytest.fixture
def exported(tmp_workspace: Workspace, tmp_path: Path) -> tuple[str, dict[str, Path]]:
    root = _workspace(tmp_workspace.root)
    with Engine.open(root, NO_MODEL) as engine:
        mid = remember(engine, "run() retries the job twice.", file="jobs.py").memory.id
        edit(engine, mid, content="run() retries the job twice, then gives up.", cause="t")
        confirm(engine, mid, cause="engram confirm")
        files = {}
        for fmt in ("json", "md"):
            files[fmt] = tmp_path / f"export.{fmt}"
            files[fmt].write_text(export(engine, fmt))
    return mid, files


def test_export_carries_each_memorys_trail(exported: tuple[str, dict[str, Path]]) -> None:
    mid, files = exported
    doc = json.loads(files["json"].read_text())
    record = next(r for r in doc["memories"] if r["id"] == mid)
    assert [e["event"] for e in record["audit"]] == ["create", "edit", "confirm"]
    assert record["audit"][1]["before"]["content"] == "run() retries the job twice."
    assert record["audit"][2]["after"]["state"] == "verified"
    markdown = files["md"].read_text()
    assert '"audit": [' in markdown and '"event": "confirm"' in markdown


@pytest.mark.parametrize("fmt", ["json", "md"])
def test_import_keeps_the_trail_as_history_and_never_raises_trust(
    exported: tuple[str, dict[str, Path]], tmp_path: Path, fmt: str
) -> None:
    mid, files = exported
    other = _workspace(tmp_path / "other")
    with Engine.open(other, NO_MODEL) as engine:
        report = import_file(engine, files[fmt])
        assert report.added == 1 and report.imported_audit == 3
        memory = get(engine, mid)
        # verified in the export; here nobody confirmed it: a file is not a person
        assert rules.state_of(memory) is not rules.TrustState.VERIFIED
        assert not memory.user_verified and memory.confidence <= 0.9
        trail = audit_log(engine, mid)
        imported = [e for e in trail if e.event.startswith("imported ")]
        assert [e.event for e in imported] == [
            "imported create",
            "imported edit",
            "imported confirm",
        ]
        assert all(e.note == f"from {files[fmt].name}" for e in imported)
        assert [e.event for e in trail if not e.event.startswith("imported ")] == ["create"]
        # the same file again: nothing duplicated, nothing moved
        again = import_file(engine, files[fmt])
        assert again.imported_audit == 0
        assert len(audit_log(engine, mid)) == len(trail)
        after = get(engine, mid)
        assert (after.confidence, after.user_verified) == (memory.confidence, memory.user_verified)


def test_reimporting_your_own_export_keeps_a_later_flag(
    exported: tuple[str, dict[str, Path]], tmp_workspace: Workspace
) -> None:
    mid, files = exported
    with Engine.open(tmp_workspace.root, NO_MODEL) as engine:
        flag(engine, mid, "outdated", cause="engram flag")
        before = audit_log(engine, mid)
        report = import_file(engine, files["json"])  # exported while it was verified
        assert report.unchanged == 1 and report.imported_audit == 0  # same text: kept as is
        memory = get(engine, mid)
        assert rules.state_of(memory) is rules.TrustState.FLAGGED
        assert audit_log(engine, mid) == before  # same text: nothing to record


def test_reimporting_an_export_counts_changed_and_unchanged_apart(
    exported: tuple[str, dict[str, Path]], tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """Issue 16: a re-imported export said every memory was "merged"; only one whose text
    the file changes is, and its trail records the import."""
    mid, files = exported
    with Engine.open(tmp_workspace.root, NO_MODEL) as engine:
        same = import_file(engine, files["md"])
        assert (same.added, same.merged, same.unchanged) == (0, 0, 1)
        edited = tmp_path / "edited.md"
        edited.write_text(files["md"].read_text().replace("then gives up", "then alerts"))
        changed = import_file(engine, edited)
        assert (changed.added, changed.merged, changed.unchanged) == (0, 1, 0)
        assert get(engine, mid).content == "run() retries the job twice, then alerts."
        assert audit_log(engine, mid)[-1].event == "import"


def test_an_imported_file_cannot_pin_or_claim_a_team_origin(
    exported: tuple[str, dict[str, Path]], tmp_path: Path
) -> None:
    """The walk imported a record with ``pinned`` and a made-up teammate: it stayed pinned
    and was shown fenced as an unreviewed teammate's. A pin is a person's act in this store
    and a team origin comes only from the team sync; a file says neither."""
    mid, files = exported
    doc = json.loads(files["json"].read_text())
    record_ = next(m for m in doc["memories"] if m["id"] == mid)
    record_["pinned"] = True
    record_.setdefault("extra", {})["team"] = {"file": ".engram-team/x.json", "by": "Mallory"}
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(doc))
    fresh = _workspace(tmp_path / "other")
    with Engine.open(fresh, NO_MODEL) as engine:
        assert import_file(engine, forged).added == 1
        memory = get(engine, mid)
        assert not memory.pinned and not memory.user_verified
        assert "team" not in memory.extra
        # re-importing onto the stored record: still neither
        assert import_file(engine, forged).added == 0
        memory = get(engine, mid)
        assert not memory.pinned and "team" not in memory.extra


@pytest.mark.parametrize("text_too", [False, True], ids=["label only", "label and text"])
def test_an_imported_file_cannot_say_who_stands_behind_a_stored_memory(
    tmp_workspace: Workspace, tmp_path: Path, text_too: bool
) -> None:
    """The source is who stands behind a memory (docs/trust.md): a re-imported file saying
    ``user_taught`` of an agent's memory in review made it a person's (ranked 1.4, not 1.2,
    and labelled so on every surface), and since c1f71d9 put the source in the trail's
    snapshot, a file changing the label alone did it too (stop 33)."""
    root = _workspace(tmp_workspace.root)
    with Engine.open(root, NO_MODEL) as engine:
        said = "run() retries the job twice."
        mid = remember(engine, said, file="jobs.py", source="agent_explicit").memory.id
        doc = json.loads(export(engine, "json"))
        record_ = next(m for m in doc["memories"] if m["id"] == mid)
        record_["source"] = "user_taught"
        if text_too:
            record_["content"] = "run() retries the job twice, then alerts."
        forged = tmp_path / "forged.json"
        forged.write_text(json.dumps(doc))
        report = import_file(engine, forged)
        assert report.merged == (1 if text_too else 0), report
        memory = get(engine, mid)
        assert memory.source.value == "agent_explicit", memory
        assert rules.state_of(memory) is rules.TrustState.REVIEW
