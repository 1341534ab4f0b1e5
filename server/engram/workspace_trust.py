"""Workspace trust: settings a repository carries that could run code or send data.

Settings written inside the workspace (``[tool.engram]`` in ``pyproject.toml``,
``.engram/config.toml``) arrive with ``git clone``: a stranger wrote them. Most are harmless
tuning (budgets, thresholds, excludes). A few are not, and those are *gated*:

* ``observer.plugins``: imports and runs Python code;
* the ``llm`` section: sends session notes to an HTTP endpoint;
* ``embed.model`` other than ``default``/``none``: loads a model file or downloads one;
* ``observer.session_gates``: which events validate an agent's session, and so which of its
  memories start active rather than in review (docs/trust.md): a clone that made
  ``session_end`` validate would promote a session's memories with no tests or commit.

A gated setting takes effect only after the user approved that exact content with
``engram trust`` (like direnv's ``allow`` or mise's ``trust``; MCP servers defined in the
workspace have the same rule through ``engram mcp trust``). The approval is a SHA-256 of the
gated settings *and of every plugin file they name*, stored in the user's config directory
(:mod:`engram.approvals`), so editing a plugin after approval asks again. One setting is never
taken from a workspace at all: ``llm.api_key_env`` (which environment variable holds the key)
would let a repository send any of the user's secrets to its endpoint; the key comes from
``$ENGRAM_LLM_API_KEY`` or from the user's own settings only.

User-level settings (the user's config file, environment variables, the editor's settings and
command-line overrides) are the user's own and always apply. docs/security.md has the model.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import attrs

from engram.approvals import WORKSPACE_SETTINGS, ApprovalStore
from engram.jsontypes import JsonObject
from engram.workspace import MAX_SETTINGS_FILE_BYTES, read_regular

#: the fixed environment variable an LLM key is read from (unless the user's own settings
#: name another); never named by a repository
LLM_KEY_ENV = "ENGRAM_LLM_API_KEY"

#: sections whose every key is gated
_GATED_SECTIONS = frozenset({"llm"})
#: (section, key) pairs that are gated, unless the value is one of the safe ones listed
_GATED_KEYS: dict[tuple[str, str], frozenset[str]] = {
    ("observer", "plugins"): frozenset(),
    ("observer", "session_gates"): frozenset(),
    ("embed", "model"): frozenset({"default", "none"}),
}
#: (section, key) pairs never taken from a workspace, trusted or not
_NEVER_FROM_WORKSPACE = frozenset({("llm", "api_key_env"), ("llm", "api_key"), ("team", "trusted")})

TrustState = Literal["none", "trusted", "untrusted", "changed"]


@attrs.frozen
class GatedSetting:
    """One setting from the workspace that needs the user's approval, and what it would do."""

    key: str  # dotted: "observer.plugins"
    value: object  # as the settings file has it (shown to the user, hashed)
    effect: str


@attrs.frozen
class SettingsTrust:
    """What the workspace's own settings ask for, and whether the user approved it.

    ``state``: ``none`` (nothing gated), ``trusted`` (approved, unchanged), ``untrusted``
    (never approved) or ``changed`` (approved once, different now).
    """

    state: TrustState
    settings: tuple[GatedSetting, ...] = ()
    content_hash: str = ""
    #: workspace keys dropped whatever the approval (``llm.api_key_env``)
    ignored: tuple[str, ...] = ()
    #: the files the settings were read from, workspace-relative
    sources: tuple[str, ...] = ()
    #: settings that were not taken, one line each (an unreadable file, a repository's
    #: ``store.uri``): said with the trust lines by ``config.held_back``
    notes: tuple[str, ...] = ()

    @property
    def applies(self) -> bool:
        """Whether the gated settings are in effect."""
        return self.state in ("none", "trusted")

    @property
    def needs_approval(self) -> bool:
        return self.state in ("untrusted", "changed")

    def summary(self) -> str:
        """One line for a terminal, an editor message or ``engram doctor``."""
        if self.state == "none":
            return "the workspace's settings ask for nothing that runs code or sends data"
        asks = "; ".join(f"{s.key}: {s.effect}" for s in self.settings)
        if self.state == "trusted":
            return f"approved ({self.content_hash[:12]}): {asks}"
        why = "changed since you approved it" if self.state == "changed" else "not approved"
        where = ", ".join(self.sources) or "the workspace"
        return (
            f"{where} asks to {asks} — {why}, so it is off; "
            "check it, then run `engram trust` in this workspace"
        )

    def to_dict(self) -> JsonObject:
        return {
            "state": self.state,
            "applies": self.applies,
            "hash": self.content_hash,
            "settings": [
                {"key": s.key, "value": s.value, "effect": s.effect} for s in self.settings
            ],
            "ignored": list(self.ignored),
            "sources": list(self.sources),
        }


