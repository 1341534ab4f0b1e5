"""The real-VS Code driver's own checks (no code-server needed)."""

from __future__ import annotations

from pathlib import Path

from tests.clients.vscode_driver import read_settings


def test_a_settings_file_vs_code_is_rewriting_reads_as_empty(tmp_path: Path) -> None:
    """VS Code truncates settings.json, then writes it: a wait polling the file read it
    empty and failed with JSONDecodeError instead of polling again (the CI loop, ced9820)."""
    path = tmp_path / "settings.json"
    path.write_text("")
    assert read_settings(path) == {}
    path.write_text('{"engram.serverPath": "/x/engram"}\n')
    assert read_settings(path) == {"engram.serverPath": "/x/engram"}
