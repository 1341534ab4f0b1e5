"""Fixtures for observer tests: an in-memory sink standing in for the Engine."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from engram.config import ObserverConfig
from engram.model import Memory
from engram.observer import Observer
from engram.workspace import Workspace


@attrs.define
class FakeResult:
    memory: Memory
    merged: bool = False


class FakeSink:
    """The part of the Engine the observer uses: remember_many, list, memories_for_file."""

    def __init__(self) -> None:
        self.memories: dict[str, Memory] = {}
        self.batches: list[list[Memory]] = []

    def remember_many(self, memories: Sequence[Memory]) -> list[FakeResult]:
        self.batches.append(list(memories))
        for memory in memories:
            self.memories[memory.id] = memory
        return [FakeResult(m) for m in memories]

    def list(self, **kwargs: Any) -> list[Memory]:
        wanted = kwargs.get("type")
        out = list(self.memories.values())
        if wanted:
            names = {wanted} if isinstance(wanted, str) else set(wanted)
            out = [m for m in out if m.type.value in names]
        return out

    def memories_for_file(self, rel: str) -> list[Memory]:
        return [
            m
            for m in self.memories.values()
            if rel in m.related_files or any(a.file == rel for a in m.anchors)
        ]

    def of_type(self, type_name: str) -> list[Memory]:
        return [m for m in self.memories.values() if m.type.value == type_name]


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


@pytest.fixture
def sink() -> FakeSink:
    return FakeSink()


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_observer(tmp_workspace: Workspace, sink: FakeSink, clock: Clock):  # type: ignore[no-untyped-def]
    def factory(**config: Any) -> Observer:
        return Observer(
            sink,
            workspace=tmp_workspace,
            config=ObserverConfig(**config),
            clock=clock,
        )

    return factory


def write_files(root: Path, *names: str) -> None:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")