#: ``(section, key) -> ("at_most" | "at_least", the person's value)`` (``config.workspace_limits``:
#: their own setting, else Engram's default)
Limits = Mapping[tuple[str, str], tuple[str, float | None]]


def widens(value: object, limit: tuple[str, float | None] | None) -> bool:
    """Whether a workspace's ``value`` is on the wide side of the person's own value (their
    setting, else Engram's default; ``config.workspace_limits``): more where
    the limit is ``at_most`` (longer memories, more commits, longer waits), less where it is
    ``at_least`` (a looser duplicate threshold). A default of ``None`` is unset, the widest
    there is, which any number narrows (``config.workspace_limits`` gives ``embed.threads``
    the CPU count instead); a value that is no number is the range check's (dropped)."""
    if limit is None or isinstance(value, bool) or not isinstance(value, int | float):
        return False
    direction, default = limit
    if default is None:
        return False  # "unset" is the widest: any number narrows it
    return value > default if direction == "at_most" else value < default


def split_workspace_settings(
    layer: Mapping[str, object], limits: Limits | None = None
) -> tuple[dict[str, object], dict[str, object], list[str]]:
    """``(safe, gated, ignored)`` of a workspace's normalised settings tree.

    ``safe`` applies at once; ``gated`` only after approval; ``ignored`` keys never apply.
    ``limits``: numeric settings a workspace may narrow but not widen without approval.
    """
    limits = limits or {}
    safe: dict[str, object] = {}
    gated: dict[str, object] = {}
    ignored: list[str] = []
    for section, body in layer.items():
        if not isinstance(body, Mapping):
            if section in _GATED_SECTIONS:
                gated[section] = body
            else:
                safe[section] = body
            continue
        for key, value in body.items():
            if (section, key) in _NEVER_FROM_WORKSPACE:
                ignored.append(f"{section}.{key}")
                continue
            allowed = _GATED_KEYS.get((section, key))
            is_gated = (
                section in _GATED_SECTIONS
                or (
                    allowed is not None
                    and not (isinstance(value, str) and value.strip().lower() in allowed)
                    and value not in (None, [], "", {})
                )
                or widens(value, limits.get((section, key)))
            )
            target = gated if is_gated else safe
            table = target.setdefault(section, {})
            assert isinstance(table, dict)  # only this loop sets a section to a value
            table[key] = value
    return safe, gated, ignored


def _plugin_file(spec: object, root: Path) -> Path | None:
    target = str(spec).rpartition(":")[0]
    if not target.endswith(".py"):
        return None
    path = Path(target)
    return path if path.is_absolute() else root / path


