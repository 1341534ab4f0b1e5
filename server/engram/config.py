"""One typed configuration, merged from every place a user may set it.

Precedence, lowest first: built-in defaults, the user's own ``config.toml`` in
``$XDG_CONFIG_HOME/engram`` (default ``~/.config/engram``), ``[tool.engram]`` in
``pyproject.toml``, ``.engram/config.toml``, environment variables ``ENGRAM_<SECTION>__<KEY>``
(for example ``ENGRAM_EMBED__MODEL=none``; values are parsed as TOML when they parse, else
taken as strings), then overrides from the editor (LSP ``initializationOptions`` and
``workspace/configuration`` section ``engram``) or the command line. Keys may be written in
snake_case, kebab-case or camelCase (VS Code settings are camelCase). Each capability owns
one section class here; unknown keys are reported as warnings, never fatal, so an editor
with a newer settings schema does not break an older server.

The two workspace files come with the repository, so the settings in them that could run
code or send data apply only once the user approved them (:mod:`engram.workspace_trust`,
``engram trust``); :func:`load_settings` says which were held back.

Long on purpose: every section's class sits here with its fields, defaults and ranges (the
attrs validators each numeric setting carries), so that the one place a user's, a
repository's or the environment's value is checked is also the one list of what may be set;
split per capability, each section would import the range helpers and the loader would
gather them back.
"""

from __future__ import annotations

import enum
import logging
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Literal, Protocol, TypeAlias, TypeVar

import attrs
import cattrs

from engram.approvals import ApprovalStore, user_config_dir
from engram.errors import ConfigError as ConfigError  # re-exported: callers name it here
from engram.errors import EngramError
from engram.jsontypes import parse_toml
from engram.workspace import MAX_SETTINGS_FILE_BYTES, Workspace, WorkspaceError, read_regular
from engram.workspace_trust import SettingsTrust, assess, split_workspace_settings

log = logging.getLogger(__name__)

#: A tree of settings as read (TOML, editor JSON, environment): keys are normalised and
#: values checked only when :func:`config_from_dict` structures it into an EngramConfig.
Settings: TypeAlias = dict[str, object]


class SettingRangeError(ValueError):
    """A numeric setting outside what it means (``safety.max_content_chars = -5``)."""


_Value = TypeVar("_Value")


class _Validator(Protocol):
    """An attrs validator for a field of any numeric type (attrs' stub is generic per field)."""

    def __call__(
        self, instance: object, attribute: attrs.Attribute[_Value], value: _Value, /
    ) -> None: ...


def _number_check(
    allowed: str, ok: Callable[[float], bool], *, integer: bool, optional: bool
) -> _Validator:
    """An attrs validator whose error names the allowed range, so the one line a person
    reads says what to write instead (a negative ``max_content_chars`` gave a nonsense
    error far from its cause)."""
    kind = "an integer" if integer else "a number"
    wanted = f"{kind} {allowed}" + (" (or unset)" if optional else "")

    def check(_instance: object, attribute: attrs.Attribute[_Value], value: _Value) -> None:
        if value is None and optional:
            return
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not ok(value):
            raise SettingRangeError(f"{attribute.name}: must be {wanted}, not {value!r}")

    return check


def at_least(low: float, *, optional: bool = False) -> _Validator:
    return _number_check(
        f">= {low}", lambda v: v >= low, integer=isinstance(low, int), optional=optional
    )


def above(low: float, *, optional: bool = False) -> _Validator:
    return _number_check(f"> {low}", lambda v: v > low, integer=False, optional=optional)


def between(low: float, high: float) -> _Validator:
    return _number_check(
        f"from {low} to {high}",
        lambda v: low <= v <= high,
        integer=isinstance(low, int),
        optional=False,
    )


@attrs.define
class EmbedConfig:
    #: ``"default"`` = the bundled all-MiniLM-L6-v2 int8 ONNX installed by pip; any fastembed
    #: model name; or a path to a local model directory. ``"none"`` disables dense search.
    model: str = "default"
    batch_size: int = attrs.field(default=32, validator=at_least(1))
    #: ONNX intra-op threads of the batch session (indexing); ``None`` = every core.
    threads: int | None = attrs.field(default=None, validator=at_least(1, optional=True))
    #: Threads of a second ONNX session that embeds one text at a time (a search's query,
    #: a single memory): one spinning thread per core cost a single short query more than it
    #: gained on a shared 2-core machine (docs/retrieval.md, issue 17). ``0`` = no second
    #: session; single texts share the batch session.
    query_threads: int = attrs.field(default=1, validator=at_least(0))


