"""Where a store's LanceDB tables live: ``<workspace>/.engram`` or a shared object store.

``store.uri`` (docs/team.md, "A shared store") may name an S3 bucket and prefix
(``s3://team-bucket/engram/myrepo``) so that a team or a fleet of agents on several machines
read and write one set of memories. Only the *place* is configured: credentials come from the
standard AWS chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``/``AWS_SESSION_TOKEN``,
``AWS_PROFILE`` with ``~/.aws/credentials`` and ``~/.aws/config``, instance roles), which
LanceDB's object store reads itself. Nothing here ever holds a secret, so nothing derived
from a location (error messages, logs, ``engram stats``) can leak one; a URI that carries
user info or a query string is refused rather than stored.

Whatever the place, the writer lock, the change log of a local store, caches and the digest
stay in the workspace's ``.engram/`` on this machine.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

import attrs

from engram.store.errors import StoreError
from engram.store.lock import DEFAULT_LOCK_TIMEOUT_S

#: schemes LanceDB's object store speaks that Engram accepts (tested: s3, with any
#: S3-compatible endpoint)
REMOTE_SCHEMES = frozenset({"s3"})

#: How often a read asks a remote store whether another machine committed (seconds).
DEFAULT_REFRESH_SECONDS = 1.0
#: How many times a write is retried after losing a commit race to another machine.
DEFAULT_COMMIT_RETRIES = 8


def is_remote_uri(uri: str | None) -> bool:
    """True for ``s3://…`` (and any other ``scheme://``): a network place, not a folder."""
    return bool(uri) and "://" in str(uri)


@attrs.frozen
class StoreLocation:
    """The LanceDB database a store's tables live in, and how to reach it."""

    #: a local directory path, or ``s3://bucket/prefix``
    uri: str
    #: this machine's ``.engram`` directory (lock, change log, caches)
    local_dir: Path
    #: non-secret connection settings for LanceDB (endpoint, region, allow_http)
    storage_options: dict[str, str] = attrs.field(factory=dict)
    refresh_seconds: float = DEFAULT_REFRESH_SECONDS
    commit_retries: int = DEFAULT_COMMIT_RETRIES
    #: a writer waiting for this machine's write lock gives up after this long without
    #: progress from the holder (engram.store.lock)
    lock_timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_S

    @property
    def remote(self) -> bool:
        return is_remote_uri(self.uri)

    def table_uri(self, name: str) -> str:
        """Where table ``name`` lives (for messages: never carries credentials)."""
        return f"{self.uri.rstrip('/')}/{name}.lance"

    @classmethod
    def local(
        cls, engram_dir: Path, lock_timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_S
    ) -> StoreLocation:
        return cls(str(engram_dir), engram_dir, lock_timeout_seconds=lock_timeout_seconds)

    @classmethod
    def of(
        cls,
        uri: str | None,
        engram_dir: Path,
        *,
        endpoint: str | None = None,
        region: str | None = None,
        allow_http: bool = False,
        refresh_seconds: float = DEFAULT_REFRESH_SECONDS,
        commit_retries: int = DEFAULT_COMMIT_RETRIES,
        lock_timeout_seconds: float = DEFAULT_LOCK_TIMEOUT_S,
    ) -> StoreLocation:
        """A location from settings; a bad URI raises :class:`StoreError` in one line."""
        if not 0 < lock_timeout_seconds <= 3600:
            raise StoreError("store.lock_timeout_seconds must be more than 0 and at most 3600")
        text = (uri or "").strip()
        if not text:
            return cls.local(engram_dir, lock_timeout_seconds)
        if not is_remote_uri(text):
            raise StoreError(
                f"store.uri {text!r} is not a URI; leave it empty for .engram/ or use "
                "s3://bucket/prefix (docs/team.md)"
            )
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in REMOTE_SCHEMES:
            raise StoreError(
                f"store.uri scheme {scheme!r} is not supported; use s3://bucket/prefix "
                "(any S3-compatible service via store.endpoint)"
            )
        if "@" in parts.netloc or parts.query or parts.fragment or parts.password:
            raise StoreError(
                "store.uri must not carry credentials or parameters; credentials come from "
                "the AWS environment or ~/.aws (docs/team.md)"
            )
        if not parts.netloc:
            raise StoreError(f"store.uri {text!r} names no bucket; use s3://bucket/prefix")
        if refresh_seconds < 0 or commit_retries < 0:
            raise StoreError("store.refresh_seconds and store.commit_retries must be >= 0")
        options: dict[str, str] = {}
        if endpoint:
            options["aws_endpoint"] = endpoint
        if region:
            options["aws_region"] = region
        if allow_http:
            options["allow_http"] = "true"
        path = parts.path.rstrip("/")
        return cls(
            f"{scheme}://{parts.netloc}{path}",
            engram_dir,
            options,
            refresh_seconds=refresh_seconds,
            commit_retries=commit_retries,
            lock_timeout_seconds=lock_timeout_seconds,
        )
