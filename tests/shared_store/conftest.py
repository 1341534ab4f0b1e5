"""An S3-compatible server on loopback (moto's server mode, from PyPI) for the shared store.

Started once per test session as a child process on a free 127.0.0.1 port and stopped at
the end. Each test gets its own bucket. Credentials are dummies that double as markers: the
credential tests look for them everywhere Engram writes.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
from tests.conftest import HOUSEKEEPING

ACCESS_KEY = "AKIAENGRAMTESTMARKER"
SECRET_KEY = "engram-secret-marker-0123456789abcdef"


@attrs.frozen
class S3:
    endpoint: str

    def client(self) -> object:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=ACCESS_KEY,
            aws_secret_access_key=SECRET_KEY,
            region_name="us-east-1",
        )

    def new_bucket(self) -> str:
        name = f"engram-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)  # type: ignore[attr-defined]
        return name

    def objects(self, bucket: str) -> dict[str, bytes]:
        client = self.client()
        out: dict[str, bytes] = {}
        pages = client.get_paginator("list_objects_v2").paginate(Bucket=bucket)  # type: ignore[attr-defined]
        for page in pages:
            for item in page.get("Contents", []):
                body = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()  # type: ignore[attr-defined]
                out[item["Key"]] = body
        return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="session")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3]:
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with log.open("wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=2).close()
                break
            except OSError as exc:
                if proc.poll() is not None or time.monotonic() > deadline:
                    tail = log.read_text()[-2000:]
                    raise RuntimeError(f"moto server did not start: {tail}") from exc
                time.sleep(0.2)
        yield S3(endpoint)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


def shared_env(s3: S3, uri: str, home: Path) -> dict[str, str]:
    """The environment of an Engram process on one "machine" using the shared store.

    Credentials only in the standard AWS variables; the store place in Engram's own.
    ``AWS_EC2_METADATA_DISABLED`` keeps the AWS chain from probing an instance-metadata
    address: tests talk to loopback only.
    """
    # the suite's engine housekeeping stays (tests.conftest.HOUSEKEEPING): without it the
    # engines these "machines" start lived in the user's runtime directory for 10 idle
    # minutes after the suite (four were counted alive 5 minutes after a run, stop 27)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ENGRAM_", "AWS_")) or k in HOUSEKEEPING
    }
    env.update(
        HOME=str(home),
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_REGION="us-east-1",
        AWS_EC2_METADATA_DISABLED="true",
        ENGRAM_EMBED__MODEL="none",
        ENGRAM_STORE__URI=uri,
        ENGRAM_STORE__ENDPOINT=s3.endpoint,
        ENGRAM_STORE__ALLOW_HTTP="true",
        ENGRAM_STORE__REFRESH_SECONDS="0",
        ENGRAM_INDEX__EMBED_IN_BACKGROUND="false",
    )
    return env