#: Why there are no vectors when ``embed.model = "none"``: said plainly where a person reads
#: it (``engram index``, ``engram doctor``) with where to change it, because "no embedding
#: model ()" left a new user guessing whether something broke.
KEYWORD_ONLY_REASON = (
    'code and memory search is keyword-only because embed.model is "none" (set [embed] '
    'model = "default" in ~/.config/engram/config.toml or the repository\'s '
    ".engram/config.toml, or ENGRAM_EMBED__MODEL)"
)


@attrs.define
class RetrievalConfig:
    default_k: int = attrs.field(default=10, validator=at_least(1))
    rrf_k: int = attrs.field(default=60, validator=at_least(1))
    candidates: int = attrs.field(default=50, validator=at_least(1))
    default_budget_tokens: int = attrs.field(default=2000, validator=at_least(1))
    #: A memory matches a query when a keyword hits or its cosine reaches this floor; a
    #: search with no match says so (empty). Calibrated for the default model by
    #: cross-validation over LoCoMo conversations (docs/retrieval.md); other models may
    #: need their own value.
    min_cosine: float = attrs.field(default=0.2, validator=between(-1.0, 1.0))
    #: Re-order the finalised top 30 with the shipped learned re-ranker (docs/retrieval.md
    #: "Learned re-ranking of the top 30"). Its weights were fitted on conversations; false
    #: keeps the pipeline's own order.
    rerank: bool = True


@attrs.define
class SafetyConfig:
    max_content_chars: int = attrs.field(default=8000, validator=at_least(1))
    duplicate_ratio: float = attrs.field(
        default=90.0, validator=between(0.0, 100.0)
    )  # rapidfuzz token_set_ratio, 0..100
    duplicate_cosine: float = attrs.field(default=0.92, validator=between(-1.0, 1.0))


@attrs.define
class DiagnosticsConfig:
    max_per_file: int = attrs.field(default=20, validator=at_least(0))
    #: trust level 1..4 (docs/observer.md): minimum confidence 0.80 / 0.65 / 0.55 / 0.45
    trust_level: int = attrs.field(default=2, validator=between(1, 4))
    #: memory type -> "error" | "warning" | "information" | "hint"
    severity: dict[str, str] = attrs.field(factory=dict)
    #: memory type -> severity, for agent-facing LSP configs (OpenCode only forwards errors)
    agent_severity: dict[str, str] = attrs.field(factory=dict)
    debounce_ms: int = attrs.field(default=300, validator=at_least(0))
    #: "auto" (pull when the client can pull and be told to refresh, else push), "push",
    #: "pull" or "both"; one of the two avoids duplicate diagnostics in VS Code and Neovim
    mode: str = "auto"
    #: "auto" (by the client's name / agentSeverity in initializationOptions), "editor"
    #: or "agent": which severity map (severity / agent_severity) applies
    client_kind: str = "auto"


@attrs.define
class IndexConfig:
    max_file_bytes: int = attrs.field(default=1_000_000, validator=at_least(1))
    #: processes a large index run parses in (docs/codegraph.md, "A cold index on several
    #: cores"): unset, one per CPU up to 8; 0, in the indexing process. Clamped to the
    #: CPUs this process may use whatever a repository's settings say (docs/security.md)
    workers: int | None = attrs.field(default=None, validator=at_least(0, optional=True))
    #: the workers start only when a run has at least this many files to parse (a cold
    #: index, a large change): starting one costs ~0.5 s of CPU
    workers_min_files: int = attrs.field(default=1000, validator=at_least(0))
    exclude: list[str] = attrs.field(factory=list)
    index_on_start: bool = True
    #: the language server indexes keyword-only and leaves embeddings (code chunks,
    #: memories) and git history mining to a child ``engram index`` process, so their
    #: memory (hundreds of MB while embedding) is freed when it is done instead of staying
    #: in the editor's server; off: all in the server process, code chunks keyword-only
    embed_in_background: bool = True
    #: seconds after start-up before that child starts: the first opens and hovers of a
    #: session get the CPU to themselves
    background_delay_seconds: float = attrs.field(default=10.0, validator=at_least(0.0))


