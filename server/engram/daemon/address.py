"""Where the engine of a workspace listens, and who may reach it (docs/engine.md, "Security").

Standard library only, and only its cheap part: every forwarding front end imports this
before anything else, so paths are strings here (``pathlib`` pulls in ``urllib.parse`` and
``ipaddress``) and the hash is the interpreter's own SHA-256 (``hashlib`` loads OpenSSL);
the :class:`~pathlib.Path` views are built when someone asks for them.

The address lives in a per-user runtime directory that only the user can enter: the
``engram`` folder of ``$XDG_RUNTIME_DIR`` (a tmpfs the login session owns), else
``~/.cache/engram/run``, else ``<tmp>/engram-<uid>``; each is created ``0700`` and used only
when it is a real directory owned by the user with no group or other access. In it, per
engine (the *key* hashes the workspace's real path and the ``ENGRAM_<SECTION>__<KEY>``
settings of the environment, so a differently configured front end gets its own engine):

* ``<key>.sock``: the Unix socket (``0600``); where there are no Unix sockets, ``<key>.port``
  (``0600``) holds a loopback port and a random per-engine token the client must present;
* ``<key>.pid``: locked by the engine for its whole life (one engine per key, always);
  its text says the pid, the workspace and the build;
* ``<key>.start``: the lock a front end holds while it starts an engine, so two front ends
  starting at once get one engine.
"""

from __future__ import annotations

import json
import os
import stat
import sys

#: ``typing`` costs a forwarding CLI milliseconds; mypy reads the names anyway
TYPE_CHECKING = False
if TYPE_CHECKING:
    import socket
    from collections.abc import Iterator, Mapping
    from pathlib import Path

#: Unix socket paths longer than this do not bind on every platform (108 on Linux, 104 on
#: macOS, counting the terminating NUL).
MAX_SOCKET_PATH = 100
#: Environment variables that configure the engine machinery itself (never part of the key).
RUNTIME_DIR_ENV = "ENGRAM_RUNTIME_DIR"
TRANSPORT_ENV = "ENGRAM_ENGINE_TRANSPORT"


class NoRuntimeDir(OSError):
    """No directory is private enough to hold an engine's socket (then: in-process)."""


def unix_sockets_available(environ: Mapping[str, str] | None = None) -> bool:
    """Whether to use a Unix socket (``ENGRAM_ENGINE_TRANSPORT=tcp`` forces loopback)."""
    env = os.environ if environ is None else environ
    if env.get(TRANSPORT_ENV, "").strip().lower() == "tcp":
        return False
    import socket

    return hasattr(socket, "AF_UNIX")


def _private_dir(path: str) -> str | None:
    """``path`` created ``0700``, or ``None`` when it is not ours alone."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISDIR(info.st_mode):
        return None  # a symlink or a file someone planted
    getuid = getattr(os, "getuid", None)
    if getuid is not None:
        if info.st_uid != getuid():
            return None
        if info.st_mode & 0o077:
            try:
                os.chmod(path, 0o700)
            except OSError:
                return None
    return path


def _candidates(env: Mapping[str, str]) -> Iterator[str]:
    """The runtime directories to try, in order (the temporary one computed last: it
    imports ``tempfile``)."""
    explicit = env.get(RUNTIME_DIR_ENV)
    if explicit:
        yield explicit
        return
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg:
        yield os.path.join(xdg, "engram")
    cache = env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    yield os.path.join(cache, "engram", "run")
    uid = getattr(os, "getuid", lambda: 0)()
    user = env.get("USER") or env.get("USERNAME") or str(uid)
    import tempfile

    yield os.path.join(tempfile.gettempdir(), f"engram-{uid if uid else user}")


def runtime_directory(environ: Mapping[str, str] | None = None) -> str:
    """The user's private directory for engine sockets and locks (see the module doc)."""
    env = os.environ if environ is None else environ
    unix = unix_sockets_available(env)
    tried: list[str] = []
    for candidate in _candidates(env):
        tried.append(candidate)
        if unix and len(candidate) + 26 > MAX_SOCKET_PATH:
            continue
        found = _private_dir(candidate)
        if found is not None:
            return found
    raise NoRuntimeDir(
        "no private runtime directory for the engine (tried " + ", ".join(tried) + ")"
    )


