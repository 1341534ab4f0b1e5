"""A forwarded command in the engine keeps engine.log's own format (and its redaction).

The CLI's quiet logging set its one-line format on every root handler; inside the engine
a forwarded command runs the same code, so after the first CLI call engine.log lost its
timestamps and pid (docs/engine.md, "How it runs").
"""

from __future__ import annotations

import io
import logging
from collections.abc import Iterator

import pytest

from engram.cli.commands import _quiet_logging
from engram.redaction import RedactingFormatter

ENGINE_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s"


@pytest.fixture
def root_handlers() -> Iterator[list[logging.Handler]]:
    root = logging.getLogger()
    saved, level = list(root.handlers), root.level
    yield root.handlers
    root.handlers[:] = saved
    root.setLevel(level)


def test_a_redacting_engine_handler_keeps_its_format(root_handlers: list[logging.Handler]) -> None:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(RedactingFormatter(ENGINE_FORMAT))
    root_handlers[:] = [handler]
    _quiet_logging()  # what a forwarded command runs in the engine
    logging.getLogger("engram.test").warning("token ghp_%s leaked", "a" * 36)
    line = out.getvalue()
    assert " WARNING engram.test: token " in line and not line.startswith("engram: ")
    assert "ghp_" + "a" * 36 not in line  # still redacted


def test_a_plain_handler_gets_the_cli_format(root_handlers: list[logging.Handler]) -> None:
    out = io.StringIO()
    root_handlers[:] = [logging.StreamHandler(out)]
    _quiet_logging()
    logging.getLogger("engram.test").warning("one line")
    assert out.getvalue() == "engram: WARNING: one line\n"
