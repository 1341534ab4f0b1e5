"""The audit trail's storage (engram.store.AuditLog)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from engram.model import AuditEntry
from engram.store import AuditLog
from engram.workspace import Workspace

NOW = datetime(2025, 3, 1, tzinfo=UTC)


def entry(memory_id: str, n: int) -> AuditEntry:
    return AuditEntry(
        memory_id=memory_id,
        at=NOW + timedelta(minutes=n),
        event="confirm",
        actor="person:Ana",
        cause="engram confirm",
        before={"state": "active"},
        after={"state": "verified"},
    )


def test_append_and_read_back(tmp_workspace: Workspace) -> None:
    log = AuditLog(tmp_workspace)
    assert log.for_memory("m-1") == [] and log.count() == 0
    log.append([entry("m-1", 1), entry("m-2", 2), entry("m-1", 3)])
    assert [e.at.minute for e in log.for_memory("m-1")] == [1, 3]
    assert [e.memory_id for e in log.recent(2)] == ["m-1", "m-2"]
    assert set(log.for_memories(["m-1", "m-2"])) == {"m-1", "m-2"}
    log.close()
    again = AuditLog(tmp_workspace)
    assert again.for_memory("m-2")[0] == entry("m-2", 2)


def test_read_only_never_creates_the_file(tmp_workspace: Workspace) -> None:
    log = AuditLog(tmp_workspace, read_only=True)
    assert log.recent() == []
    assert not log.path.exists()


def test_an_appended_entry_survives_its_process_being_killed(tmp_workspace: Workspace) -> None:
    """The audit trail commits with ``synchronous=NORMAL`` (no fsync per commit, as
    LanceDB does none for the store beside it): an entry appended is still there when the
    process that appended it is killed right after, without closing anything."""
    import subprocess
    import sys
    import textwrap

    child = textwrap.dedent(
        f"""
        import os, signal
        from datetime import UTC, datetime
        from engram.model import AuditEntry
        from engram.store import AuditLog
        from engram.workspace import Workspace

        log = AuditLog(Workspace.open({str(tmp_workspace.root)!r}))
        log.append([AuditEntry(memory_id="m-killed", at=datetime(2025, 3, 1, tzinfo=UTC),
                               event="create", actor="person:Ana", cause="test")])
        os.kill(os.getpid(), signal.SIGKILL)
        """
    )
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()[-400:]
    assert [e.memory_id for e in AuditLog(tmp_workspace).for_memory("m-killed")] == ["m-killed"]
