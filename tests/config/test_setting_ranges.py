"""Numeric settings are checked against what they mean where settings are loaded.

A new user's walk put ``max_content_chars = -5`` in a repository's ``.engram/config.toml``
and got a nonsense error far from its cause. A repository's bad value is dropped with one
line naming the file, the key and the allowed range (as its unreadable file or connection
setting is: docs/security.md); the user's own bad value is an error naming where it is.
"""

from __future__ import annotations

import logging
from pathlib import Path

import attrs
import pytest

from engram.config import (
    WORKSPACE_LIMITS,
    ConfigError,
    EngramConfig,
    config_from_dict,
    load_settings,
    workspace_limits,
    workspace_settings_trust,
)
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
        f"[safety]\nmax_content_chars = {value}\nduplicate_ratio = 95\n"
    )
    with caplog.at_level(logging.WARNING, logger="engram.config"):
        loaded = load_settings(tmp_workspace, environ={"XDG_CONFIG_HOME": str(tmp_path / "user")})
    assert loaded.config.safety.max_content_chars == 8000  # the default: commands still run
    assert loaded.config.safety.duplicate_ratio == 95.0  # the file's good value still applies
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


def test_every_numeric_setting_says_which_way_a_repository_widens_it() -> None:
    """A new number in the settings must be classified (``config.WORKSPACE_LIMITS``):
    stop 32 found ``safety.max_content_chars`` could be raised by any clone."""
    numeric = set()
    defaults = EngramConfig()
    for section in attrs.fields(EngramConfig):
        for field in attrs.fields(type(getattr(defaults, section.name))):
            named = getattr(field.type, "__name__", str(field.type))
            if named in ("int", "float", "int | None", "float | None"):
                numeric.add(f"{section.name}.{field.name}")
    assert numeric, "no numeric setting found: the test would prove nothing"
    assert numeric == set(WORKSPACE_LIMITS)


def _wide_and_narrow(direction: str, default: float) -> tuple[float, float]:
    """A value on each side of Engram's default, inside the setting's range."""
    step = 1 if isinstance(default, int) else default * 0.05
    if direction == "at_most":
        return default + step, max(0, default // 2 if isinstance(default, int) else default / 2)
    return (default // 2 if isinstance(default, int) else default / 2), default + step


@pytest.mark.parametrize("key", sorted(f"{s}.{k}" for s, k in workspace_limits()))
def test_a_repository_may_narrow_a_limit_but_not_widen_it(
    tmp_workspace: Workspace, tmp_path: Path, key: str
) -> None:
    section, _, name = key.partition(".")
    direction, default = workspace_limits()[(section, name)]
    assert default is not None
    wide, narrow = _wide_and_narrow(direction, default)
    settings = tmp_workspace.root / ".engram" / "config.toml"
    settings.parent.mkdir(exist_ok=True)
    environ = {"XDG_CONFIG_HOME": str(tmp_path / "user")}
    settings.write_text(f"[{section}]\n{name} = {wide!r}\n")
    loaded = load_settings(tmp_workspace, environ=environ)
    assert loaded.trust.state == "untrusted", (key, wide)
    assert getattr(getattr(loaded.config, section), name) == getattr(
        getattr(EngramConfig(), section), name
    )
    assert [s.key for s in loaded.trust.settings] == [key]
    settings.write_text(f"[{section}]\n{name} = {narrow!r}\n")
    loaded = load_settings(tmp_workspace, environ=environ)
    assert loaded.trust.state == "none", (key, narrow)
    assert getattr(getattr(loaded.config, section), name) == narrow


def test_a_repository_limit_is_measured_from_the_persons_own_setting(
    tmp_workspace: Workspace, tmp_path: Path
) -> None:
    """A person who lowered ``max_content_chars`` to 2,000 got a clone's 8,000 back without
    being asked, because the clone's value was measured from Engram's default (10,000); the
    stop 33 review. Measured from the person's own setting it waits for ``engram trust``,
    and a value under theirs still applies."""
    user = tmp_path / "user"
    (user / "engram").mkdir(parents=True)
    (user / "engram" / "config.toml").write_text("[safety]\nmaxContentChars = 2000\n")
    environ = {"XDG_CONFIG_HOME": str(user)}
    settings = tmp_workspace.root / ".engram" / "config.toml"
    settings.parent.mkdir(exist_ok=True)
    settings.write_text("[safety]\nmax_content_chars = 8000\n")
    loaded = load_settings(tmp_workspace, environ=environ)
    assert loaded.trust.state == "untrusted"
    assert [s.key for s in loaded.trust.settings] == ["safety.max_content_chars"]
    assert loaded.config.safety.max_content_chars == 2000
    assert workspace_settings_trust(tmp_workspace, environ=environ).state == "untrusted"
    settings.write_text("[safety]\nmax_content_chars = 1500\n")
    loaded = load_settings(tmp_workspace, environ=environ)
    assert loaded.trust.state == "none"
    assert loaded.config.safety.max_content_chars == 1500
