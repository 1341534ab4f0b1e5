"""Hypothesis profiles for the trust property tests (docs/trust.md, invariants).

``ci`` (the default) keeps the suite fast; ``thorough`` is for a run by hand:
``HYPOTHESIS_PROFILE=thorough pytest tests/trust``.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, settings

from engram.app import Engine
from engram.workspace import Workspace

settings.register_profile(
    "ci",
    max_examples=60,
    stateful_step_count=30,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=1000,
    stateful_step_count=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


@pytest.fixture
def two(tmp_workspace: Workspace) -> Iterator[tuple[Engine, Engine]]:
    """The engine and a command running in-process beside it: two stores on one folder
    (keyword-only), for writes of two processes interleaved on purpose."""
    config: dict[str, object] = {"embed": {"model": "none"}}
    with (
        Engine.open(tmp_workspace.root, config) as engine,
        Engine.open(tmp_workspace.root, config) as command,
    ):
        yield engine, command
