"""Team sharing rules: what may be shared, the shared file, reading it back.

What a sync does with what it read is the trust model's (tests/trust/).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from engram.lifecycle.team import (
    TEAM_TAG,
    read_team_folder,
    render_team_file,
    share_refusal,
    team_path,
)
from engram.model import Memory, MemoryScope, MemorySource, MemoryType, Provenance

NOW = datetime(2026, 5, 1, tzinfo=UTC)


def taught(content: str = "charge() takes cents, never euros", **kw: object) -> Memory:
    base: dict[str, object] = {
        "content": content,
        "type": MemoryType.GOTCHA,
        "source": MemorySource.USER_TAUGHT,
    }
    base.update(kw)
    return Memory(**base)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({}, None),
        ({"source": MemorySource.OBSERVER_INFERRED}, "nobody has confirmed it yet"),
        ({"source": MemorySource.OBSERVER_INFERRED, "user_verified": True}, None),
        ({"source": MemorySource.AGENT_EXPLICIT, "pinned": True}, None),
        ({"deprecated": True}, "deprecated"),
        # hidden by the trust model, not by a field of their own: never to a teammate
        (
            {"extra": {"lifecycle": {"flags": [{"kind": "not_useful", "by": "person:Ana"}]}}},
            "flagged",
        ),
        ({"extra": {"lifecycle": {"forgotten": {"by": "person:Ana"}}}}, "forgotten"),
        ({"extra": {"lifecycle": {"retired": {"by": "teammate:Bo"}}}}, "retired"),
        ({"stale_at": NOW}, "stale"),
        ({"needs_review": True}, "awaits review"),
        ({"tags": ["private"]}, "private"),
        ({"scope": MemoryScope.SESSION}, "scope is session"),
        ({"type": MemoryType.WORK_STATE}, "personal"),
        ({"type": MemoryType.PREFERENCE}, "personal"),
        ({"content": "deploy with token ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"}, "secret"),
    ],
)
def test_share_refusal(changes: dict[str, object], reason: str | None) -> None:
    got = share_refusal(taught(**changes))  # type: ignore[arg-type]
    if reason is None:
        assert got is None
    else:
        assert got is not None and reason in got


def test_asking_by_id_overrides_confirmation_but_never_safety() -> None:
    inferred = taught(source=MemorySource.OBSERVER_INFERRED, type=MemoryType.PREFERENCE)
    assert share_refusal(inferred, explicit=True) is None
    flagged = taught(extra={"lifecycle": {"flags": [{"kind": "wrong_scope", "by": "person:A"}]}})
    assert "flagged" in (share_refusal(flagged, explicit=True) or "")
    assert "private" in (share_refusal(taught(tags=["private"]), explicit=True) or "")
    assert "scope" in (share_refusal(taught(scope=MemoryScope.SESSION), explicit=True) or "")


def test_shared_file_keeps_team_knowledge_and_drops_local_state(tmp_path: Path) -> None:
    memory = taught(
        access_count=42,
        needs_review=False,
        provenance=Provenance(session_id="s-secret-local", commit_sha="abc123"),
        extra={"adjacent": ["m-x"]},
        tags=["billing"],
    )
    text = render_team_file(memory, shared_by="Ana", shared_at=NOW)
    record = json.loads(text)
    assert record["content"] == memory.content and record["id"] == memory.id
    assert record["shared"] == {"format": 1, "by": "Ana", "at": NOW.isoformat()}
    for local in ("access_count", "extra", "needs_review", "user_verified", "updated_at"):
        assert local not in record
    assert "session_id" not in record["provenance"]
    assert record["provenance"]["commit_sha"] == "abc123"
    # rendering is deterministic: sharing again makes no diff
    assert render_team_file(memory, shared_by="Ana", shared_at=NOW) == text

    folder = tmp_path / ".engram-team"
    folder.mkdir()
    team_path(folder, memory.id).write_text(text, encoding="utf-8")
    read = read_team_folder(folder, label=".engram-team")
    assert read.skipped == []
    (entry,) = read.entries
    got = entry.memory
    assert got.id == memory.id and got.content == memory.content
    assert TEAM_TAG in got.tags and "billing" in got.tags
    # the file never says how far it is trusted: the trust model decides (docs/trust.md)
    assert not got.user_verified and not got.pinned and got.access_count == 0
    assert got.extra["team"] == {
        "file": f".engram-team/{memory.id}.json",
        "by": "Ana",
        "at": NOW.isoformat(),
    }
    assert entry.shared_by == "Ana"


def test_bad_team_files_are_skipped_with_a_reason(tmp_path: Path) -> None:
    folder = tmp_path / "team"
    folder.mkdir()
    good = taught()
    (folder / f"{good.id}.json").write_text(
        render_team_file(good, shared_by=None, shared_at=NOW), encoding="utf-8"
    )
    (folder / "m-broken.json").write_text("{not json", encoding="utf-8")
    (folder / "m-list.json").write_text("[1, 2]", encoding="utf-8")
    (folder / "m-renamed.json").write_text(
        render_team_file(taught("other"), shared_by=None, shared_at=NOW), encoding="utf-8"
    )
    (folder / "m-notype.json").write_text(json.dumps({"content": "x", "type": "nonsense"}))
    secret = taught("the key is AKIAIOSFODNN7EXAMPLE for prod")
    (folder / f"{secret.id}.json").write_text(
        render_team_file(secret, shared_by=None, shared_at=NOW), encoding="utf-8"
    )
    (folder / "notes.txt").write_text("not a memory")
    read = read_team_folder(folder, label="team")
    assert [e.memory.id for e in read.entries] == [good.id]
    reasons = "\n".join(read.skipped)
    assert "team/m-broken.json: not valid JSON" in reasons
    assert "team/m-list.json: not a memory" in reasons
    assert "does not match the file name" in reasons
    assert "team/m-notype.json: not a memory" in reasons
    assert "secret" in reasons
    assert len(read.skipped) == 5


def test_team_bench_smoke() -> None:
    """scripts/bench/team.py on 20 memories prints its figures (and finds the 2 planted)."""
    import subprocess
    import sys

    script = Path(__file__).resolve().parents[2] / "scripts" / "bench" / "team.py"
    done = subprocess.run(
        [sys.executable, str(script), "--memories", "20", "--json"],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["benchmark"] == "team" and summary["shared_files"] == 20
    assert summary["sync_first_added"] == 20 and summary["sync_unchanged_count"] == 20
    assert summary["sync_one_edit_updated"] == 1 and summary["sync_first_conflicts"] == 2
    assert set(summary["ms_per_memory"]) == {"share", "sync_first", "remember_batch", "consolidate"}