@attrs.define
class HistoryConfig:
    """``[history]``: limits of git history mining and co-change ranking (docs/history.md)."""

    #: commits touching more files are left out of co-change (ROSE: they relate everything)
    max_files_per_commit: int = attrs.field(default=30, validator=at_least(1))
    #: mine at most this many most recent non-merge commits (bounded time on huge repos)
    max_commits: int = attrs.field(default=20_000, validator=at_least(0))
    #: mine on the first query when nothing was mined yet (so `engram impact` works cold)
    auto_mine: bool = True
    #: co-change recency: a commit this many commits older counts half (None or 0: plain ROSE).
    #: 2000 won on all four evaluated repositories at 60% and 80% splits; 500 was better at
    #: 80% but worse at 60%, so the mild setting is the default.
    recency_half_life: float | None = attrs.field(
        default=2000.0, validator=at_least(0.0, optional=True)
    )
    #: rank co-change partners with weights learned from this repository's own history
    #: (engram.history.cochange_model); off: the m-estimate of rank_with_prior
    learn_ranking: bool = True
    #: wall-clock bound for one `git log -L` / `git log --follow` call
    git_timeout_s: float = attrs.field(default=5.0, validator=above(0.0))
    #: co-access seed: pairs seen together in at least this many commits
    coaccess_min_support: int = attrs.field(default=2, validator=at_least(1))
    coaccess_limit: int = attrs.field(default=5_000, validator=at_least(0))


@attrs.define
class ObserverConfig:
    enabled: bool = True
    session_type: str = "interactive"
    methodology: str = "native"
    #: per session type overrides of the promotion gate table (engram.observer.sessions),
    #: e.g. {"interactive": {"max_memories": 5, "triggers": ["commit"]}}
    session_gates: dict[str, dict[str, object]] = attrs.field(factory=dict)
    #: extra methodology plugins: "module:Class" or "path/to/file.py:Class"
    plugins: list[str] = attrs.field(factory=list)
    coaccess_half_life_days: float = attrs.field(default=30.0, validator=above(0.0))
    #: let a configured [llm] endpoint reword promoted memories (templates otherwise)
    llm_rewrite: bool = True
    #: per-event signal budget; slower events are logged, never refused (docs/observer.md)
    event_budget_ms: float = attrs.field(default=2.0, validator=above(0.0))
    #: unfinished sessions idle this long are finalised (as abandoned) at the next start
    idle_finalize_hours: float = attrs.field(default=12.0, validator=above(0.0))


@attrs.define
class McpConfig:
    max_connections: int = attrs.field(default=10, validator=at_least(1))
    idle_ttl_seconds: float = attrs.field(default=900.0, validator=above(0.0))
    connect_timeout_seconds: float = attrs.field(default=20.0, validator=above(0.0))
    call_timeout_seconds: float = attrs.field(default=60.0, validator=above(0.0))
    search_limit: int = attrs.field(default=15, validator=at_least(1))


@attrs.define
class LlmConfig:
    """Optional OpenAI-compatible endpoint (e.g. a local Ollama); never required."""

    base_url: str | None = None
    model: str | None = None
    #: which environment variable holds the key (default ``ENGRAM_LLM_API_KEY``); taken from
    #: the user's own settings only, never from a workspace (docs/security.md)
    api_key_env: str | None = None


@attrs.define
class ContradictionsConfig:
    """How contradictions are judged (docs/lifecycle.md): the rules always; the local NLI
    model when ``engram[nli]`` is installed and ``nli`` is on; ``config.llm`` when set."""

    nli: bool = True


@attrs.define
class TeamConfig:
    """Team sharing through the repository (``engram share`` / ``engram sync``)."""

    #: workspace-relative folder of shared memories, committed with the code
    dir: str = ".engram-team"
    #: read the folder into the local store on ``engram index`` and when it changes
    auto_sync: bool = True

    @property
    def folder(self) -> str:
        """``dir`` as a workspace-relative POSIX path, no slashes around (the default if empty)."""
        return self.dir.strip().strip("/") or ".engram-team"


