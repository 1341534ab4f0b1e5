"""The errors a user can cause, each carrying one line to show them.

Every front end (CLI, LSP, MCP server) catches :data:`USER_ERRORS` and shows ``str(exc)``
as-is: the message is written for the person at the keyboard, not for a developer, so it
says what was wrong and, where it can, what to do instead. Anything else is a bug and is
reported as such.
"""

from __future__ import annotations

from engram.workspace import WorkspaceError


class ConfigError(ValueError):
    """A configuration value has the wrong type; the message names the key.

    Defined here, not in :mod:`engram.config` (which raises it and re-exports it), so that
    naming the user errors costs no settings machinery: the CLI's parser checks arguments
    with :class:`InvalidInput` long before any setting is read (docs/cli.md, start-up).
    """


class EngramError(Exception):
    """Base of every user-facing failure; ``str(exc)`` is one line for the user."""


class NotFound(EngramError):
    """A memory id (or another named thing) does not exist."""


class InvalidInput(EngramError):
    """An argument is malformed: unknown type, empty text, bad budget …"""


class StoreLocked(EngramError):
    """Another process holds the writer lock longer than we are willing to wait."""


def one_line(exc: BaseException) -> str:
    """``Type: first line of the message``: how an unexpected error is logged or reported."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".strip(": ")


#: What the OS, SQLite and LanceDB say when the disk is full or the file system read-only.
_DISK_FULL = ("no space left on device", "os error 28", "database or disk is full")
_READ_ONLY = ("read-only file system", "os error 30", "attempt to write a readonly database")


def disk_trouble(exc: BaseException) -> str | None:
    """What to do when ``exc`` (or its cause) is a full disk or a read-only file system,
    else None: neither means the data is damaged, and a store error advising to delete
    the store over a full disk (the walk of stop 29) could lose everything."""
    seen: BaseException | None = exc
    while seen is not None:
        text = str(seen).lower()
        if any(mark in text for mark in _DISK_FULL):
            return (
                "the disk holding Engram's data is full: free some space and run it again "
                "(what was stored before is kept)"
            )
        if any(mark in text for mark in _READ_ONLY):
            return (
                "Engram's data is on a read-only file system: make .engram/ writable and run "
                "it again (what was stored before is kept)"
            )
        seen = seen.__cause__ or seen.__context__
    return None


#: The exceptions that mean "the user asked for something that cannot be done".
USER_ERRORS: tuple[type[Exception], ...] = (EngramError, WorkspaceError, ConfigError)

__all__ = [
    "USER_ERRORS",
    "ConfigError",
    "EngramError",
    "InvalidInput",
    "NotFound",
    "StoreLocked",
    "WorkspaceError",
    "disk_trouble",
    "one_line",
]