def runtime_dir(environ: Mapping[str, str] | None = None) -> Path:
    """:func:`runtime_directory` as a :class:`~pathlib.Path`."""
    from pathlib import Path

    return Path(runtime_directory(environ))


def config_environment(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The ``ENGRAM_<SECTION>__<KEY>`` settings of the environment (they shape the engine)."""
    env = os.environ if environ is None else environ
    return {k: v for k, v in sorted(env.items()) if k.startswith("ENGRAM_") and "__" in k}


def engine_key(root: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> str:
    """The engine's name: the workspace's real path and its environment settings, hashed."""
    ident = json.dumps([os.path.realpath(root), config_environment(environ)], sort_keys=True)
    return _sha256_hex(ident.encode("utf-8"))[:20]


def _sha256_hex(data: bytes) -> str:
    """SHA-256 without ``hashlib``, whose OpenSSL load costs a forwarding CLI 3-15 ms: the
    interpreter's built-in module (``_sha2`` from Python 3.12, ``_sha256`` before; the same
    digest), else ``hashlib``'s."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found,no-redef,unused-ignore]
        except ImportError:
            from hashlib import sha256  # type: ignore[assignment,unused-ignore]
    return str(sha256(data).hexdigest())


class Address:
    """The files of one engine in the runtime directory (``*_file``: their paths as
    strings, for the forwarding CLI; the :class:`~pathlib.Path` properties for the rest)."""

    def __init__(self, directory: str | os.PathLike[str], key: str, unix: bool) -> None:
        self.folder = os.fspath(directory)
        self.key = key
        self.unix = unix

    @classmethod
    def for_workspace(
        cls, root: str | os.PathLike[str], environ: Mapping[str, str] | None = None
    ) -> Address:
        return cls(
            runtime_directory(environ), engine_key(root, environ), unix_sockets_available(environ)
        )

    def file(self, suffix: str) -> str:
        """``<runtime dir>/<key><suffix>``."""
        return os.path.join(self.folder, f"{self.key}{suffix}")

    @property
    def directory(self) -> Path:
        from pathlib import Path

        return Path(self.folder)

    @property
    def socket_path(self) -> Path:
        return self.directory / f"{self.key}.sock"

    @property
    def port_file(self) -> Path:
        return self.directory / f"{self.key}.port"

    @property
    def pid_file(self) -> Path:
        return self.directory / f"{self.key}.pid"

    @property
    def start_lock(self) -> Path:
        return self.directory / f"{self.key}.start"

    def read_port(self) -> tuple[int, str] | None:
        """(port, token) of a loopback engine, if its file is there and ours alone."""
        path = self.file(".port")
        try:
            info = os.stat(path)
            getuid = getattr(os, "getuid", None)
            if getuid is not None and (info.st_uid != getuid() or info.st_mode & 0o077):
                return None
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            return int(data["port"]), str(data["token"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def read_pid(self) -> dict[str, object] | None:
        """What the engine wrote in its pid file (pid, workspace, build), if anything."""
        try:
            with open(self.file(".pid"), encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` readable by the user only (created ``0600``, atomically)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode("utf-8"))
    finally:
        os.close(fd)
    os.replace(tmp, path)


def peer_uid(sock: socket.socket) -> int | None:
    """The uid of the process at the other end of a Unix socket, where the OS tells it."""
    import socket

    so_peercred = getattr(socket, "SO_PEERCRED", None)
    if so_peercred is None or not sys.platform.startswith("linux"):
        return None
    import struct

    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, so_peercred, struct.calcsize("3i"))
    except OSError:
        return None
    _pid, uid, _gid = struct.unpack("3i", raw)
    return int(uid)


__all__ = [
    "Address",
    "NoRuntimeDir",
    "config_environment",
    "engine_key",
    "peer_uid",
    "runtime_dir",
    "runtime_directory",
    "unix_sockets_available",
    "write_private",
]
