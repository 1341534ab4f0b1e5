from __future__ import annotations

from collections.abc import Iterator

import pytest

from engram.store import MemoryStore
from engram.workspace import Workspace


@pytest.fixture
def store(tmp_workspace: Workspace) -> Iterator[MemoryStore]:
    s = MemoryStore(tmp_workspace)
    yield s
    s.close()
