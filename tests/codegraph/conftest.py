"""Fixture projects written on the fly: one small tree per language."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.codegraph import CodeGraph
from engram.workspace import Workspace


def write_tree(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")


@pytest.fixture
def make_graph(tmp_path: Path):  # type: ignore[no-untyped-def]
    """Write ``files`` into a fresh (non-git) workspace and index it."""
    graphs: list[CodeGraph] = []

    def build(files: dict[str, str | bytes], **config: object) -> CodeGraph:
        root = tmp_path / f"ws{len(graphs)}"
        root.mkdir()
        write_tree(root, files)
        from engram.config import IndexConfig

        graph = CodeGraph(Workspace.open(root), IndexConfig(**config))  # type: ignore[arg-type]
        graph.index()
        graphs.append(graph)
        return graph

    yield build
    for graph in graphs:
        graph.close()
