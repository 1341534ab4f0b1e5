"""The diagnostics a folder gives before its settings are read follow ``initialize``."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from engram.lsp.client import client_info
from engram.lsp.session import Session
from engram.model import MemoryType
from engram.workspace import Workspace

#: what OpenCode 1.18 sent (traced through a tee): no clientInfo, the agent's severities as
#: initializationOptions, workspace/configuration supported (answered late or never)
OPENCODE_OPTIONS = {
    "diagnostics": {"agentSeverity": {"gotcha": "error", "dead_end": "error", "decision": "hint"}}
}


def _session(root: Path, options: dict[str, object], name: str | None) -> Session:
    params = types.InitializeParams(
        capabilities=types.ClientCapabilities(
            workspace=types.WorkspaceClientCapabilities(configuration=True)
        ),
        root_uri=root.as_uri(),
        initialization_options=options,
        client_info=types.ClientInfo(name=name) if name else None,
    )
    session = Session(client=client_info(params))
    session.add_folder(root.as_uri())
    return session


def test_an_agent_folder_uses_the_agents_severities_before_its_settings_are_read(
    tmp_workspace: Workspace,
) -> None:
    """OpenCode opened the file before it answered workspace/configuration: the
    digest-first diagnostic went out as a Warning, which OpenCode does not forward."""
    (folder,) = _session(tmp_workspace.root, OPENCODE_OPTIONS, None).folders.values()
    severity = folder.policy.severity
    assert severity[MemoryType.GOTCHA] == types.DiagnosticSeverity.Error
    assert severity[MemoryType.DEAD_END] == types.DiagnosticSeverity.Error
    assert severity[MemoryType.DECISION] == types.DiagnosticSeverity.Hint
    assert severity[MemoryType.ERROR_PATTERN] == types.DiagnosticSeverity.Error  # agent default


def test_an_editor_folder_keeps_the_editors_severities_before_its_settings_are_read(
    tmp_workspace: Workspace,
) -> None:
    options = {"diagnostics": {"severity": {"decision": "hint"}}}
    (folder,) = _session(tmp_workspace.root, options, "Visual Studio Code").folders.values()
    severity = folder.policy.severity
    assert severity[MemoryType.GOTCHA] == types.DiagnosticSeverity.Warning
    assert severity[MemoryType.DECISION] == types.DiagnosticSeverity.Hint
