"""Tool search: the few tools that matter for this query, file, module and phase.

Handing an agent every tool definition is expensive (58 tools from 5 servers cost about 55K
tokens) and makes it choose worse. Engram ranks the registry's tools and returns a focused
list with schemas. Signals, each normalised to 0..1 and mixed with fixed weights:

- **words**: a BM25 over each tool's name (weighted up), server, title, description and
  parameter names; query words that are not in the vocabulary are mapped to close words
  with rapidfuzz, so ``screenshoot`` still finds ``take_screenshot``;
- **name fuzz**: rapidfuzz ``WRatio`` of the query against ``server tool`` names;
- **context**: words from the current file path, its language, module and phase join the
  query at a lower weight (so a ``.sql`` file lifts database tools);
- **embeddings** (optional): cosine between the query and precomputed tool vectors;
- **popularity**: log-scaled call counts from :mod:`engram.mcphub.usage`;
- **module history**: tools that succeeded in this module before (usage table and an
  optional memory hook the engine passes in).

Everything is in memory and pure Python + rapidfuzz; one query over 1,000 tools takes a few
milliseconds (``scripts/bench/mcp.py`` measures p95).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import attrs

from engram.bm25 import BM25Index
from engram.jsontypes import JsonObject
from engram.mcphub.registry import ToolInfo

if TYPE_CHECKING:
    import numpy as np


_WORD = re.compile(r"[A-Za-z][a-z]+|[A-Z]+(?![a-z])|\d+|[a-z]+")
_STOP_WORDS = (
    "a an and are as at be by can do for from get given how i in into is it its me my of on "
    "or that the this to use used uses using what when which with you your"
)
_STOP = frozenset(_STOP_WORDS.split())
_PHASE_WORDS: dict[str, str] = {
    "define": "spec issue plan requirement ticket design",
    "implement": "edit write create code generate file",
    "validate": "test check verify lint screenshot assert run",
    "refine": "refactor format fix review rename",
    "explore": "search find read list docs documentation lookup",
    "reflect": "log history commit diff summary",
}
_LANGUAGE_WORDS: dict[str, str] = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript node",
    ".jsx": "javascript react",
    ".ts": "typescript node",
    ".tsx": "typescript react",
    ".go": "go golang",
    ".rs": "rust cargo",
    ".java": "java",
    ".sql": "sql database query",
    ".md": "markdown docs documentation",
    ".rst": "docs documentation",
    ".html": "html browser page",
    ".css": "css browser style",
    ".tf": "terraform",
    ".yml": "yaml config",
    ".yaml": "yaml config",
    ".json": "json",
    ".toml": "toml config",
    ".sh": "shell bash",
    ".dockerfile": "docker container",
}

WEIGHTS = {
    "words": 0.45,
    "fuzz": 0.20,
    "embed": 0.30,
    "popularity": 0.08,
    "module": 0.15,
    "memory": 0.15,
}
_NAME_REPEAT = 3
_CONTEXT_WEIGHT = 0.35


def _stem(token: str) -> str:
    """A tiny, consistent suffix stripper (plural and -ing/-ed), enough for tool names."""
    if len(token) <= 3:
        return token
    if token.endswith("ies") and len(token) > 4:
        return token[:-3] + "y"
    if token.endswith(("sses", "ches", "shes", "xes")):
        return token[:-2]
    if token.endswith("s") and not token.endswith(("ss", "us", "is")):
        return token[:-1]
    if token.endswith("ing") and len(token) >= 6:
        return token[:-3]
    if token.endswith("ed") and len(token) >= 5:
        return token[:-2]
    return token


def tokenize(text: str) -> list[str]:
    """Words split at camelCase, ``_``, ``-``, ``.``, lower-cased, light-stemmed, no stop words."""
    out: list[str] = []
    for match in _WORD.finditer(text or ""):
        token = match.group(0).lower()
        if token in _STOP or (len(token) < 2 and not token.isdigit()):
            continue
        out.append(_stem(token))
    return out


@attrs.frozen
class SearchContext:
    """Where the user or agent is: all optional."""

    file: str | None = None
    module: str | None = None
    phase: str | None = None
    #: selected text (code actions): a weak signal, like the file path
    selection: str | None = None

    def words(self) -> list[str]:
        parts: list[str] = []
        if self.file:
            path = self.file.replace("\\", "/")
            parts.append(path)
            dot = path.rfind(".")
            ext = path[dot:].lower() if dot > path.rfind("/") else ""
            name = path.rsplit("/", 1)[-1].lower()
            if name == "dockerfile":
                ext = ".dockerfile"
            parts.append(_LANGUAGE_WORDS.get(ext, ""))
            if "/.github/workflows/" in f"/{path}":
                parts.append("github actions workflow")
        if self.module:
            parts.append(self.module)
        if self.phase:
            parts.append(_PHASE_WORDS.get(self.phase.lower(), self.phase))
        if self.selection:
            parts.append(self.selection[:500])
        return tokenize(" ".join(parts))


#: ``(context, query) -> {qualified tool name: weight >= 0}``: tools that helped here before.
ToolMemoryHook = Callable[[SearchContext, str], Mapping[str, float]]


class Embedder(Protocol):
    model_id: str

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@attrs.frozen
class ToolHit:
    tool: ToolInfo
    score: float
    reasons: list[str]

    def to_dict(self, *, with_schema: bool = True) -> JsonObject:
        data = self.tool.to_dict()
        if not with_schema:
            data.pop("input_schema", None)
        data["score"] = round(self.score, 4)
        data["reasons"] = self.reasons
        return data


def tool_text(tool: ToolInfo) -> str:
    """What a tool is about, as one text (for embeddings and the word index)."""
    props = tool.input_schema.get("properties") if isinstance(tool.input_schema, Mapping) else None
    params = " ".join(str(p) for p in props) if isinstance(props, Mapping) else ""
    return f"{tool.server} {tool.name} {tool.title or ''} {tool.description} {params}"


class ToolSearch:
    """An in-memory index over the registry's tools (rebuild when the registry changes)."""

    def __init__(
        self,
        tools: Sequence[ToolInfo],
        *,
        popularity: Mapping[str, int] | None = None,
        module_usage: Callable[[str], Mapping[str, int]] | None = None,
        memory_hook: ToolMemoryHook | None = None,
        embedder: Embedder | None = None,
        vectors: np.ndarray | None = None,
    ) -> None:
        from rapidfuzz import utils as fuzz_utils

        self.tools = list(tools)
        self._popularity = popularity or {}
        self._module_usage = module_usage
        self._memory_hook = memory_hook
        self._embedder = embedder
        self._vectors = vectors if vectors is not None and len(vectors) == len(self.tools) else None
        self._names = [
            fuzz_utils.default_process(f"{t.server} {t.name.replace('_', ' ')}") for t in self.tools
        ]
        documents: list[list[str]] = []
        for tool in self.tools:
            name_tokens = tokenize(f"{tool.name} {tool.title or ''}")
            props = (
                tool.input_schema.get("properties")
                if isinstance(tool.input_schema, Mapping)
                else None
            )
            params = " ".join(str(p) for p in props) if isinstance(props, Mapping) else ""
            tokens = (
                name_tokens * _NAME_REPEAT
                + tokenize(tool.server)
                + tokenize(tool.description[:2000])
                + tokenize(params)
            )
            documents.append(tokens)
        self._index = BM25Index(documents)
        self._vocab = self._index.vocabulary
        self._by_name = {t.qualified_name: i for i, t in enumerate(self.tools)}

    def __len__(self) -> int:
        return len(self.tools)

    # ------------------------------------------------------------------ signals

    def _expand_query(self, tokens: Sequence[str]) -> dict[str, float]:
        """Query token -> weight; unknown tokens map to close vocabulary words (typos)."""
        from rapidfuzz import fuzz, process

        weights: dict[str, float] = {}
        for token in tokens:
            if token in self._index:
                weights[token] = max(weights.get(token, 0.0), 1.0)
                continue
            if len(token) < 4:
                continue
            for word, score, _ in process.extract(
                token, self._vocab, scorer=fuzz.ratio, limit=3, score_cutoff=80
            ):
                weights[word] = max(weights.get(word, 0.0), score / 100.0 * 0.8)
        return weights

    def _bm25(self, weights: Mapping[str, float]) -> dict[int, float]:
        scores = self._index.scores(weights)
        return {int(i): float(scores[i]) for i in scores.nonzero()[0]}

    def _fuzz(self, query: str) -> dict[int, float]:
        from rapidfuzz import fuzz, process, utils

        processed = utils.default_process(query)
        if not processed:
            return {}
        hits = process.extract(
            processed, self._names, scorer=fuzz.WRatio, limit=30, score_cutoff=60, processor=None
        )
        return {idx: (score - 60) / 40 for _, score, idx in hits}

    def _embed(self, query: str) -> dict[int, float]:
        if self._embedder is None or self._vectors is None or not query.strip():
            return {}
        import numpy as np

        qv = np.asarray(self._embedder.embed([query])[0], dtype=np.float32)
        sims = self._vectors @ qv
        top = np.argsort(-sims)[:30]
        return {int(i): float(max(0.0, sims[i])) for i in top if sims[i] > 0.2}

    # ------------------------------------------------------------------ search

    def search(
        self, query: str, *, context: SearchContext | None = None, k: int = 15
    ) -> list[ToolHit]:
        """Best ``k`` tools, each with the reasons it ranked (for explainable UIs)."""
        if not self.tools or k <= 0:
            return []
        context = context or SearchContext()
        query_tokens = tokenize(query)
        weights = self._expand_query(query_tokens)
        for token in context.words():
            if token in self._index and token not in weights:
                weights[token] = _CONTEXT_WEIGHT
        signals: dict[str, dict[int, float]] = {}
        words = self._bm25(weights)
        if words:
            top = max(words.values())
            signals["words"] = {i: s / top for i, s in words.items()}
        if query.strip():
            signals["fuzz"] = self._fuzz(query)
            signals["embed"] = self._embed(query)
        if self._popularity:
            most = max(self._popularity.values(), default=0)
            if most > 0:
                signals["popularity"] = {
                    self._by_name[name]: math.log1p(calls) / math.log1p(most)
                    for name, calls in self._popularity.items()
                    if name in self._by_name
                }
        module = context.module or _module_of(context.file)
        if module is not None and self._module_usage is not None:
            signals["module"] = self._normalised(self._module_usage(module))
        if self._memory_hook is not None:
            signals["memory"] = self._normalised(self._memory_hook(context, query))
        # popularity alone must not fill the list when the query matched something
        relevance = {
            i
            for name in ("words", "fuzz", "embed", "module", "memory")
            for i in signals.get(name, {})
        }
        candidates = relevance or set(signals.get("popularity", {}))
        if not candidates and not query_tokens and not query.strip():
            candidates = set(range(len(self.tools)))
        active = {name: WEIGHTS[name] for name, values in signals.items() if values}
        total = sum(active.values()) or 1.0
        hits: list[ToolHit] = []
        for i in candidates:
            score = 0.0
            reasons: list[str] = []
            for name, weight in active.items():
                value = signals[name].get(i, 0.0)
                if value > 0:
                    score += weight * value
                    if value >= 0.3:
                        reasons.append(name)
            hits.append(ToolHit(self.tools[i], score / total, reasons))
        hits.sort(key=lambda h: (-h.score, h.tool.qualified_name))
        return hits[:k]

    def _normalised(self, raw: Mapping[str, float]) -> dict[int, float]:
        values = {
            self._by_name[n]: float(v) for n, v in raw.items() if n in self._by_name and v > 0
        }
        top = max(values.values(), default=0.0)
        return {i: v / top for i, v in values.items()} if top > 0 else {}


def _module_of(file: str | None) -> str | None:
    from engram.mcphub.usage import module_of

    return module_of(file)