@attrs.define
class StoreConfig:
    """Where memories and code chunks live (docs/team.md, "A shared store").

    Credentials are never settings: LanceDB reads them from the standard AWS chain
    (environment, ``~/.aws``, instance roles). A remote ``uri`` and the connection settings
    are only taken from the user's environment or editor, never from a repository's files
    (see :func:`load_config`): opening a cloned repository must not open a connection.
    """

    #: "" = ``<workspace>/.engram``; ``s3://bucket/prefix`` = a store shared by a team or an
    #: agent fleet
    uri: str = ""
    #: an S3-compatible endpoint (MinIO, a test server); default: AWS_ENDPOINT_URL or AWS
    endpoint: str | None = None
    region: str | None = None
    allow_http: bool = False
    #: a shared store is asked for other machines' writes at most this often (seconds)
    refresh_seconds: float = attrs.field(default=1.0, validator=at_least(0.0))
    #: a write that loses a commit race to another machine is retried this many times
    commit_retries: int = attrs.field(default=8, validator=at_least(0))
    #: a writer waiting for the store's write lock gives up after this long without
    #: progress from the process holding it (docs/storage.md "Writes: lock, freshness,
    #: compaction")
    lock_timeout_seconds: float = attrs.field(default=15.0, validator=above(0.0))


@attrs.define
class EngramConfig:
    embed: EmbedConfig = attrs.field(factory=EmbedConfig)
    retrieval: RetrievalConfig = attrs.field(factory=RetrievalConfig)
    safety: SafetyConfig = attrs.field(factory=SafetyConfig)
    diagnostics: DiagnosticsConfig = attrs.field(factory=DiagnosticsConfig)
    index: IndexConfig = attrs.field(factory=IndexConfig)
    history: HistoryConfig = attrs.field(factory=HistoryConfig)
    observer: ObserverConfig = attrs.field(factory=ObserverConfig)
    mcp: McpConfig = attrs.field(factory=McpConfig)
    llm: LlmConfig = attrs.field(factory=LlmConfig)
    contradictions: ContradictionsConfig = attrs.field(factory=ContradictionsConfig)
    team: TeamConfig = attrs.field(factory=TeamConfig)
    store: StoreConfig = attrs.field(factory=StoreConfig)


class Reload(enum.Enum):
    """What a change of one settings section needs (docs/architecture.md, "Settings")."""

    #: baked into a component when the engine opens it (the store's location, the
    #: embedding model and the width of the vectors it wrote): a new engine
    ENGINE = "engine"
    #: read per request or per run, or by a component the engine reconfigures or drops
    #: and rebuilds (``Engine.reconfigure``): the open engine takes it in place
    REQUEST = "request"


#: Every section of :class:`EngramConfig` and what its change needs. A section missing
#: here fails ``tests/config/test_reload_classes.py``: classify it when you add it.
SECTION_RELOAD: dict[str, Reload] = {
    "embed": Reload.ENGINE,  # the embedder and the store's vector width
    "store": Reload.ENGINE,  # where the store is (uri, endpoint, locks)
    "index": Reload.REQUEST,  # CodeGraph.reconfigure: read per index run (after a running one)
    "history": Reload.REQUEST,  # GitHistory.reconfigure: read per mining run and query
    "observer": Reload.REQUEST,  # Observer.reconfigure: gates, plugins, stats; sessions kept
    "mcp": Reload.REQUEST,  # not the engine's: a front end closes and rebuilds its MCP hub
    "retrieval": Reload.REQUEST,  # Retriever: dropped and rebuilt on change
    "contradictions": Reload.REQUEST,  # the judges: dropped and rebuilt on change
    "llm": Reload.REQUEST,  # the judges and the observer's LLM client: rebuilt on change
    "safety": Reload.REQUEST,  # read by each remember/consolidate
    "team": Reload.REQUEST,  # read by each sync and team command
    "diagnostics": Reload.REQUEST,  # read only by the language server's views
}


class SectionReloadError(EngramError):
    """A settings change an open engine cannot take: it needs a new engine."""

    def __init__(self, sections: list[str]) -> None:
        super().__init__(f"settings {', '.join(sections)} need a new engine (reopen it)")
        self.sections = sections


def changed_sections(old: EngramConfig, new: EngramConfig) -> frozenset[str]:
    """The top-level sections whose values differ between two configs."""
    return frozenset(
        f.name for f in attrs.fields(EngramConfig) if getattr(old, f.name) != getattr(new, f.name)
    )


def sections_of(kind: Reload) -> frozenset[str]:
    """The sections whose change needs ``kind``."""
    return frozenset(name for name, reload in SECTION_RELOAD.items() if reload is kind)


def _deep_merge(base: Settings, override: Settings) -> Settings:
    merged = dict(base)
    for key, value in override.items():
        current = merged.get(key)
        if isinstance(value, dict) and isinstance(current, dict):
            merged[key] = _deep_merge(current, value)
        else:
            merged[key] = value
    return merged


