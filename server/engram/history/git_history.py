"""Git history: co-change rules (ROSE), renames, commit linkage and the co-access seed.

Mining streams ``git log --name-status -M`` oldest first into ``.engram/history.sqlite``
and remembers the last mined commit, so the next run mines only new commits. Every path
row keeps the name it had in its commit *and* a canonical id: when a later commit renames
``old.py`` to ``new.py``, rows of ``old.py`` written before that rename move to ``new.py``'s
canonical id. That makes rename following time-aware — a new ``old.py`` created after the
rename starts a history of its own.

Co-change follows Zimmermann et al. (ICSE 2004): a commit is a transaction, merges and
commits of more than ``max_files_per_commit`` files are left out (they relate everything
to everything), support(A→B) = #commits touching both, confidence = support / #commits
touching A. Pairs are counted at query time from the per-commit rows, which is fast with
the indexes and keeps incremental mining and rename updates trivial.

Nothing here raises for a missing git, a directory that is not a repository, an empty or a
shallow repository: :attr:`GitHistory.status` and :attr:`GitHistory.reason` say what is
going on and queries return empty results.

Long on purpose: mining, the co-change tables and the queries on them share one SQLite
schema (docs/history.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import select
import shutil
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import numpy as np

from engram.config import HistoryConfig
from engram.gitroot import SAFE_GIT_CONFIG, filters_off, unsafe_git_file
from engram.history.cochange_model import (
    CochangeModel,
    CommitIndex,
    HistoryStats,
    StepCancelled,
    candidate_features,
    history_stats,
    learn,
    popular_files,
    training_files,
)
from engram.history.gitlog import GIT_MEMORY_ARGS, LOG_ARGS, LOG_FORMAT, CommitRecord, parse_log
from engram.history.renames import fold_renames
from engram.jsontypes import JsonObject
from engram.progress import Progress, statements_cancelled_by
from engram.workspace import Workspace

if TYPE_CHECKING:
    from git import Repo

#: what HEAD reads and (inode, size, mtime) of each file that moves it (None: missing)
HeadStamp = tuple[str, tuple[tuple[int, int, int] | None, ...]]
log = logging.getLogger(__name__)

SCHEMA_VERSION = 1
#: A stored co-change model is refitted once the history grew by this share (or REFIT_MIN).
REFIT_SHARE = 0.1
REFIT_MIN = 50

#: Why history is (un)usable; ``ok`` and ``shallow`` have data, the rest answer empty.
STATUS_OK = "ok"
STATUS_SHALLOW = "shallow"
STATUS_EMPTY = "empty"
STATUS_NOT_A_REPO = "not-a-repository"
STATUS_NO_GIT = "no-git"
STATUS_ERROR = "error"
STATUS_NOT_MINED = "not-mined"


@attrs.define
class MineReport:
    status: str
    reason: str
    new_commits: int = 0
    commits: int = 0
    skipped_commits: int = 0
    renames: int = 0
    files: int = 0
    seconds: float = 0.0
    head: str | None = None
    rebuilt: bool = False


@attrs.define
class CommitInfo:
    sha: str
    time: datetime
    author: str
    summary: str


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS paths (
    id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL,
    canon INTEGER,            -- current canonical path id (follows renames)
    alive INTEGER NOT NULL DEFAULT 1
);
-- a rename moves every path whose canon is the old name's: without it each of the 58k
-- workspace's 7,978 renames scanned all ~59k paths (~1.5 ms each, issue 18)
CREATE INDEX IF NOT EXISTS paths_canon ON paths (canon);
CREATE TABLE IF NOT EXISTS commits (
    id INTEGER PRIMARY KEY, sha TEXT UNIQUE NOT NULL, time INTEGER NOT NULL,
    n_files INTEGER NOT NULL, skipped INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS commit_files (
    commit_id INTEGER NOT NULL, path_id INTEGER NOT NULL, canon_id INTEGER NOT NULL,
    status TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS commit_files_canon ON commit_files (canon_id, commit_id);
CREATE INDEX IF NOT EXISTS commit_files_commit ON commit_files (commit_id);
CREATE TABLE IF NOT EXISTS renames (
    commit_id INTEGER NOT NULL, old_path TEXT NOT NULL, new_path TEXT NOT NULL
);
"""


#: How long a read of ``git log`` waits for output before it looks at the cancel again.
_LOG_WAIT_SECONDS = 0.25
#: What one read of ``git log``'s output gathers before parsing it.
_LOG_CHUNK = 1 << 16


class _LogCancelled(Exception):
    """The cancel said stop while ``git log`` was read (:meth:`GitHistory._stream_log`)."""


#: SQLite virtual-machine steps between two looks at the cancel while the commit index is read.
_STEPS_PER_LOOK = 20_000


#: Renames chained between two looks at the cancel (babel's 39,787 took ~0.3 s at load 10).
_RENAMES_PER_LOOK = 2048


def _heeding(
    pairs: Iterable[tuple[str, str]], cancel: Callable[[], bool] | None
) -> Iterator[tuple[str, str]]:
    """``pairs``, looking at ``cancel`` every :data:`_RENAMES_PER_LOOK` (``StepCancelled``)."""
    for n, pair in enumerate(pairs):
        if cancel is not None and n % _RENAMES_PER_LOOK == 0 and cancel():
            raise StepCancelled
        yield pair


def _utc(ts: int) -> datetime:
    return datetime.fromtimestamp(ts, tz=UTC)


@attrs.define
class TeamFileChange:
    """The newest commit that touched one path: its sha, author, and whether it deleted it."""

    commit: str
    author: str | None
    deleted: bool


@attrs.define
class TeamFolderFacts:
    """What git says about the team folder (see :meth:`GitHistory.team_file_facts`)."""

    #: paths (workspace-relative) present in HEAD's tree
    at_head: set[str] = attrs.field(factory=set)
    #: paths modified, added or untracked in the working tree
    changed: set[str] = attrs.field(factory=set)
    #: newest change per path
    last: dict[str, TeamFileChange] = attrs.field(factory=dict)

    def committed(self, path: str) -> TeamFileChange | None:
        """The commit that wrote ``path`` as it is now, or None (not committed as is)."""
        change = self.last.get(path)
        if path not in self.at_head or path in self.changed or change is None or change.deleted:
            return None
        return change

    def deletion(self, path: str) -> TeamFileChange | None:
        """The commit that deleted ``path``, when HEAD no longer has it."""
        change = self.last.get(path)
        if path in self.at_head or change is None or not change.deleted:
            return None
        return change


class GitCommandFailed(RuntimeError):
    """A git command Engram ran on the user's behalf failed; the message is git's."""


