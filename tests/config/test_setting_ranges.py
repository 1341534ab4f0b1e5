"""Numeric settings are checked against what they mean where settings are loaded.

A new user's walk put ``max_content_chars = -5`` in a repository's ``.engram/config.toml``
and got a nonsense error far from its cause. A repository's bad value is dropped with one
line naming the file, the key and the allowed range (as its unreadable file or connection
setting is: docs/security.md); the user's own bad value is an error naming where it is.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from engram.config import ConfigError, config_from_dict, load_settings
from engram.workspace import Workspace


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("-5", "must be an integer >= 1, not -5"),
        ("0", "must be an integer >= 1, not 0"),
        ("1.5", "must be an integer, not 1.5"),
        ('"lots"', "must be an integer, not 'lots'"),
    ],
)
def test_a_repositorys_bad_value_is_named_and_dropped(
    tmp_workspace: Workspace,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    value: str,
    why: str,
) -> None:
    (tmp_workspace.root / ".engram").mkdir(exist_ok=True)
    (tmp_workspace.root / ".engram" / "config.toml").write_text(
        f"[safety]\nmax_content_chars = {value}\nduplicate_ratio = 80\n"
    )
    with caplog.at_level(logging.WARNING, logger="engram.config"):
        loaded = load_settings(tmp_workspace, environ={"XDG_CONFIG_HOME": str(tmp_path / "user")})
    assert loaded.config.safety.max_content_chars == 8000  # the default: commands still run
    assert loaded.config.safety.duplicate_ratio == 80.0  # the file's good value still applies
    line = f"ignoring safety.max_content_chars in .engram/config.toml: {why}"
    assert line in loaded.trust.notes and line in caplog.text


def test_the_users_own_bad_value_is_one_line_naming_the_file(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    user = tmp_path / "user" / "engram"
    user.mkdir(parents=True)
    (user / "config.toml").write_text("[retrieval]\nmin_cosine = 3\n")
    with pytest.raises(ConfigError) as raised:
        load_settings(tmp_workspace, environ={"XDG_CONFIG_HOME": str(tmp_path / "user")})
    message = str(raised.value)
    assert message == (
        f"invalid setting retrieval.min_cosine in {user / 'config.toml'}: "
        "must be a number from -1.0 to 1.0, not 3.0"
    )
    with pytest.raises(ConfigError, match=r"ENGRAM_\* environment: must be an integer >= 0"):
        load_settings(
            tmp_workspace,
            environ={"XDG_CONFIG_HOME": str(tmp_path / "none"), "ENGRAM_INDEX__WORKERS": "-1"},
        )


def test_every_default_is_in_its_own_range() -> None:
    config_from_dict({})  # validators run on the defaults too: none may be out of range
    with pytest.raises(ConfigError, match=r"mcp\.call_timeout_seconds must be a number > 0\.0"):
        config_from_dict({"mcp": {"call_timeout_seconds": 0}})


def test_switches_stay_switches() -> None:
    """A whole-number check registered for ``int`` once took every ``bool`` setting too
    (``bool`` is a subclass): ``ENGRAM_INDEX__EMBED_IN_BACKGROUND=false`` was refused."""
    config = config_from_dict(
        {"index": {"embed_in_background": False}, "history": {"auto_mine": True}}
    )
    assert config.index.embed_in_background is False and config.history.auto_mine is True
