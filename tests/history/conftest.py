"""A tiny git repository builder for history tests (real git, fixed identity and dates)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from tests.conftest import git


class RepoBuilder:
    """Writes files and commits them with increasing, fixed dates (deterministic order)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._tick = 0
        root.mkdir(parents=True, exist_ok=True)
        git(root, "init", "-q", "-b", "main")

    def write(self, path: str, text: str) -> None:
        target = self.root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")

    def commit(self, files: Mapping[str, str] | None = None, message: str = "change") -> str:
        """Write ``files`` (path -> content) and commit everything staged; returns the sha."""
        for path, text in (files or {}).items():
            self.write(path, text)
        git(self.root, "add", "-A")
        return self._commit(message)

    def touch(self, *paths: str, message: str = "touch") -> str:
        """Append a line to each path (creating it) and commit: one co-change transaction."""
        self._tick += 1
        for path in paths:
            target = self.root / path
            old = target.read_text(encoding="utf-8") if target.exists() else body(path)
            self.write(path, old + f"# change {self._tick}\n")
        git(self.root, "add", "-A")
        return self._commit(message)

    def mv(self, old: str, new: str, message: str = "rename") -> str:
        (self.root / new).parent.mkdir(parents=True, exist_ok=True)
        git(self.root, "mv", old, new)
        return self._commit(message)

    def rm(self, path: str, message: str = "remove") -> str:
        git(self.root, "rm", "-q", path)
        return self._commit(message)

    def _commit(self, message: str) -> str:
        self._tick += 1
        date = f"2024-01-01T00:{self._tick // 60:02d}:{self._tick % 60:02d}+00:00"
        git(self.root, "commit", "-q", "--allow-empty", "-m", message, f"--date={date}")
        return git(self.root, "rev-parse", "HEAD").strip()


def body(path: str) -> str:
    """Distinct multi-line content so git's rename detection recognises moved files."""
    lines = [f"# {path}"] + [f"value_{i} = '{path}-{i}'" for i in range(12)]
    return "\n".join(lines) + "\n"


@pytest.fixture
def repo(tmp_path: Path) -> RepoBuilder:
    return RepoBuilder(tmp_path / "repo")