class _NameOverlay(Mapping[int, str]):
    """Paths by history id: ``first`` (files git has not seen, negative ids) over
    ``second`` (the commit index's names), without copying either.

    ``collections.ChainMap`` does the same, but its ``get`` goes through ``__contains__``
    and ``any``: a hub's impact asks it a few thousand times (docs/codegraph.md)."""

    __slots__ = ("first", "second")

    def __init__(self, first: Mapping[int, str], second: Mapping[int, str]) -> None:
        self.first, self.second = first, second

    def __getitem__(self, key: int) -> str:
        found = self.first.get(key)
        return self.second[key] if found is None else found

    def get(self, key: int, default: Any = None) -> Any:
        found = self.first.get(key)
        return self.second.get(key, default) if found is None else found

    def __contains__(self, key: object) -> bool:
        return key in self.first or key in self.second

    def __iter__(self) -> Iterator[int]:
        yield from self.first
        yield from (k for k in self.second if k not in self.first)

    def __len__(self) -> int:
        return len(self.first) + sum(1 for k in self.second if k not in self.first)


class GitHistory:
    """Co-change partners, renames and commit linkage for one workspace's git history.

    Implements ``engram.codegraph.CoChangeSource``. ``rev`` is the commit mined up to
    (``HEAD`` normally; the co-change evaluation passes its split commit), ``db_path``
    defaults to ``<workspace>/.engram/history.sqlite``.
    """

    def __init__(
        self,
        workspace: Workspace,
        config: HistoryConfig | None = None,
        *,
        db_path: Path | None = None,
        rev: str = "HEAD",
    ) -> None:
        self.workspace = workspace
        #: the ``[history]`` settings (``EngramConfig.history``); swapped by :meth:`reconfigure`
        self.config = config if config is not None else HistoryConfig()
        self.rev = rev
        self._db_path = db_path
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._repo: Repo | None = None
        self._prefix = ""
        self._status: str | None = None
        self._reason = ""
        self._shallow_roots: set[str] = set()
        self._ingested = False
        self._rates: tuple[int, dict[str, float]] | None = None
        self._index: tuple[int, CommitIndex] | None = None
        self._model: CochangeModel | None = None
        self._index_rate_cache: tuple[CommitIndex, HistoryStats] | None = None
        #: per commit index: path -> canonical id and the popular files (both O(files) to
        #: build; impact asks per query, docs/codegraph.md "At 50,000 files")
        self._index_lookup_cache: tuple[CommitIndex, dict[str, int], list[int]] | None = None
        #: HEAD's sha and the stamp of the files it was read from (:meth:`head_commit`)
        self._head_cache: tuple[HeadStamp, str | None] | None = None

    # ------------------------------------------------------------------ repository access

    @property
    def status(self) -> str:
        """``ok``, ``shallow``, ``empty``, ``not-a-repository``, ``no-git`` or ``error``."""
        self._open_repo()
        assert self._status is not None
        return self._status

    @property
    def reason(self) -> str:
        """One line a user can read: why history is missing or partial (empty when ``ok``)."""
        self._open_repo()
        return self._reason

    @property
    def available(self) -> bool:
        return self.status in (STATUS_OK, STATUS_SHALLOW)

    def _set_status(self, status: str, reason: str) -> None:
        self._status, self._reason = status, reason
        if status not in (STATUS_OK,):
            log.info("git history %s: %s", status, reason)

    def _open_repo(self) -> Repo | None:
        """The GitPython ``Repo``, or ``None`` with :attr:`status` explaining why."""
        if self._status is not None:
            return self._repo
        with self._lock:
            if self._status is not None:
                return self._repo
            if shutil.which("git") is None:
                self._set_status(STATUS_NO_GIT, "git is not installed (history features are off)")
                return None
            unsafe = unsafe_git_file(str(self.workspace.root))
            if unsafe is not None:  # git (and GitPython's own reads) would wait forever
                self._set_status(STATUS_ERROR, unsafe)
                return None
            try:
                import git  # GitPython; heavy-ish, imported on first use only
            except Exception as exc:  # ImportError, or GitPython failing to find git
                self._set_status(STATUS_NO_GIT, f"GitPython unavailable: {exc}".splitlines()[0])
                return None
            try:
                repo = git.Repo(self.workspace.root, search_parent_directories=True)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                self._set_status(
                    STATUS_NOT_A_REPO, f"{self.workspace.root} is not inside a git repository"
                )
                return None
            except Exception as exc:
                self._set_status(STATUS_ERROR, f"cannot open git repository: {exc}")
                return None
            top = Path(repo.working_tree_dir or self.workspace.root).resolve()
            try:
                rel = self.workspace.root.resolve().relative_to(top).as_posix()
            except ValueError:
                rel = ""
            self._prefix = "" if rel in ("", ".") else rel + "/"
            try:
                repo.git.execute(
                    [
                        "git",
                        *SAFE_GIT_CONFIG,
                        "rev-parse",
                        "--verify",
                        "--quiet",
                        f"{self.rev}^{{commit}}",
                    ]
                )
            except Exception:
                self._repo = repo
                if self.rev == "HEAD":
                    self._set_status(STATUS_EMPTY, "the repository has no commits yet")
                else:
                    self._set_status(STATUS_ERROR, f"unknown revision {self.rev!r}")
                return repo
            shallow_file = Path(repo.git_dir) / "shallow"
            if shallow_file.exists():
                self._shallow_roots = {
                    line.strip()
                    for line in shallow_file.read_text(encoding="ascii", errors="replace").split()
                    if line.strip()
                }
                self._set_status(
                    STATUS_SHALLOW,
                    "shallow clone: only the fetched commits count "
                    "(run `git fetch --unshallow` for full co-change history)",
                )
            else:
                self._set_status(STATUS_OK, "")
            self._repo = repo
            return repo

    def _git(self, *args: str, timeout: float | None = None) -> str | None:
        """Run git through GitPython; ``None`` (logged) on any failure or timeout."""
        repo = self._open_repo()
        if repo is None:
            return None
        try:
            kwargs: dict[str, Any] = {"with_extended_output": False}
            if timeout is not None:
                kwargs["kill_after_timeout"] = timeout
            out = repo.git.execute(["git", *SAFE_GIT_CONFIG, *args], **kwargs)
            return str(out)
        except Exception as exc:
            log.info("git %s failed: %s", args[0] if args else "", str(exc).splitlines()[0:1])
            return None

    def _window_start(self, rev_range: str, limit: int) -> int | None:
        """The commit time of the ``limit``-th newest commit of ``rev_range``, when it has
        more: where the mined window starts.

        ``git log --date-order`` sorts the whole history before it shows the newest
        ``limit`` commits, so on a huge history it walks and holds every commit: at
        scale.py's 58k files (330k commits) 505 MB and 5.7 CPU s in git for 20,000 commits,
        while the index's own process held 540 MB (docs/history.md, "Mining"). Bounded by
        ``--since`` at this time, the same 20,000 commits cost git 304 MB and 3.3 CPU s;
        finding the time is a walk of ``limit`` commits in git's default order (0.3 s).
        """
        out = self._git(
            "log", "--no-merges", "--format=%ct", f"--skip={limit - 1}", "--max-count=1",
            rev_range,
        )  # fmt: skip
        try:
            return int(out.strip()) if out and out.strip() else None
        except ValueError:
            return None

    def _stream_log(
        self,
        rev_range: str,
        max_count: int | None,
        since: int | None = None,
        cancel: Callable[[], bool] | None = None,
        only: Sequence[str] = (),
    ) -> Iterator[CommitRecord]:
        """The commits of ``git log`` as it writes them. ``cancel`` is looked at while git
        writes nothing (its rename detection on a commit of thousands of files runs for
        seconds: a stop waited 3 s between two commits on babel's history) and raises
        :class:`_LogCancelled` out of the loop that reads them. ``only``: more ``git log``
        options (``--diff-filter=R``)."""
        repo = self._open_repo()
        assert repo is not None
        cmd = ["git", *SAFE_GIT_CONFIG, *GIT_MEMORY_ARGS, *LOG_ARGS, *only]
        cmd.append(f"--format={LOG_FORMAT}")
        if max_count is not None:
            cmd.append(f"--max-count={max_count}")
        if since is not None:
            cmd.append(f"--since=@{since}")
        if self._prefix:
            cmd.append(f"--relative={self._prefix}")
        cmd += [rev_range, "--"]
        if self._prefix:
            cmd.append(self._prefix)
        proc = repo.git.execute(cmd, as_process=True)
        inner = getattr(proc, "proc", proc)  # GitPython's AutoInterrupt wraps the Popen
        stream = inner.stdout if inner is not None else None
        if stream is None:  # no pipe to read (GitPython gave none): no commits, no crash
            log.info("git log gave no output stream")
            return

        watch = cancel is not None and sys.platform != "win32"  # select() takes no pipe there

        def chunks() -> Iterator[bytes]:
            if not watch:
                while data := stream.read(_LOG_CHUNK):
                    yield data
                return
            # 64 KiB at a time as read() gave them (parse_log joins and splits what it holds
            # per chunk: the pipe's 4 KiB pieces made a huge commit's record quadratic,
            # mining babel took 74 s instead of 44), but the cancel is looked at while git
            # writes nothing
            fd = stream.fileno()
            while True:
                parts: list[bytes] = []
                size = 0
                while size < _LOG_CHUNK:
                    if cancel is not None and cancel():
                        raise _LogCancelled
                    if not select.select([fd], [], [], _LOG_WAIT_SECONDS)[0]:
                        continue
                    part = os.read(fd, _LOG_CHUNK - size)
                    if not part:
                        break
                    parts.append(part)
                    size += len(part)
                if parts:
                    yield b"".join(parts)
                if size < _LOG_CHUNK:  # the end of git's output
                    return

        read_all = False
        try:
            yield from parse_log(chunks())
            read_all = True
        finally:
            if not read_all and inner is not None:
                # the reader stopped early (a cancelled run, an error): git blocks on the
                # full pipe and the wait below never returned (a stopping engine hung here)
                with contextlib.suppress(OSError):
                    inner.kill()
            try:
                proc.wait()
            except Exception as exc:  # a non-zero exit after partial output: keep what we got
                if read_all:
                    log.info("git log ended with an error: %s", str(exc).splitlines()[0:1])

    # ------------------------------------------------------------------ storage

    def _db(self) -> sqlite3.Connection:
        if self._conn is None:
            path = self._db_path or self.workspace.ensure_engram_dir() / "history.sqlite"
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(path, timeout=30.0, isolation_level=None,
                                   check_same_thread=False)  # fmt: skip
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.create_function("engram_decay", 1, self._decay, deterministic=True)
            conn.executescript(_SCHEMA)
            row = conn.execute("SELECT value FROM meta WHERE key='schema'").fetchone()
            if row is None:
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            elif int(row[0]) != SCHEMA_VERSION:
                self._clear(conn)
                conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema', ?)", (SCHEMA_VERSION,))
            self._conn = conn
        return self._conn

    @staticmethod
    def _clear(conn: sqlite3.Connection) -> None:
        for table in ("paths", "commits", "commit_files", "renames"):
            conn.execute(f"DELETE FROM {table}")  # fixed table names
        conn.execute("DELETE FROM meta WHERE key != 'schema'")

    def _meta(self, key: str) -> str | None:
        row = self._db().execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def reconfigure(self, config: HistoryConfig) -> None:
        """Take new ``[history]`` settings in place (``Engine.reconfigure``).

        What was mined stays; the limits apply from the next mining run, and the ranking
        caches built with the old recency and learning settings are dropped (the stored
        model is refitted as the history grows, docs/history.md).
        """
        with self._lock:
            self.config = config
            self._rates = None
            self._model = None
        log.debug("history settings changed: %s", config)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
            if self._repo is not None:
                try:
                    self._repo.close()
                except Exception as exc:
                    log.debug("closing repo failed: %s", exc)

    # ------------------------------------------------------------------ mining

    def mine(
        self,
        progress: Progress | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> MineReport:
        """Mine commits added since the last run (all of them the first time).

        ``progress`` is called with keywords ``done=`` and ``total=`` (commits), so both a
        ``(done, total)`` function and the CLI's ``(message, done, total)`` bar accept it.
        ``cancel`` is polled between batches; what was mined so far is kept and the next
        run resumes after it.
        """
        started = time.monotonic()
        repo = self._open_repo()
        status = self._status or STATUS_ERROR
        if repo is None or status not in (STATUS_OK, STATUS_SHALLOW):
            return MineReport(status, self._reason, seconds=round(time.monotonic() - started, 3))
        head = self._git("rev-parse", f"{self.rev}^{{commit}}")
        if not head:
            return MineReport(STATUS_ERROR, f"cannot resolve {self.rev}")
        head = head.strip()
        with self._lock:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")  # one miner at a time across processes
            try:
                report = self._mine_locked(conn, head, progress, cancel)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        # a cancelled run says so (the repository's own reason, e.g. shallow, otherwise)
        report.status, report.reason = status, report.reason or self._reason
        report.seconds = round(time.monotonic() - started, 3)
        report.head = head
        return report

    def _mine_locked(
        self,
        conn: sqlite3.Connection,
        head: str,
        progress: Progress | None,
        cancel: Callable[[], bool] | None,
    ) -> MineReport:
        report = MineReport(STATUS_OK, "")
        last = self._meta("last_commit")
        if last == head:
            report.commits = self._count_commits(conn)
            report.files = conn.execute("SELECT COUNT(*) FROM paths WHERE canon=id").fetchone()[0]
            return report
        rev_range = head
        if last:
            ancestor = self._git("merge-base", "--is-ancestor", last, head)
            if ancestor is None:  # history rewritten or branch switched: start again
                log.info("last mined commit %s is not an ancestor of %s: re-mining", last, head)
                self._clear(conn)
                report.rebuilt = True
            else:
                rev_range = f"{last}..{head}"
        limit = self.config.max_commits
        # counted no further than one past the limit: a full count walks every commit of a
        # huge history (330k at scale.py's 58k files: 2.5 CPU s, 270 MB in git)
        count_text = self._git(
            "rev-list", "--count", "--no-merges", f"--max-count={limit + 1}", rev_range
        )  # fmt: skip
        count = int(count_text.strip()) if count_text else 0
        total = min(count, limit)
        since = self._window_start(rev_range, limit) if count > limit else None
        if progress is not None:
            progress(0, total, "commits")
        next_order = conn.execute("SELECT COALESCE(MAX(id), 0) FROM commits").fetchone()[0]
        path_ids: dict[str, int] = {
            p: i for p, i in conn.execute("SELECT path, id FROM paths")
        }  # fmt: skip
        done = 0
        last_stored: str | None = None
        mark = "INSERT OR REPLACE INTO meta VALUES ('last_commit', ?)"
        try:
            for record in self._stream_log(rev_range, limit, since, cancel):
                next_order += 1
                self._store_commit(conn, next_order, record, path_ids, report)
                done += 1
                last_stored = record.sha
                # the cancel is looked at every commit (200 of them took up to 4 s on babel's
                # history at load 8: a stop waited for them); committed as at a batch's end
                if cancel is not None and cancel():
                    raise _LogCancelled
                if done % 200 == 0:
                    conn.execute(mark, (record.sha,))
                    conn.execute("COMMIT")
                    conn.execute("BEGIN IMMEDIATE")
                    if progress is not None:
                        progress(done, total, "commits")
        except _LogCancelled:
            if last_stored is not None:  # kept (mine() commits): the next run resumes after
                conn.execute(mark, (last_stored,))
            log.info("history mining cancelled after %d commits", done)
            report.reason = "cancelled"
        else:
            conn.execute(mark, (head,))
        report.new_commits = done
        report.commits = self._count_commits(conn)
        report.files = conn.execute("SELECT COUNT(*) FROM paths WHERE canon=id").fetchone()[0]
        if progress is not None:
            progress(done, total, "commits")
        return report

    @staticmethod
    def _count_commits(conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COUNT(*) FROM commits").fetchone()[0])

    def _path_id(self, conn: sqlite3.Connection, path: str, cache: dict[str, int]) -> int:
        found = cache.get(path)
        if found is not None:
            return found
        cur = conn.execute("INSERT INTO paths (path, canon, alive) VALUES (?, NULL, 1)", (path,))
        new_id = int(cur.lastrowid or 0)
        conn.execute("UPDATE paths SET canon=? WHERE id=?", (new_id, new_id))
        cache[path] = new_id
        return new_id

    def _store_commit(
        self,
        conn: sqlite3.Connection,
        order: int,
        record: CommitRecord,
        path_ids: dict[str, int],
        report: MineReport,
    ) -> None:
        # a shallow boundary commit "adds" the whole tree: it is not a change, skip it
        boundary = record.sha in self._shallow_roots
        paths = record.paths
        skipped = boundary or len(paths) > self.config.max_files_per_commit or not paths
        conn.execute(
            "INSERT OR IGNORE INTO commits (id, sha, time, n_files, skipped) VALUES (?,?,?,?,?)",
            (order, record.sha, record.time, len(paths), int(skipped)),
        )
        report.skipped_commits += int(skipped)
        for change in record.changes:
            if change.status == "R" and change.old_path and not boundary:
                self._apply_rename(conn, order, change.old_path, change.path, path_ids)
                report.renames += 1
        seen: set[str] = set()
        for change in record.changes:
            if change.path in seen:
                continue
            seen.add(change.path)
            pid = self._path_id(conn, change.path, path_ids)
            canon_row = conn.execute("SELECT canon FROM paths WHERE id=?", (pid,)).fetchone()
            canon = int(canon_row[0]) if canon_row and canon_row[0] is not None else pid
            if canon != pid:
                # the name was renamed away earlier; a file showing up under it again is a
                # different file with a history of its own
                conn.execute("UPDATE paths SET canon=? WHERE id=?", (pid, pid))
                canon = pid
            alive = 0 if change.status == "D" else 1
            conn.execute("UPDATE paths SET alive=? WHERE id=?", (alive, canon))
            conn.execute(
                "INSERT INTO commit_files (commit_id, path_id, canon_id, status) VALUES (?,?,?,?)",
                (order, pid, canon, change.status),
            )

    def _apply_rename(
        self,
        conn: sqlite3.Connection,
        order: int,
        old: str,
        new: str,
        path_ids: dict[str, int],
    ) -> None:
        """Move ``old``'s history (rows written before this commit) onto ``new``."""
        old_id = self._path_id(conn, old, path_ids)
        new_id = self._path_id(conn, new, path_ids)
        old_canon = int(conn.execute("SELECT canon FROM paths WHERE id=?", (old_id,)).fetchone()[0])
        # ``new`` is a fresh name from now on: it is its own canonical id again
        conn.execute("UPDATE paths SET canon=?, alive=1 WHERE id=?", (new_id, new_id))
        if old_canon != new_id:
            conn.execute(
                "UPDATE commit_files SET canon_id=? WHERE canon_id=? AND commit_id<?",
                (new_id, old_canon, order),
            )
            conn.execute("UPDATE paths SET canon=? WHERE canon=?", (new_id, old_canon))
        conn.execute("UPDATE paths SET canon=?, alive=0 WHERE id=?", (new_id, old_id))
        conn.execute(
            "INSERT INTO renames (commit_id, old_path, new_path) VALUES (?,?,?)", (order, old, new)
        )

    def ingest(self, records: Iterable[CommitRecord]) -> MineReport:
        """Store the given commits (oldest first) as the mined history, replacing any.

        For evaluations that pick the commits themselves (the co-change time split trains on
        the first 80% in date order): the same storage, size limit and rename following as
        :meth:`mine`. Needs no repository.
        """
        started = time.monotonic()
        report = MineReport(STATUS_OK, "")
        with self._lock:
            conn = self._db()
            conn.execute("BEGIN IMMEDIATE")
            try:
                self._clear(conn)
                path_ids: dict[str, int] = {}
                last: str | None = None
                for order, record in enumerate(records, start=1):
                    self._store_commit(conn, order, record, path_ids, report)
                    report.new_commits += 1
                    last = record.sha
                if last is not None:
                    conn.execute("INSERT OR REPLACE INTO meta VALUES ('last_commit', ?)", (last,))
                report.commits = self._count_commits(conn)
                report.files = conn.execute("SELECT COUNT(*) FROM paths WHERE canon=id").fetchone()[
                    0
                ]
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        self._ingested = True
        report.head = last
        report.seconds = round(time.monotonic() - started, 3)
        return report

    def _ensure_mined(self) -> bool:
        """Mine on first use when configured to; False when there is no usable history."""
        if self._ingested:
            return True
        if not self.available:
            return False
        with self._lock:
            if self._meta("last_commit") is None and self.config.auto_mine:
                try:
                    self.mine()
                except Exception as exc:  # history is optional evidence
                    log.warning("mining git history failed: %s", exc)
                    return False
        return True

    # ------------------------------------------------------------------ queries

    def _canon_id(self, conn: sqlite3.Connection, file: str) -> int | None:
        row = conn.execute("SELECT canon FROM paths WHERE path=?", (file,)).fetchone()
        return None if row is None or row[0] is None else int(row[0])

    def _decay(self, age: float) -> float:
        half_life = self.config.recency_half_life
        return 1.0 if not half_life else 0.5 ** (max(0.0, age) / half_life)

    def _newest_commit_id(self, conn: sqlite3.Connection) -> int:
        return int(conn.execute("SELECT COALESCE(MAX(id), 0) FROM commits").fetchone()[0])

    def _partner_rows(
        self, file: str, include_deleted: bool, min_support: int, limit: int | None
    ) -> tuple[int, float, list[tuple[str, int, float]]]:
        """``(n, weighted n, [(partner, support, weighted support)])`` for ``file``.

        Weighted counts give each commit ``0.5 ** (age / recency_half_life)`` with age in
        commits before the newest mined one (1.0 each when recency weighting is off).
        """
        conn = self._db()
        canon = self._canon_id(conn, file)
        if canon is None:
            return 0, 0.0, []
        newest = self._newest_commit_id(conn)
        mine = (
            "SELECT DISTINCT cf.commit_id AS cid FROM commit_files cf "
            "JOIN commits c ON c.id = cf.commit_id AND c.skipped=0 WHERE cf.canon_id=?"
        )
        n, n_weight = conn.execute(
            f"SELECT COUNT(*), COALESCE(SUM(engram_decay(? - cid)), 0) FROM ({mine})",
            (newest, canon),
        ).fetchone()
        if not n:
            return 0, 0.0, []
        alive_clause = "" if include_deleted else "AND p.alive=1"
        limit_clause = "" if limit is None else f"LIMIT {max(0, int(limit))}"
        rows = conn.execute(
            f"WITH mine AS ({mine}), pairs AS ("
            "  SELECT DISTINCT o.canon_id AS pid, o.commit_id AS cid FROM commit_files o "
            "  JOIN mine ON o.commit_id = mine.cid WHERE o.canon_id != ?) "
            "SELECT p.path, COUNT(*) AS support, SUM(engram_decay(? - pairs.cid)) AS weight "
            f"FROM pairs JOIN paths p ON p.id = pairs.pid {alive_clause} "
            "GROUP BY pairs.pid HAVING support >= ? "
            f"ORDER BY weight DESC, support DESC, p.path {limit_clause}",
            (canon, canon, newest, max(1, min_support)),
        ).fetchall()
        return int(n), float(n_weight), [(str(a), int(b), float(c)) for a, b, c in rows]

    def cochange_partners(
        self, file: str, k: int = 10, min_support: int = 1, *, include_deleted: bool = False
    ) -> list[tuple[str, float, int]]:
        """``(partner, confidence, support)`` for ``file``, best first (ROSE rules file→partner).

        Confidence = support / #commits touching ``file`` (ROSE), computed on recency-weighted
        commits when ``recency_half_life`` is set (recent co-changes predict the next change
        a little better); support is the plain count. Ties
        are broken by support, then name. Earlier names of ``file`` and of partners count
        (renames are followed); deleted partners are left out unless asked for.
        """
        if not self._ensure_mined():
            return []
        with self._lock:
            _, n_weight, rows = self._partner_rows(file, include_deleted, min_support, k)
        if n_weight <= 0:
            return []
        return [(path, min(1.0, weight / n_weight), support) for path, support, weight in rows]

    def change_rates(self) -> dict[str, float]:
        """Share of (weighted) commits that touch each living file: its base rate of change.

        The prior for files with little or no history; cached until the next mining.
        """
        if not self._ensure_mined():
            return {}
        with self._lock:
            conn = self._db()
            newest = self._newest_commit_id(conn)
            if self._rates is not None and self._rates[0] == newest:
                return self._rates[1]
            total = conn.execute(
                "SELECT COALESCE(SUM(engram_decay(? - id)), 0) FROM commits WHERE skipped=0",
                (newest,),
            ).fetchone()[0]
            rows = conn.execute(
                "SELECT p.path, SUM(engram_decay(? - x.cid)) FROM ("
                "  SELECT DISTINCT cf.canon_id AS pid, cf.commit_id AS cid FROM commit_files cf "
                "  JOIN commits c ON c.id = cf.commit_id AND c.skipped=0) x "
                "JOIN paths p ON p.id = x.pid AND p.alive=1 GROUP BY x.pid",
                (newest,),
            ).fetchall()
            rates = {str(path): float(w) / total for path, w in rows} if total else {}
            self._rates = (newest, rates)
            return rates

    def rank_with_prior(
        self,
        file: str,
        prior: Mapping[str, float] | None = None,
        k: int = 10,
        *,
        alpha: float = 1.0,
        prior_share: float = 0.3,
        popular: int = 20,
        structure_of: Callable[[str], Mapping[str, float]] | None = None,
    ) -> list[tuple[str, float, int]]:
        """Files likely to change with ``file``, best first: ``(file, score, support)``.

        With enough history the ranking is the one this repository's own history taught
        (:mod:`engram.history.cochange_model`: features of each candidate, weights fitted
        on the repository's recent commits; ``structure_of`` gives the structural evidence
        of any file, for that fit, and ``prior`` is this query's). Scores are then the
        model's probabilities over the candidates. Otherwise, the m-estimate below.

        An m-estimate of P(partner changes | ``file`` changes)::

            score(B) = (weighted support(file, B) + alpha * prior(B)) / (weighted n(file) + alpha)
            prior(B) = prior_share * structure(B) / sum(structure) + (1 - prior_share) * rate(B)

        ``prior`` is structural evidence (e.g. import-graph proximity, test naming; any
        non-negative weights), ``rate`` is :meth:`change_rates`. With a long history the
        co-change term decides and the prior only breaks ties; with little or none (new
        files) the graph and the often-changed files (changelog, tests) carry the answer.
        Candidates: co-change partners, prior files and the ``popular`` most changed files.
        Returns ``(file, score, support)``.
        """
        structure = {f: w for f, w in (prior or {}).items() if w > 0 and f != file}
        learned = self._rank_learned(file, structure, k, structure_of)
        if learned is not None:
            return learned
        rates: dict[str, float] = {}
        rows: list[tuple[str, int, float]] = []
        n_weight = 0.0
        if self._ensure_mined():
            rates = self.change_rates()
            with self._lock:
                _, n_weight, rows = self._partner_rows(file, False, 1, None)
        structure_total = sum(structure.values())
        weights = {path: (support, weight) for path, support, weight in rows}
        candidates = set(weights) | set(structure)
        candidates.update(sorted(rates, key=lambda f: (-rates[f], f))[: max(0, popular)])
        candidates.discard(file)
        scored: list[tuple[str, float, int]] = []
        for other in candidates:
            base = rates.get(other, 0.0)
            if structure_total > 0:
                share = prior_share * structure.get(other, 0.0) / structure_total
                belief = share + (1.0 - prior_share) * base
            else:
                belief = base
            support, weight = weights.get(other, (0, 0.0))
            score = (weight + alpha * belief) / (n_weight + alpha)
            if score > 0:
                scored.append((other, score, support))
        scored.sort(key=lambda item: (-item[1], -item[2], item[0]))
        return scored[: max(0, k)]

    def cochange_model(
        self,
        structure_of: Callable[[str], Mapping[str, float]] | None = None,
        cancel: Callable[[], bool] | None = None,
    ) -> CochangeModel | None:
        """The ranking model of this repository, fitted when missing or out of date.

        Stored in ``history.sqlite`` (meta ``cochange_model``) with the commit count it was
        fitted at; refitted once the history has grown by ``REFIT_SHARE`` (a few new commits
        do not change what the history teaches). None when the history is too short.
        ``cancel``: a stop during a fit raises ``StepCancelled`` and stores nothing.
        """
        index = self.commit_index(cancel)
        if index is None or not self.config.learn_ranking:
            return None
        with self._lock:
            if self._model is not None:
                return self._model
            stored = self._meta("cochange_model")
            if stored is not None:
                try:
                    data = json.loads(stored)
                except ValueError:
                    data = {}
                fitted_at = int(data.get("fitted_at", -1)) if isinstance(data, dict) else -1
                if 0 <= index.size - fitted_at <= max(REFIT_MIN, REFIT_SHARE * fitted_at):
                    raw = data.get("model")
                    if raw is None:
                        return None  # too little history when it was last tried
                    model = CochangeModel.from_dict(raw)
                    if model is not None:
                        self._model = model
                        return model
            started = time.monotonic()
            structure_for = None
            if structure_of is not None:
                structure_for = self._structures(index, structure_of, cancel)
            model = learn(index, structure_for=structure_for, cancel=cancel)
            payload = {
                "fitted_at": index.size,
                "model": None if model is None else model.to_dict(),
            }
            self._db().execute(
                "INSERT OR REPLACE INTO meta VALUES ('cochange_model', ?)", (json.dumps(payload),)
            )
            log.info(
                "co-change ranking %s in %.1fs",
                "learned" if model is not None else "not learned (too little history)",
                time.monotonic() - started,
            )
            self._model = model
            return model

    @staticmethod
    def _structures(
        index: CommitIndex,
        structure_of: Callable[[str], Mapping[str, float]],
        cancel: Callable[[], bool] | None = None,
    ) -> dict[int, dict[int, float]]:
        """Structural evidence of each self-training query, keyed by canonical ids."""
        ids = {name: canon for canon, name in index.names.items()}
        out: dict[int, dict[int, float]] = {}
        for file in training_files(index):
            if cancel is not None and cancel():
                raise StepCancelled
            name = index.names.get(file)
            if name is None:
                continue
            try:
                evidence = structure_of(name)
            except Exception as exc:  # structure is optional evidence
                log.debug("no structure for %s: %s", name, exc)
                continue
            out[file] = {ids[f]: w for f, w in evidence.items() if f in ids}
        return out

    def _rank_learned(
        self,
        file: str,
        structure: Mapping[str, float],
        k: int,
        structure_of: Callable[[str], Mapping[str, float]] | None,
    ) -> list[tuple[str, float, int]] | None:
        model = self.cochange_model(structure_of)
        index = self.commit_index()
        if model is None or index is None:
            return None
        with self._lock:
            canon = self._canon_id(self._db(), file)
        stats = self._index_stats(index)
        ids, popular = self._index_lookups(index, stats)
        unseen: dict[int, str] = {}
        names = _NameOverlay(unseen, index.names)
        prior: dict[int, float] = {}
        for path, weight in structure.items():
            cid = ids.get(path)
            if cid is None:  # a file git has not seen yet: a candidate all the same
                cid = -1 - len(index.names) - len(unseen)
                unseen[cid] = path
            prior[cid] = weight
        found = candidate_features(
            index,
            canon if canon is not None else -1,
            structure=prior,
            popular=popular,
            stats=stats,
            features=model.features,
            names=names,
        )
        if not found.files:
            return []
        logits = model.score(found.features)
        probabilities = np.exp(logits - logits.max())
        probabilities /= probabilities.sum()
        ranked = sorted(
            zip(found.files, probabilities.tolist(), found.support, strict=True),
            key=lambda item: (-item[1], -item[2], names.get(item[0], "")),
        )
        return [
            (names[cid], float(p), support)
            for cid, p, support in ranked[: max(0, k)]
            if names.get(cid) not in (None, file)
        ]

    def _index_lookups(
        self, index: CommitIndex, stats: HistoryStats
    ) -> tuple[dict[str, int], list[int]]:
        cached = self._index_lookup_cache
        if cached is None or cached[0] is not index:
            ids = {name: cid for cid, name in index.names.items()}
            cached = (index, ids, popular_files(stats.rates, index.alive))
            self._index_lookup_cache = cached
        return cached[1], cached[2]

    def _index_stats(self, index: CommitIndex) -> HistoryStats:
        if self._index_rate_cache is None or self._index_rate_cache[0] is not index:
            self._index_rate_cache = (index, history_stats(index))
        return self._index_rate_cache[1]

    def commit_index(self, cancel: Callable[[], bool] | None = None) -> CommitIndex | None:
        """The eligible commits in memory (:class:`CommitIndex`), cached until new mining.

        ``cancel`` is looked at while SQLite reads them (0.7 s on babel at load 10): a stop
        raises ``StepCancelled`` and nothing is cached."""
        if not self._ensure_mined():
            return None
        with self._lock:
            conn = self._db()
            newest = self._newest_commit_id(conn)
            if self._index is not None and self._index[0] == newest:
                return self._index[1]
            with statements_cancelled_by(conn, cancel, StepCancelled, _STEPS_PER_LOOK):
                rows = conn.execute(
                    "SELECT DISTINCT cf.commit_id, cf.canon_id FROM commit_files cf "
                    "JOIN commits c ON c.id = cf.commit_id AND c.skipped=0 "
                    "ORDER BY cf.commit_id, cf.rowid"
                ).fetchall()
                names = dict(conn.execute("SELECT id, path FROM paths WHERE canon=id").fetchall())
                alive = [
                    r[0] for r in conn.execute("SELECT id FROM paths WHERE canon=id AND alive=1")
                ]
                times = dict(
                    conn.execute("SELECT id, time FROM commits WHERE skipped=0").fetchall()
                )
            index = CommitIndex.build(rows, names, alive, times)
            self._index = (newest, index)
            self._model = None
            return index

    def commit_count(self, file: str) -> int:
        """How many mined (co-change eligible) commits touched ``file`` or its earlier names."""
        if not self._ensure_mined():
            return 0
        with self._lock:
            n, _, _ = self._partner_rows(file, True, 1, 0)
            return n

    def coaccess_seed(
        self, cancel: Callable[[], bool] | None = None
    ) -> list[tuple[str, str, float]]:
        """Cold-start co-access edges ``(file_a, file_b, weight)`` from co-commits
        (docs/history.md).

        Weight is the Jaccard index of the two files' commit sets (0..1, symmetric), for
        pairs committed together at least ``coaccess_min_support`` times, strongest first.
        ``cancel`` is looked at while SQLite pairs the files (~0.8 CPU s at 58k files): a
        stop raises ``StepCancelled``.
        """
        edges = [(a, b, jaccard) for a, b, _, jaccard in self._pairs(cancel)]
        edges.sort(key=lambda e: (-e[2], e[0], e[1]))
        return edges[: self.config.coaccess_limit]

    def top_pairs(self, k: int = 50) -> list[tuple[str, str, int, float]]:
        """The ``k`` pairs of living files committed together most often:
        ``(file_a, file_b, support, jaccard)``, by support then Jaccard (``engram report``).

        Ranked and cut in SQL: a large repository has millions of pairs, and ``engram
        report`` wants the strongest few (docs/report.md), not a Python tuple for each.
        """
        if k <= 0 or not self._ensure_mined():
            return []
        with self._lock:
            rows = (
                self._db()
                .execute(
                    "WITH counts AS (SELECT cf.canon_id AS id, COUNT(DISTINCT cf.commit_id) AS n "
                    "  FROM commit_files cf JOIN commits c ON c.id=cf.commit_id AND c.skipped=0 "
                    "  GROUP BY cf.canon_id), "
                    "pairs AS (SELECT a.canon_id AS a, b.canon_id AS b, "
                    "  COUNT(DISTINCT a.commit_id) AS support "
                    "  FROM commit_files a JOIN commits c ON c.id=a.commit_id AND c.skipped=0 "
                    "  JOIN commit_files b ON b.commit_id=a.commit_id AND b.canon_id>a.canon_id "
                    "  JOIN paths pa ON pa.id=a.canon_id AND pa.alive=1 "
                    "  JOIN paths pb ON pb.id=b.canon_id AND pb.alive=1 "
                    "  GROUP BY a.canon_id, b.canon_id HAVING support>=?) "
                    "SELECT na.path, nb.path, p.support, "
                    "  CAST(p.support AS REAL) / (ca.n + cb.n - p.support) AS jaccard "
                    "FROM pairs p JOIN counts ca ON ca.id=p.a JOIN counts cb ON cb.id=p.b "
                    "JOIN paths na ON na.id=p.a AND na.canon=na.id "
                    "JOIN paths nb ON nb.id=p.b AND nb.canon=nb.id "
                    "WHERE ca.n + cb.n - p.support > 0 "
                    "ORDER BY p.support DESC, jaccard DESC, na.path, nb.path LIMIT ?",
                    (max(1, self.config.coaccess_min_support), k),
                )
                .fetchall()
            )
        return [(str(a), str(b), int(n), round(float(j), 6)) for a, b, n, j in rows]

    def _pairs(self, cancel: Callable[[], bool] | None = None) -> list[tuple[str, str, int, float]]:
        """Every pair of living files with at least ``coaccess_min_support`` co-commits."""
        if not self._ensure_mined():
            return []
        with (
            self._lock,
            statements_cancelled_by(self._db(), cancel, StepCancelled, _STEPS_PER_LOOK),
        ):
            conn = self._db()
            counts = dict(
                conn.execute(
                    "SELECT cf.canon_id, COUNT(DISTINCT cf.commit_id) FROM commit_files cf "
                    "JOIN commits c ON c.id=cf.commit_id WHERE c.skipped=0 GROUP BY cf.canon_id"
                ).fetchall()
            )
            rows = conn.execute(
                "SELECT a.canon_id, b.canon_id, COUNT(DISTINCT a.commit_id) AS support "
                "FROM commit_files a JOIN commits c ON c.id=a.commit_id AND c.skipped=0 "
                "JOIN commit_files b ON b.commit_id=a.commit_id AND b.canon_id>a.canon_id "
                "JOIN paths pa ON pa.id=a.canon_id AND pa.alive=1 "
                "JOIN paths pb ON pb.id=b.canon_id AND pb.alive=1 "
                "GROUP BY a.canon_id, b.canon_id HAVING support>=?",
                (max(1, self.config.coaccess_min_support),),
            ).fetchall()
            names = dict(conn.execute("SELECT id, path FROM paths WHERE canon=id").fetchall())
        out: list[tuple[str, str, int, float]] = []
        for a, b, support in rows:
            union = counts.get(a, 0) + counts.get(b, 0) - support
            if union > 0 and a in names and b in names:
                out.append((names[a], names[b], int(support), round(support / union, 6)))
        return out

    def renames(self, cancel: Callable[[], bool] | None = None) -> dict[str, str]:
        """Every rename mined so far, chained: ``old name -> current name``."""
        if not self._ensure_mined():
            return {}
        with self._lock:
            rows = (
                self._db()
                .execute("SELECT old_path, new_path FROM renames ORDER BY commit_id, rowid")
                .fetchall()
            )
        return fold_renames(_heeding(((str(a), str(b)) for a, b in rows), cancel))

    def renames_since(
        self, commit: str | None, cancel: Callable[[], bool] | None = None
    ) -> dict[str, str]:
        """Renames made after ``commit`` up to the mined revision: ``old -> current`` name.

        ``None`` means all known renames. The engine applies the map to memories with
        :func:`engram.history.apply_renames`. Unknown commits give ``{}`` (logged).
        ``cancel`` is looked at while git looks for renames (seconds over a long range)
        and while they are chained: a stop raises ``StepCancelled``.
        """
        if commit is None:
            return self.renames(cancel)
        if not self.available or self._open_repo() is None:
            return {}
        pairs: list[tuple[str, str]] = []
        records = self._stream_log(
            f"{commit}..{self.rev}", None, cancel=cancel, only=("--diff-filter=R",)
        )
        try:
            for record in records:
                for change in record.changes:
                    if change.status == "R" and change.old_path:
                        pairs.append((self._strip(change.old_path), self._strip(change.path)))
        except _LogCancelled:
            raise StepCancelled from None
        return fold_renames(_heeding(pairs, cancel))

    def _strip(self, path: str) -> str:
        """Repository-relative path as workspace-relative (for a workspace in a subfolder)."""
        if self._prefix and path.startswith(self._prefix):
            return path[len(self._prefix) :]
        return path

    def head_commit(self) -> str | None:
        """The sha of ``rev`` (HEAD), for a new memory's provenance; ``None`` without history.

        Every ``remember`` asks, and ``git rev-parse`` is a process start (15-20 ms of a
        warm engine's remember): the answer is kept while the files git moves HEAD with
        (``HEAD``, the branch's loose ref, ``packed-refs``, a reftable's table list) keep
        their inode, size and modification time (see :meth:`_head_stamp`).
        """
        if not self.available:
            return None
        stamp = self._head_stamp()
        cached = self._head_cache
        if stamp is not None and cached is not None and cached[0] == stamp:
            return cached[1]
        out = self._git("rev-parse", f"{self.rev}^{{commit}}")
        sha = out.strip() if out else None
        if stamp is not None:
            self._head_cache = (stamp, sha)
        return sha

    def _head_stamp(self) -> HeadStamp | None:
        """What changes whenever HEAD moves (commit, checkout, reset, pack-refs, another
        worktree's commit on the same branch), or ``None``: ask git (``rev`` is not HEAD)."""
        repo = self._repo
        if self.rev != "HEAD" or repo is None:
            return None
        try:
            git_dir = Path(repo.git_dir)
            common = Path(repo.common_dir)
            head = (git_dir / "HEAD").read_text(encoding="utf-8", errors="replace").strip()
        except (OSError, ValueError):
            return None
        files = [git_dir / "HEAD", common / "packed-refs", common / "reftable" / "tables.list"]
        if head.startswith("ref:"):
            ref = head[4:].strip()
            files += [git_dir / ref, common / ref]

        def stat(path: Path) -> tuple[int, int, int] | None:
            try:
                info = path.stat()
            except OSError:
                return None
            return (info.st_ino, info.st_size, info.st_mtime_ns)

        return head, tuple(stat(f) for f in files)

    def user_name(self) -> str | None:
        """``git config user.name``: who shares a memory (``engram share``); None if unset."""
        if self._open_repo() is None:
            return None
        out = self._git("config", "user.name", timeout=5)
        return (out or "").strip() or None

    def commit_paths(self, paths: Sequence[str], message: str) -> str:
        """``git add`` + ``git commit`` exactly ``paths`` (workspace-relative); the new HEAD.

        Raises :class:`GitCommandFailed` with git's own last line (nothing to commit, no
        identity configured, a hook refused it …); the files stay as they are.
        """
        repo = self._open_repo()
        if repo is None:
            raise GitCommandFailed("this workspace is not in a git repository")
        inside = [f"{self._prefix}{p}" for p in paths]
        git = ["git", *SAFE_GIT_CONFIG]
        for cmd in ([*git, "add", "--", *inside], [*git, "commit", "-m", message, "--", *inside]):
            try:
                repo.git.execute(cmd)
            except Exception as exc:  # GitCommandError (or OSError): say what git said
                lines = (str(getattr(exc, "stderr", "") or exc)).strip().splitlines()
                last = lines[-1].strip().strip("'\"") if lines else type(exc).__name__
                raise GitCommandFailed(f"git {cmd[len(git)]} failed: {last}") from exc
        return str(repo.head.commit.hexsha)

    def team_file_facts(self, folder: str) -> TeamFolderFacts:
        """Who committed each file of the team folder, and which files a commit deleted.

        docs/trust.md: only a teammate's *committed* file is a share, and only a committed
        deletion retires the memory it brought; a file missing from the working tree (a
        folder moved away, a branch without it) or not committed yet is neither. Three git
        calls whatever the number of files: the tree at HEAD, the working tree's changes,
        and one log of the folder (newest change per path wins).
        """
        facts = TeamFolderFacts()
        if self._open_repo() is None or self.head_commit() is None:
            return facts
        inside = self._prefix + folder.strip("/")
        tree = self._git("ls-tree", "-r", "--name-only", "-z", self.rev, "--", inside,
                         timeout=self.config.git_timeout_s)  # fmt: skip
        # the repository's filter drivers off (engram.gitroot.filters_off), submodules not
        # entered (their own config would apply there)
        names = self._git("config", "--name-only", "--get-regexp", r"^filter\.") or ""
        status = self._git(*filters_off(names), "status", "--porcelain=v1", "-z",
                           "--untracked-files=all", "--ignore-submodules=all", "--", inside,
                           timeout=self.config.git_timeout_s)  # fmt: skip
        history = self._git(
            "log", "--format=%x01%H%x1f%an", "--name-status", "--no-renames", self.rev, "--",
            inside, timeout=self.config.git_timeout_s,
        )  # fmt: skip
        if tree is None or status is None or history is None:
            return facts
        facts.at_head = {self._strip(p) for p in tree.split("\0") if p}
        for item in status.split("\0"):
            if len(item) > 3:
                facts.changed.add(self._strip(item[3:]))
        for block in history.split("\x01")[1:]:
            header, _, rest = block.partition("\n")
            sha, _, author = header.partition("\x1f")
            for line in rest.splitlines():
                kind, _, path = line.partition("\t")
                if not path:
                    continue
                path = self._strip(path)
                if path not in facts.last:
                    facts.last[path] = TeamFileChange(sha, author or None, kind.strip() == "D")
        return facts

    def commits_touching(
        self,
        file: str,
        start_line: int | None = None,
        end_line: int | None = None,
        limit: int = 20,
    ) -> list[CommitInfo]:
        """Commits that changed ``file`` (or lines ``start_line..end_line``), newest first.

        Lines are 0-based and inclusive like :class:`engram.model.CodeAnchor`. Line ranges use
        ``git log -L``; whole files use ``git log --follow`` (renames followed). Each call is
        bounded by ``git_timeout_s``; on timeout or error the answer is empty (logged).
        """
        if not self.available or limit <= 0:
            return []
        rel = self._prefix + file
        fmt = "--format=%x01%H%x1f%ct%x1f%an%x1f%s"
        args: list[str] = ["log", fmt, f"--max-count={limit}"]
        if start_line is not None:
            first = max(0, start_line) + 1
            last = max(first, (end_line if end_line is not None else start_line) + 1)
            args += ["-s", f"-L{first},{last}:{rel}", self.rev]
        else:
            args += ["--follow", self.rev, "--", rel]
        out = self._git(*args, timeout=self.config.git_timeout_s)
        if not out:
            return []
        commits: list[CommitInfo] = []
        for block in out.split("\x01")[1:]:
            line = block.split("\n", 1)[0]
            fields = line.split("\x1f")
            if len(fields) < 4:
                continue
            sha, ts, author, summary = fields[0], fields[1], fields[2], fields[3]
            try:
                when = _utc(int(ts))
            except ValueError:
                continue
            commits.append(CommitInfo(sha, when, author, summary))
        return commits[:limit]

    def changed_since(self, file: str, commit: str) -> bool | None:
        """Whether ``file`` changed after ``commit`` (staleness of a memory made then).

        ``None`` when it cannot be told (no history, unknown commit).
        """
        if not self.available:
            return None
        out = self._git(
            "rev-list", "--max-count=1", f"{commit}..{self.rev}", "--", self._prefix + file,
            timeout=self.config.git_timeout_s,
        )  # fmt: skip
        if out is None:
            return None
        return bool(out.strip())

    def stats(self) -> JsonObject:
        """Numbers for `engram stats` / `doctor`: status, commits and files mined."""
        info: JsonObject = {"status": self.status, "reason": self.reason}
        if self.available:
            with self._lock:
                conn = self._db()
                info["commits"] = self._count_commits(conn)
                info["files"] = conn.execute(
                    "SELECT COUNT(*) FROM paths WHERE canon=id"
                ).fetchone()[0]
                info["last_commit"] = self._meta("last_commit")
        return info


def partners_as_dict(partners: Sequence[tuple[str, float, int]]) -> dict[str, float]:
    """``{partner: confidence}``: handy for blending co-change into other rankings."""
    return {path: confidence for path, confidence, _ in partners}