def merge_settings(*layers: Settings) -> Settings:
    """Settings layers merged, later over earlier, after normalising every key.

    Normalising first matters: an editor's ``trustLevel`` must override an
    initialisation option's ``trust_level``, not sit beside it.
    """
    merged: Settings = {}
    for layer in layers:
        merged = _deep_merge(merged, _normalise_tree(layer))
    return merged


def _warn(notes: list[str] | None, line: str) -> None:
    """A settings problem: kept in ``notes`` when the caller collects them (``load_settings``
    says them once, in-process and through the engine), else logged here."""
    if notes is None:
        log.warning("%s", line)
    else:
        notes.append(line)


def _read_toml(path: Path, notes: list[str] | None = None) -> Settings:
    try:
        # a repository's file: bytes that are not UTF-8, or nesting too deep for the parser,
        # stopped every command in the workspace with an internal error (stop 30); a FIFO
        # blocked every one, a link to /dev/zero (confined) read until memory ran out
        return parse_toml(read_regular(path, MAX_SETTINGS_FILE_BYTES).decode("utf-8"))
    except FileNotFoundError:
        return {}
    except UnicodeDecodeError as exc:
        _warn(notes, f"ignoring {path}: not UTF-8 text (byte {exc.start})")
        return {}
    except (tomllib.TOMLDecodeError, OSError) as exc:
        _warn(notes, f"ignoring {path}: {exc}")
        return {}


def _read_workspace_toml(workspace: Workspace, rel: str, notes: list[str] | None) -> Settings:
    """A settings file of the workspace, confined (a link pointing outside is not read)."""
    try:
        path = workspace.resolve(rel)
    except WorkspaceError as exc:
        _warn(notes, f"ignoring {rel}: {exc}")
        return {}
    return _read_toml(path, notes)


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=False)
    # ``object``: a free-form value its reader checks (``observer.session_gates`` rows are
    # structured by ``engram.observer.sessions.gate_table``)
    conv.register_structure_hook_func(lambda t: t is object, lambda v, _t: v)
    conv.register_structure_hook(int, _strict_int)
    conv.register_structure_hook(float, _strict_float)
    # the int hook would take ``bool`` fields too (a subclass): switches keep cattrs' own way
    conv.register_structure_hook(bool, lambda v, _t: bool(v))
    return conv


def _strict_int(value: object, _type: type) -> int:
    """``int(v)`` silently made ``1.5`` into 1 and ``true`` into 1: a whole number only."""
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise SettingRangeError(f"must be an integer, not {value!r}")
    try:
        return int(value)  # type: ignore[call-overload,no-any-return]
    except (TypeError, ValueError):
        raise SettingRangeError(f"must be an integer, not {value!r}") from None


def _strict_float(value: object, _type: type) -> float:
    if isinstance(value, bool):
        raise SettingRangeError(f"must be a number, not {value!r}")
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise SettingRangeError(f"must be a number, not {value!r}") from None


_ERROR_AT = re.compile(r"^(?:(\w+): )?(.*) @ \$\.?(.*)$")


def _format_error(exc: BaseException, type_: type | None) -> str:
    if isinstance(exc, SettingRangeError):
        return str(exc)
    return cattrs.v.format_exception(exc, type_)


def _error_lines(exc: cattrs.BaseValidationError) -> list[str]:
    """cattrs' ``"max_content_chars: must be … @ $.safety"`` as ``"safety.max_content_chars
    must be …"``: the key as the person writes it in the file."""
    lines = []
    for line in cattrs.transform_error(exc, format_exception=_format_error):
        match = _ERROR_AT.match(line)
        if match is None:
            lines.append(line)
            continue
        name, text, path = match.groups()
        key = ".".join(part for part in (path, name) if part)
        lines.append(f"{key} {text}" if key else text)
    return lines


_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


def _normalise_key(key: str) -> str:
    return _CAMEL.sub(r"_\1", key).replace("-", "_").lower()


