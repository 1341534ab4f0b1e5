"""Git history: co-change rules (ROSE), rename following, commit linkage, co-access seed.

Importing this package is cheap: GitPython is imported when a ``GitHistory`` first opens
the repository.
"""

from __future__ import annotations

from engram.config import HistoryConfig
from engram.history.cochange_model import StepCancelled
from engram.history.git_history import (
    STATUS_EMPTY,
    STATUS_ERROR,
    STATUS_NO_GIT,
    STATUS_NOT_A_REPO,
    STATUS_OK,
    STATUS_SHALLOW,
    CommitInfo,
    GitCommandFailed,
    GitHistory,
    MineReport,
    TeamFileChange,
    TeamFolderFacts,
    partners_as_dict,
)
from engram.history.gitlog import CommitRecord, FileChange, parse_log
from engram.history.renames import apply_renames, fold_renames

__all__ = [
    "STATUS_EMPTY",
    "STATUS_ERROR",
    "STATUS_NOT_A_REPO",
    "STATUS_NO_GIT",
    "STATUS_OK",
    "STATUS_SHALLOW",
    "CommitInfo",
    "CommitRecord",
    "FileChange",
    "GitCommandFailed",
    "GitHistory",
    "HistoryConfig",
    "MineReport",
    "StepCancelled",
    "TeamFileChange",
    "TeamFolderFacts",
    "apply_renames",
    "fold_renames",
    "parse_log",
    "partners_as_dict",
]
