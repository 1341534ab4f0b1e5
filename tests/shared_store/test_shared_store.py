"""A store on object storage shared by several machines (docs/team.md, "A shared store").

Each "machine" is its own workspace folder (its own ``.engram/``: lock, graph, digest) and
its own processes; they meet only in the bucket, served on loopback by moto (conftest).
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import git
from tests.shared_store.conftest import ACCESS_KEY, S3, SECRET_KEY, shared_env

from engram.config import load_config
from engram.store import ChunkStore, CodeChunkRecord, MemoryStore, StoreError, StoreLocation
from engram.store.changelog import covered_ids
from engram.workspace import Workspace

ENGRAM = Path(sys.executable).with_name("engram")
HERE = Path(__file__).resolve().parent


def machine(tmp_path: Path, name: str) -> Path:
    """A workspace folder standing for one machine's checkout of the same repository."""
    root = tmp_path / name
    (root / "app").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", name.capitalize())
    (root / "app" / "billing.py").write_text("def charge(amount):\n    return amount\n")
    return root


def engram(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run([str(ENGRAM), *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return proc


def test_location_refuses_credentials_and_unknown_schemes(tmp_path: Path) -> None:
    for bad in ("s3://key:secret@bucket/x", "s3://bucket/x?access_key=1", "ftp://host/x",
                "s3:///nobucket", "relative/path"):  # fmt: skip
        with pytest.raises(StoreError) as err:
            StoreLocation.of(bad, tmp_path)
        assert "secret" not in str(err.value)
    loc = StoreLocation.of("s3://bucket/team/", tmp_path, endpoint="http://127.0.0.1:9")
    assert loc.remote and loc.uri == "s3://bucket/team"
    assert loc.table_uri("memories") == "s3://bucket/team/memories.lance"
    assert not StoreLocation.of("", tmp_path).remote


def test_change_ranges_from_concurrent_writers_cover_or_say_they_cannot() -> None:
    # machine A committed version 5 on top of 3 while B committed 4: both count
    entries = [(2, 3, ["x"]), (4, 5, ["a"]), (3, 4, ["b"])]
    assert covered_ids(entries, 3, 5) == {"a", "b"}
    assert covered_ids([(4, 5, ["a"])], 3, 5) is None  # B's entry is missing: reload
    assert covered_ids([], 3, 3) == set()


def test_a_repository_cannot_point_the_store_at_the_network(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = machine(tmp_path, "cloned")
    (root / "pyproject.toml").write_text(
        '[tool.engram.store]\nuri = "s3://attacker/loot"\nendpoint = "http://127.0.0.1:9"\n'
        "refresh_seconds = 5\n"
    )
    (root / ".engram").mkdir()
    (root / ".engram" / "config.toml").write_text('[store]\nuri = "s3://attacker/two"\n')
    config = load_config(Workspace.open(root), environ={})
    assert config.store.uri == "" and config.store.endpoint is None
    assert config.store.refresh_seconds == 5  # harmless settings still apply
    assert "ignoring store.uri/endpoint in pyproject.toml" in caplog.text
    # the user's own environment is where a shared store is chosen
    env = {"ENGRAM_STORE__URI": "s3://team/engram"}
    assert load_config(Workspace.open(root), environ=env).store.uri == "s3://team/engram"


def test_memories_and_chunks_on_s3_behave_as_on_disk(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bucket = s3.new_bucket()
    loc = StoreLocation.of(f"s3://{bucket}/ws", tmp_path / "a" / ".engram",
                           endpoint=s3.endpoint, region="us-east-1", allow_http=True,
                           refresh_seconds=0)  # fmt: skip
    from engram.model import CodeAnchor, Memory

    a = MemoryStore(Workspace.open(machine(tmp_path, "a")), location=loc)
    b_root = machine(tmp_path, "b")
    b = MemoryStore(Workspace.open(b_root), location=attrs_evolve(loc, b_root / ".engram"))
    try:
        vec = np.eye(4, dtype=np.float32)
        m1 = Memory("charge takes cents not euros", anchors=[CodeAnchor("app/billing.py")])
        m2 = Memory("retries are capped at two by the bank")
        a.add([m1, m2], vec[:2], "test-4")
        assert b.get(m1.id) is not None and b.count() == 2
        assert b.keyword_search("cents euros", 5)[0][0] == m1.id
        assert b.vector_search(vec[1], 1)[0][0] == m2.id
        assert b.ids_for_file("app/billing.py") == [m1.id]
        b.delete([m2.id])
        assert a.get(m2.id) is None and a.count() == 1  # a's snapshot caught up on b's delete
        a.compact()
        assert b.count() == 1 and "s3://" in b.stats()["path"]
    finally:
        a.close()
        b.close()

    chunks = ChunkStore(Workspace.open(b_root), location=loc)
    try:
        rec = CodeChunkRecord(
            "c1", "app/billing.py", "function", "charge", 1, 2,
            "def charge(amount):", "h1",
        )  # fmt: skip
        chunks.upsert_chunks([rec], np.ones((1, 4), np.float32), "test-4")
        assert chunks.vector_search(np.ones(4, np.float32), 3)[0][0] == "c1"
        assert [c.id for c in chunks.chunks_for_file("app/billing.py")] == ["c1"]
        assert chunks.delete_file("app/billing.py") == 1
    finally:
        chunks.close()


def test_a_table_still_being_created_elsewhere_reads_as_empty(
    s3: S3, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Machines racing to create a fresh shared store: the winner's data files land before
    its first manifest, so for a moment the table is listed but cannot be opened. Another
    machine opening then must see an empty store, not fail (seen in CI as "Table 'memories'
    was not found" with eight writers), and its first write must still land."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET_KEY)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    bucket = s3.new_bucket()
    # what a creator has written before its commit: a data file, no _versions/ manifest
    s3.client().put_object(  # type: ignore[attr-defined]
        Bucket=bucket, Key="ws/memories.lance/data/0-partial.lance", Body=b"partial"
    )
    loc = StoreLocation.of(f"s3://{bucket}/ws", tmp_path / "a" / ".engram",
                           endpoint=s3.endpoint, region="us-east-1", allow_http=True,
                           refresh_seconds=0)  # fmt: skip
    from engram.model import Memory

    store = MemoryStore(Workspace.open(machine(tmp_path, "a")), location=loc)
    try:
        assert store.count() == 0
        note = Memory("the ledger rounds half to even")
        store.add([note], np.eye(4, dtype=np.float32)[:1], "test-4")
        assert store.count() == 1 and store.get(note.id) is not None
    finally:
        store.close()


def attrs_evolve(loc: StoreLocation, local_dir: Path) -> StoreLocation:
    import attrs

    return attrs.evolve(loc, local_dir=local_dir)


def test_two_machines_share_memories_authors_digest_and_trust(s3: S3, tmp_path: Path) -> None:
    uri = f"s3://{s3.new_bucket()}/team"
    ana_root, ben_root = machine(tmp_path, "ana"), machine(tmp_path, "ben")
    ana = shared_env(s3, uri, tmp_path / "home-ana")
    ben = shared_env(s3, uri, tmp_path / "home-ben")

    gotcha = "charge() takes cents; euros make the bank refuse it"
    mid = engram(ana_root, ana, "remember", "--file", "app/billing.py", "--symbol", "charge",
                 gotcha).stdout.strip()  # fmt: skip
    limit = "the staging bank API rate-limits at ten calls a second"
    agent = engram(ana_root, ana, "remember", "--source", "agent_explicit", limit).stdout.strip()

    shown = json.loads(engram(ben_root, ben, "show", "--json", mid).stdout)
    assert shown["provenance"]["author"] == "Ana"  # every shared memory says who wrote it
    before = json.loads(engram(ben_root, ben, "show", "--json", agent).stdout)
    # reading on another machine moves nothing (docs/trust.md): search, context, list
    hits = json.loads(engram(ben_root, ben, "search", "--json", "bank rate limit").stdout)
    assert agent in [h["id"] for h in hits["hits"]]
    engram(ben_root, ben, "context", "app/billing.py")
    after = json.loads(engram(ben_root, ben, "show", "--json", agent).stdout)
    for key in ("confidence", "user_verified", "needs_review", "deprecated", "type", "source"):
        assert after[key] == before[key], key
    assert not after["user_verified"]

    # Ben's digest (what his agents' hooks read) has Ana's memories, anchored to the file
    digest = sqlite3.connect(ben_root / ".engram" / "digest.sqlite")
    files = dict(digest.execute("SELECT id, file FROM memory_files").fetchall())
    assert files.get(mid) == "app/billing.py"
    digest.close()

    # a person's confirm on Ben's machine is what moves it, and Ana sees that
    engram(ben_root, ben, "confirm", agent)
    confirmed = json.loads(engram(ana_root, ana, "show", "--json", agent).stdout)
    assert confirmed["user_verified"] and confirmed["confidence"] > before["confidence"]
    # Ben's own memory carries his name
    own = engram(ben_root, ben, "remember", "Ben's note: invoices are immutable once sent")
    listed = json.loads(engram(ana_root, ana, "list", "--json").stdout)["memories"]
    authors = {m["id"]: m["provenance"]["author"] for m in listed}
    assert authors[own.stdout.strip()] == "Ben" and authors[mid] == "Ana"
    # nothing of the store landed on either machine's disk
    assert not (ana_root / ".engram" / "memories.lance").exists()


def test_eight_concurrent_writers_lose_nothing(s3: S3, tmp_path: Path) -> None:
    uri = f"s3://{s3.new_bucket()}/fleet"
    per_writer = 6
    procs = []
    for n in range(8):
        root = machine(tmp_path, f"agent{n}")
        env = shared_env(s3, uri, tmp_path / f"home{n}")
        env["ENGRAM_STORE__REFRESH_SECONDS"] = "0.5"
        procs.append(subprocess.Popen(
            [sys.executable, str(HERE / "writer.py"), str(root), f"agent{n}", str(per_writer)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        ))  # fmt: skip
    acknowledged: list[str] = []
    for proc in procs:
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err[-2000:]
        acknowledged += out.split()
    assert len(acknowledged) == 8 * per_writer == len(set(acknowledged))
    reader_root = machine(tmp_path, "reader")
    env = shared_env(s3, uri, tmp_path / "home-reader")
    listed = json.loads(engram(reader_root, env, "list", "--json", "--all").stdout)["memories"]
    stored = {m["id"] for m in listed}
    assert set(acknowledged) <= stored
    assert {m["provenance"]["author"] for m in listed} == {f"Agent{n}" for n in range(8)}


def test_credentials_never_reach_the_store_logs_or_exports(s3: S3, tmp_path: Path) -> None:
    bucket = s3.new_bucket()
    uri = f"s3://{bucket}/secret-check"
    root = machine(tmp_path, "carol")
    env = shared_env(s3, uri, tmp_path / "home-carol")
    env["ENGRAM_DEBUG"] = "1"  # debug logging: everything Engram logs goes to stderr
    outputs = [
        engram(root, env, "remember", "--file", "app/billing.py", "charge rounds half up"),
        engram(root, env, "index", "--no-embed"),
        engram(root, env, "search", "--json", "rounds"),
        engram(root, env, "export", "--format", "json"),
        engram(root, env, "export", "--format", "md"),
        engram(root, env, "stats", "--json"),
        engram(root, env, "doctor", "--json"),
        engram(root, env, "report", "--json"),
    ]
    markers = (ACCESS_KEY, SECRET_KEY)
    for proc in outputs:
        for marker in markers:
            assert marker not in proc.stdout and marker not in proc.stderr
    stats = json.loads(outputs[5].stdout)
    assert stats["total"] >= 1
    blobs = s3.objects(bucket)
    assert blobs, "the store wrote nothing to the bucket"
    for key, body in blobs.items():
        for marker in markers:
            assert marker.encode() not in body, key
    for path in (root / ".engram").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for marker in markers:
                assert marker.encode() not in data, path
    assert os.environ.get("AWS_SECRET_ACCESS_KEY") != SECRET_KEY  # the test's own env is clean


def test_bench_script_smoke() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "AWS_"))}
    proc = subprocess.run(
        [sys.executable, str(root / "scripts/bench/shared_store.py"),
         "--preload", "50", "--writes", "3", "--queries", "5"],
        capture_output=True, text=True, timeout=600, check=False, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["local"]["memories"] == result["s3"]["memories"] == 53
    assert result["s3"]["remember"]["n"] == 3 and result["search_p95_ratio"] > 0
