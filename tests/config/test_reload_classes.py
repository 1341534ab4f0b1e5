"""Every settings section says what its change needs (docs/architecture.md, "Settings")."""

from __future__ import annotations

import attrs
import pytest

from engram.config import SECTION_RELOAD, EngramConfig, Reload, sections_of


def test_every_config_section_is_classified() -> None:
    # a new section without a class fails here: add it to config.SECTION_RELOAD
    assert set(SECTION_RELOAD) == {f.name for f in attrs.fields(EngramConfig)}


def test_only_the_store_and_the_embedder_need_a_new_engine() -> None:
    # the store's location and the vectors' model are what an open engine cannot change;
    # everything else is read per request or run, or reconfigured in place
    # (tests/engine/test_reconfigure.py proves each)
    assert sections_of(Reload.ENGINE) == {"embed", "store"}


@pytest.mark.parametrize(
    "section",
    ["retrieval", "safety", "contradictions", "llm", "index", "history", "observer", "mcp"],
)
def test_sections_read_per_request_keep_the_engine(section: str) -> None:
    assert section in sections_of(Reload.REQUEST)
