"""Every settings section says what its change needs (docs/architecture.md, "Settings")."""

from __future__ import annotations

import attrs
import pytest

from engram.config import SECTION_RELOAD, EngramConfig, Reload, sections_of


def test_every_config_section_is_classified() -> None:
    # a new section without a class fails here: add it to config.SECTION_RELOAD
    assert set(SECTION_RELOAD) == {f.name for f in attrs.fields(EngramConfig)}


@pytest.mark.parametrize("section", ["embed", "store", "index", "observer"])
def test_sections_baked_in_at_open_need_a_new_engine(section: str) -> None:
    assert section in sections_of(Reload.ENGINE)


@pytest.mark.parametrize("section", ["retrieval", "safety", "contradictions", "llm"])
def test_sections_read_per_request_keep_the_engine(section: str) -> None:
    assert section in sections_of(Reload.REQUEST)