def _file_digest(path: Path) -> str:
    """The plugin file's SHA-256, computed on every command of a workspace that names one: a
    committed link ``tools/x.py -> /dev/zero`` read until memory ran out (stop 31)."""
    try:
        return hashlib.sha256(read_regular(path, MAX_SETTINGS_FILE_BYTES)).hexdigest()
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def content_hash(root: Path, gated: Mapping[str, object]) -> str:
    """SHA-256 of the gated settings and of the contents of every plugin file they name."""
    files: dict[str, str] = {}
    for spec in _as_list(_section(gated, "observer").get("plugins")):
        path = _plugin_file(spec, root)
        if path is not None:
            files[str(spec)] = _file_digest(path)
    blob = json.dumps(
        {"settings": gated, "files": files}, sort_keys=True, separators=(",", ":"), default=str
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def _section(settings: Mapping[str, object], name: str) -> Mapping[str, object]:
    body = settings.get(name)
    return body if isinstance(body, Mapping) else {}


def _as_list(value: object) -> list[object]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


def _effects(root: Path, gated: Mapping[str, object], limits: Limits) -> list[GatedSetting]:
    out: list[GatedSetting] = []
    for spec in _as_list(_section(gated, "observer").get("plugins")):
        path = _plugin_file(spec, root)
        if path is None:
            effect = f"import and run the Python module {str(spec).rpartition(':')[0]}"
        else:
            try:
                shown = path.resolve().relative_to(root).as_posix()
            except ValueError:
                shown = f"{path} (outside the workspace)"
            effect = f"run the Python code in {shown}"
        out.append(GatedSetting("observer.plugins", spec, effect))
    gates = _section(gated, "observer").get("session_gates")
    if isinstance(gates, Mapping):
        for name, row in gates.items():
            effect = f"change how a {name!s} session's memories are validated and promoted"
            out.append(GatedSetting(f"observer.session_gates.{name}", row, effect))
    llm = gated.get("llm", {})
    if isinstance(llm, Mapping):
        for key, value in llm.items():
            if key == "base_url":
                effect = f"send session notes to {value}"
            else:
                effect = f"set the LLM endpoint's {key} to {value!r}"
            out.append(GatedSetting(f"llm.{key}", value, effect))
    elif llm:
        out.append(GatedSetting("llm", llm, "configure an LLM endpoint"))
    for section, body in gated.items():
        if not isinstance(body, Mapping) or section in _GATED_SECTIONS:
            continue
        for key, value in body.items():
            limit = limits.get((section, key))
            if limit is not None and widens(value, limit):
                more, less = ("raise", "lower") if limit[0] == "at_most" else ("lower", "raise")
                effect = (
                    f"{more} it to {value} (yours: {limit[1]}; a repository may "
                    f"{less} it without asking)"
                )
                out.append(GatedSetting(f"{section}.{key}", value, effect))
    model = _section(gated, "embed").get("model")
    if model is not None:
        out.append(
            GatedSetting(
                "embed.model",
                model,
                f"load the embedding model {model!r} (a model directory, or a download)",
            )
        )
    return out


def assess(
    root: Path,
    gated: Mapping[str, object],
    ignored: list[str],
    sources: list[str],
    approvals: ApprovalStore,
    limits: Limits | None = None,
) -> SettingsTrust:
    """Whether the user approved exactly these gated settings for this workspace."""
    if not gated:
        return SettingsTrust("none", ignored=tuple(ignored), sources=tuple(sources))
    digest = content_hash(root, gated)
    entry = approvals.entry(WORKSPACE_SETTINGS, root, "settings")
    if entry is None:
        state: TrustState = "untrusted"
    elif entry.get("hash") == digest:
        state = "trusted"
    else:
        state = "changed"
    return SettingsTrust(
        state, tuple(_effects(root, gated, limits or {})), digest, tuple(ignored), tuple(sources)
    )


def approve(root: Path, trust: SettingsTrust, approvals: ApprovalStore) -> None:
    """Record the user's approval of exactly what ``trust`` showed them."""
    entry = {
        "hash": trust.content_hash,
        "settings": [{"key": s.key, "value": s.value} for s in trust.settings],
        "sources": list(trust.sources),
    }
    approvals.record(
        WORKSPACE_SETTINGS, root, "settings", json.loads(json.dumps(entry, default=str))
    )


def revoke(root: Path, approvals: ApprovalStore) -> bool:
    """Withdraw the approval of this workspace's settings; ``False`` if there was none."""
    return approvals.remove(WORKSPACE_SETTINGS, root, "settings")


__all__ = [
    "LLM_KEY_ENV",
    "GatedSetting",
    "SettingsTrust",
    "approve",
    "assess",
    "content_hash",
    "revoke",
    "split_workspace_settings",
    "widens",
]
