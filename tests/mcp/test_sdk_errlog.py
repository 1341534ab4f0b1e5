"""The SDK client's stderr default stays a real file whatever a test captured before."""

from __future__ import annotations

import inspect

import pytest


def test_the_sdk_stdio_clients_default_stderr_has_a_file_descriptor(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Run alone on the old suite this test is the first to import ``mcp.client.stdio``,
    under ``capsys``: the default ``errlog`` is then the capture buffer, and a child
    started with it fails with ``io.UnsupportedOperation: fileno`` (tests/conftest.py)."""
    from mcp.client.stdio import stdio_client

    default = inspect.signature(stdio_client).parameters["errlog"].default
    assert isinstance(default.fileno(), int)
    print("captured", flush=True)
    assert capsys.readouterr().out == "captured\n"