def env_overrides(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from ``ENGRAM_<SECTION>__<KEY>`` variables (double underscore between levels)."""
    environ = os.environ if environ is None else environ
    result: Settings = {}
    for name, text in environ.items():
        if not name.startswith("ENGRAM_") or "__" not in name:
            continue
        path = [part.lower() for part in name[len("ENGRAM_") :].split("__") if part]
        if len(path) < 2:
            continue
        try:
            value: object = tomllib.loads(f"v = {text}")["v"]
        except tomllib.TOMLDecodeError:
            value = text
        node = result
        for part in path[:-1]:
            child = node.setdefault(part, {})
            if not isinstance(child, dict):  # ENGRAM_A__B=1 and ENGRAM_A__B__C=2: the table wins
                child = node[part] = {}
            node = child
        node[path[-1]] = value
    return result


def _drop_unknown(raw: Settings, cls: type, prefix: str = "") -> Settings:
    known = {a.name: a for a in attrs.fields(attrs.resolve_types(cls))}
    clean: Settings = {}
    for key, value in raw.items():
        name = _normalise_key(key)
        if name not in known:
            log.warning("unknown setting engram.%s%s ignored", prefix, key)
            continue
        field_type = known[name].type
        if isinstance(value, dict) and attrs.has(field_type):  # type: ignore[arg-type]
            clean[name] = _drop_unknown(value, field_type, f"{prefix}{key}.")  # type: ignore[arg-type]
        else:
            clean[name] = value
    return clean


def config_from_dict(raw: Settings) -> EngramConfig:
    """Structure a merged settings dict; a wrong type raises :class:`ConfigError`."""
    try:
        return _converter().structure(_drop_unknown(raw, EngramConfig), EngramConfig)
    except cattrs.BaseValidationError as exc:
        raise ConfigError("invalid setting: " + "; ".join(_error_lines(exc))) from exc


def invalid_settings(layer: Settings) -> list[tuple[str, str]]:
    """``(key, why)`` for each setting of one layer that is out of its range or of the wrong
    type, checked one by one so a bad value is named (and dropped) alone."""
    bad: list[tuple[str, str]] = []
    for section, value in _normalise_tree(layer).items():
        rows = value.items() if isinstance(value, dict) else [(None, value)]
        for key, item in rows:
            single: Settings = {section: item} if key is None else {section: {key: item}}
            try:
                config_from_dict(single)
            except ConfigError as exc:
                name = section if key is None else f"{section}.{key}"
                why = str(exc).removeprefix("invalid setting: ").removeprefix(name).strip()
                bad.append((name, why))
    return bad


def _without_invalid(layer: Settings, where: str, notes: list[str] | None) -> Settings:
    """A repository's settings minus each value out of range or of the wrong type, each said
    on one line: a cloned repository's bad value must not stop the user's commands (as an
    unreadable file or a connection setting does not, docs/security.md)."""
    bad = invalid_settings(layer)
    if not bad:
        return layer
    layer = _normalise_tree(layer)
    for name, why in bad:
        _warn(notes, f"ignoring {name} in {where}: {why}")
        section, _, key = name.partition(".")
        value = layer.get(section)
        if key and isinstance(value, dict):
            layer = {**layer, section: {k: v for k, v in value.items() if k != key}}
        else:
            layer = {k: v for k, v in layer.items() if k != section}
    return layer


def _check_own(layer: Settings, where: str) -> None:
    """The user's own settings (their config file, the environment): a bad value is an
    error naming where it is, since nobody else can fix it."""
    bad = invalid_settings(layer)
    if bad:
        name, why = bad[0]
        raise ConfigError(f"invalid setting {name} in {where}: {why}")


#: ``[store]`` keys that open a network connection: a repository's files may not set them
_CONNECTION_KEYS = ("uri", "endpoint", "allow_http", "region")


def _without_connections(layer: Settings, where: str, notes: list[str] | None) -> Settings:
    """A repository's settings minus anything that would make Engram connect somewhere.

    A cloned repository is untrusted input: a ``store.uri`` of ``s3://…`` (or an endpoint)
    in its ``pyproject.toml`` or ``.engram/config.toml`` would send this machine's memories
    (and its AWS credentials' requests) wherever the repository says. Until workspace trust
    covers them, a shared store is configured by the user only: ``ENGRAM_STORE__URI`` or
    the editor's settings (docs/team.md).
    """
    layer = _normalise_tree(layer)
    store = layer.get("store")
    if not isinstance(store, dict):
        return layer
    found = [k for k in _CONNECTION_KEYS if k in store and (k != "uri" or store[k])]
    if not found:
        return layer
    _warn(
        notes,
        f"ignoring store.{'/'.join(found)} in {where}: a shared store is set by you "
        "(ENGRAM_STORE__URI or editor settings), not by a repository (docs/team.md)",
    )
    return {**layer, "store": {k: v for k, v in store.items() if k not in _CONNECTION_KEYS}}


#: How a repository's value of each numeric setting can widen what Engram does, read or
#: waits for: ``"at_most"`` (more is wider: longer memories, bigger batches, more commits,
#: longer waits), ``"at_least"`` (less is wider: a looser duplicate threshold merges a
#: person's new memory into another, a lower cosine floor shows more) or ``None`` (a shape
#: of a ranking curve or a delay, neither way a limit). A workspace's value on the wide side
#: of Engram's default is gated like a plugin (``engram trust``): a clone may narrow a
#: limit, never widen it (stop 32: ``safety.max_content_chars = 10000000`` from a clone let
#: an agent's memories be that long). ``index.workers`` is clamped instead
#: (``codegraph.workers``). ``tests/config/test_setting_ranges.py`` checks every numeric
#: setting is named here.
WORKSPACE_LIMITS: dict[str, Literal["at_most", "at_least"] | None] = {
    "embed.batch_size": "at_most",  # texts per ONNX run: memory grows with it
    "embed.threads": "at_most",
    "embed.query_threads": "at_most",
    "retrieval.default_k": "at_most",
    "retrieval.rrf_k": None,  # the fusion curve's constant
    "retrieval.candidates": "at_most",
    "retrieval.default_budget_tokens": "at_most",  # how much text reaches an agent's pack
    "retrieval.min_cosine": "at_least",
    "safety.max_content_chars": "at_most",
    "safety.duplicate_ratio": "at_least",
    "safety.duplicate_cosine": "at_least",
    "diagnostics.max_per_file": "at_most",
    "diagnostics.trust_level": "at_most",  # a higher level shows less confident memories
    "diagnostics.debounce_ms": "at_least",
    "index.max_file_bytes": "at_most",
    "index.workers": None,  # clamped to this process's CPUs (codegraph.workers)
    "index.workers_min_files": None,  # when the (clamped) parse workers start: no limit
    "index.background_delay_seconds": None,  # when the background job starts
    "history.max_files_per_commit": "at_most",  # pairs grow with its square
    "history.max_commits": "at_most",
    "history.recency_half_life": None,  # the co-change decay curve
    "history.git_timeout_s": "at_most",
    "history.coaccess_min_support": "at_least",
    "history.coaccess_limit": "at_most",
    "observer.coaccess_half_life_days": None,  # a decay curve
    "observer.event_budget_ms": None,  # slower events are logged, never refused
    "observer.idle_finalize_hours": None,  # when an abandoned session is closed
    "mcp.max_connections": "at_most",
    "mcp.idle_ttl_seconds": "at_most",
    "mcp.connect_timeout_seconds": "at_most",
    "mcp.call_timeout_seconds": "at_most",
    "mcp.search_limit": "at_most",
    "store.refresh_seconds": "at_least",
    "store.commit_retries": "at_most",
    "store.lock_timeout_seconds": "at_most",
}


def workspace_limits(
    own: EngramConfig | None = None,
) -> dict[tuple[str, str], tuple[str, float | None]]:
    """``WORKSPACE_LIMITS`` as ``(section, key) -> (direction, the value it is measured
    from)``, the form :func:`engram.workspace_trust.split_workspace_settings` gates by.

    ``own``: the person's own settings (their config file over Engram's defaults); a
    repository's value is measured from them, so a person who lowered
    ``safety.max_content_chars`` to 2,000 is asked before a clone's 8,000 applies, though
    8,000 is under Engram's default (the stop 33 review)."""
    defaults = EngramConfig() if own is None else own
    out: dict[tuple[str, str], tuple[str, float | None]] = {}
    for dotted, direction in WORKSPACE_LIMITS.items():
        if direction is None:
            continue
        section, _, key = dotted.partition(".")
        default = getattr(getattr(defaults, section), key)
        if default is None:  # embed.threads: unset is every core, so more than them widens
            default = os.cpu_count() or 1
        out[(section, key)] = (direction, default)
    return out


@attrs.frozen
class LoadedConfig:
    """The merged configuration, and what the workspace's own settings were allowed to do."""

    config: EngramConfig
    trust: SettingsTrust


def read_workspace_settings(
    workspace: Workspace, notes: list[str] | None = None
) -> tuple[Settings, list[str]]:
    """The settings the repository carries (normalised, merged) and the files they came from.

    ``notes``: collects what was ignored (an unreadable file, a connection setting) instead
    of logging it.
    """
    tool = _table(_read_workspace_toml(workspace, "pyproject.toml", notes).get("tool"))
    pyproject = _without_invalid(
        _without_connections(_table(tool.get("engram")), "pyproject.toml", notes),
        "pyproject.toml [tool.engram]",
        notes,
    )
    local = _without_invalid(
        _without_connections(
            _read_workspace_toml(workspace, ".engram/config.toml", notes),
            ".engram/config.toml",
            notes,
        ),
        ".engram/config.toml",
        notes,
    )
    sources = [
        name
        for name, layer in (
            ("pyproject.toml [tool.engram]", pyproject),
            (".engram/config.toml", local),
        )
        if layer
    ]
    return merge_settings(pyproject, local), sources


def _table(value: object) -> Settings:
    """A TOML table, or nothing when the file has a value of another kind there."""
    return value if isinstance(value, dict) else {}


def workspace_settings_trust(
    workspace: Workspace,
    environ: Mapping[str, str] | None = None,
    approvals: ApprovalStore | None = None,
) -> SettingsTrust:
    """Whether the workspace's gated settings are approved (``engram trust``, ``doctor``)."""
    layer, sources = read_workspace_settings(workspace)
    limits = workspace_limits(_own_config(_read_toml(user_config_dir(environ) / "config.toml")))
    _safe, gated, ignored = split_workspace_settings(layer, limits)
    store = approvals or ApprovalStore(user_config_dir(environ))
    return assess(workspace.root, gated, ignored, sources, store, limits)


def _own_config(user_layer: Settings) -> EngramConfig:
    """The person's own settings over Engram's defaults, what a repository's limit is
    measured from; a user file that does not convert is :func:`load_settings`' error to
    raise, so here it is Engram's defaults."""
    try:
        return config_from_dict(merge_settings(user_layer))
    except (ConfigError, ValueError, TypeError):
        return EngramConfig()


def held_back(trust: SettingsTrust) -> list[str]:
    """What of the workspace's settings is not in effect, one line each, for the person.

    Logged where settings are loaded; a command the workspace's engine runs loaded none,
    so the CLI says these lines for it (``cli.output.open_engine``): the engine's log is
    not where a person looks (docs/security.md: "every front end says so").
    """
    lines = list(trust.notes)
    if trust.ignored:
        lines.append(
            f"ignoring {', '.join(trust.ignored)} from the workspace: the LLM key is read "
            "from $ENGRAM_LLM_API_KEY or your own settings only"
        )
    if trust.needs_approval:
        lines.append(trust.summary())
    return lines


def load_settings(
    workspace: Workspace,
    overrides: Settings | None = None,
    environ: Mapping[str, str] | None = None,
    approvals: ApprovalStore | None = None,
) -> LoadedConfig:
    """Merge every layer; the workspace's gated settings only when the user approved them."""
    notes: list[str] = []
    layer, sources = read_workspace_settings(workspace, notes)
    store = approvals or ApprovalStore(user_config_dir(environ))
    user_file = user_config_dir(environ) / "config.toml"
    user_layer = _read_toml(user_file, notes)
    _check_own(user_layer, str(user_file))
    env_layer = env_overrides(environ)
    _check_own(env_layer, "the ENGRAM_* environment")
    limits = workspace_limits(_own_config(user_layer))
    safe, gated, ignored = split_workspace_settings(layer, limits)
    trust = attrs.evolve(
        assess(workspace.root, gated, ignored, sources, store, limits),
        notes=tuple(notes),
    )
    for line in held_back(trust):
        log.warning("%s", line)
    workspace_layer = merge_settings(safe, gated) if trust.applies else safe
    config = config_from_dict(
        merge_settings(user_layer, workspace_layer, env_layer, overrides or {})
    )
    return LoadedConfig(config, trust)


def load_config(
    workspace: Workspace,
    overrides: Settings | None = None,
    environ: Mapping[str, str] | None = None,
) -> EngramConfig:
    """The merged configuration (see :func:`load_settings` for what was held back)."""
    return load_settings(workspace, overrides, environ).config


def _normalise_tree(raw: Settings) -> Settings:
    """Normalise keys at every level so that camelCase and snake_case merge together.

    Values of free-form mappings (``diagnostics.severity`` maps memory types) keep their keys.
    """
    out: Settings = {}
    for key, value in raw.items():
        name = _normalise_key(key)
        if isinstance(value, dict) and name not in _FREE_FORM:
            out[name] = _normalise_tree(value)
        else:
            out[name] = value
    return out


_FREE_FORM = frozenset({"severity", "agent_severity"})
