"""The memory model, the codec and workspace confinement."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest

from engram.config import ConfigError, config_from_dict, load_config
from engram.model import (
    CodeAnchor,
    Memory,
    MemoryType,
    SchemaError,
    memory_from_dict,
    memory_to_dict,
)
from engram.workspace import Workspace, WorkspaceError


def test_memory_round_trips_through_json_codec() -> None:
    memory = Memory(
        "Token refresh fails silently when Redis is unreachable",
        type=MemoryType.GOTCHA,
        anchors=[CodeAnchor("auth.py", "refresh", 3, 9, "abc")],
        extra={"steps": [{"order": 1, "description": "x"}]},
    )
    raw = memory_to_dict(memory)
    assert raw["type"] == "gotcha"
    assert isinstance(raw["created_at"], str)
    assert memory_from_dict(raw) == memory


def test_type_defaults_decay_and_citation() -> None:
    gotcha = Memory("x" * 100, type=MemoryType.GOTCHA)
    assert gotcha.decay_half_life_days == 60
    assert len(gotcha.citation_text) <= 40
    decision = Memory("use sessions", type=MemoryType.DECISION)
    assert decision.decay_half_life_days is None
    old = gotcha.last_accessed_at - timedelta(days=60)
    gotcha.last_accessed_at = old
    assert gotcha.current_confidence() == pytest.approx(gotcha.confidence / 2, rel=1e-3)
    gotcha.pinned = True
    assert gotcha.current_confidence() == gotcha.confidence


def test_v0_records_migrate_and_future_schema_is_refused() -> None:
    migrated = memory_from_dict({"content": "c", "type": "gotcha", "file": "a.py"})
    assert migrated.anchors[0].file == "a.py"
    with pytest.raises(SchemaError, match="newer"):
        memory_from_dict({"content": "c", "schema_version": 99})
    with pytest.raises(SchemaError, match="type"):
        memory_from_dict({"content": "c", "type": "nonsense", "schema_version": 1})


def test_confidence_out_of_range_is_refused() -> None:
    with pytest.raises(ValueError, match="confidence"):
        Memory("c", confidence=1.5)


def test_confidence_is_kept_to_four_places_however_it_is_reached() -> None:
    """walk31: a confirmed memory's team file and MCP JSON said 0.8500000000000001."""
    import json

    memory = Memory("c", confidence=0.8)
    memory.confidence += 0.05
    assert memory.confidence == 0.85
    assert Memory("c", confidence=0.1 + 0.2).confidence == 0.3
    assert '"confidence": 0.85,' in json.dumps(memory_to_dict(memory))


def test_workspace_confines_paths(tmp_workspace: Workspace, tmp_path: Path) -> None:
    (tmp_workspace.root / "a.py").write_text("x = 1\n")
    assert tmp_workspace.relative("a.py") == "a.py"
    with pytest.raises(WorkspaceError, match="outside"):
        tmp_workspace.resolve("../outside.txt")
    outside = tmp_path / "secret"
    outside.write_text("s")
    (tmp_workspace.root / "link").symlink_to(outside)
    with pytest.raises(WorkspaceError, match="outside"):
        tmp_workspace.resolve("link")


def test_engram_dir_carries_its_own_gitignore(tmp_workspace: Workspace) -> None:
    path = tmp_workspace.ensure_engram_dir()
    assert (path / ".gitignore").read_text().strip().endswith("*")


def test_config_merges_pyproject_engram_toml_and_overrides(tmp_workspace: Workspace) -> None:
    (tmp_workspace.root / "pyproject.toml").write_text(
        "[tool.engram.retrieval]\ndefault_k = 7\n[tool.engram.embed]\nmodel = 'a'\n"
    )
    tmp_workspace.ensure_engram_dir()
    (tmp_workspace.engram_dir / "config.toml").write_text(
        "[embed]\nmodel = 'b'\n[retrieval]\nmin_cosine = 0.3\n"
    )
    config = load_config(tmp_workspace, {"diagnostics": {"max_per_file": 3}})
    assert config.retrieval.default_k == 7
    assert config.retrieval.min_cosine == 0.3
    # a repository may not pick the model to load until the user trusts it (docs/security.md)
    assert config.embed.model == "default"
    assert config.diagnostics.max_per_file == 3
    with pytest.raises(ConfigError, match="default_k"):
        config_from_dict({"retrieval": {"default_k": "many"}})


def test_config_accepts_camel_case_env_and_warns_on_unknown(
    tmp_workspace: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    config = load_config(
        tmp_workspace,
        {"diagnostics": {"trustLevel": 3, "severity": {"dead_end": "error"}, "bogusKey": 1}},
        environ={"ENGRAM_EMBED__MODEL": "none", "ENGRAM_RETRIEVAL__DEFAULT_K": "4", "HOME": "/x"},
    )
    assert config.diagnostics.trust_level == 3
    assert config.diagnostics.severity == {"dead_end": "error"}
    assert config.embed.model == "none"
    assert config.retrieval.default_k == 4
    assert "engram.diagnostics.bogus_key" in caplog.text


def test_merge_settings_normalises_before_merging() -> None:
    from engram.config import merge_settings

    merged = merge_settings(
        {"diagnostics": {"trust_level": 2, "max_per_file": 5}},
        {"diagnostics": {"trustLevel": 4}},
    )
    assert merged == {"diagnostics": {"trust_level": 4, "max_per_file": 5}}


def test_records_share_one_converter(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A digest rebuild of 10,000 memories built a cattrs converter per record (190 of its
    200 s, docs/codegraph.md "At 50,000 files"): the codec now builds one per process."""
    import cattrs

    from engram.lifecycle.trust import mirror_rules
    from engram.store.digest import Digest

    memories = [
        Memory(f"note {i}", type=MemoryType.GOTCHA, anchors=[CodeAnchor(f"f{i % 7}.py")])
        for i in range(50)
    ]
    for memory in memories[:2]:  # whatever the process built before
        memory_from_dict(memory_to_dict(memory))
    built: list[object] = []
    original = cattrs.Converter.__init__

    def counting(self: cattrs.Converter, *args: object, **kwargs: object) -> None:
        built.append(self)
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(cattrs.Converter, "__init__", counting)
    digest = Digest(tmp_workspace, rules=mirror_rules())
    try:
        assert digest.rebuild(memories) == 50
        assert len(digest.records_for_file("f3.py")) == 7
    finally:
        digest.close()
    assert [memory_from_dict(memory_to_dict(m)) for m in memories] == memories
    assert built == []
