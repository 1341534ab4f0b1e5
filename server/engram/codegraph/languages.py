"""Which grammar parses which file, and where the query files live.

Adding a language is a folder under ``grammars/``, a grammar wheel and one :data:`LANGUAGES`
entry. Nothing here imports ``tree_sitter`` at module level: the LSP and the CLI import this
package on start, and the grammar libraries load only when a file is parsed.
"""

from __future__ import annotations

import importlib
import logging
import sys
import sysconfig
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

if TYPE_CHECKING:
    from tree_sitter import Language, Query

log = logging.getLogger(__name__)

QUERY_KINDS = ("definitions", "imports", "calls", "inheritance")


@attrs.frozen
class LanguageSpec:
    """One registry entry.

    ``module``/``function`` name the wheel's entry point (``tree_sitter_python.language``);
    ``queries`` names the folder in ``grammars/``; ``resolver`` names the import-resolution
    rules (see :mod:`engram.codegraph.resolve`); ``package_is_directory`` says that files in one
    directory see each other without imports (Go, Java packages).
    """

    name: str
    extensions: tuple[str, ...]
    module: str
    function: str
    queries: str
    resolver: str
    package_is_directory: bool = False


LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", (".py", ".pyi"), "tree_sitter_python", "language", "python", "python"),
    LanguageSpec(
        "javascript",
        (".js", ".jsx", ".mjs", ".cjs"),
        "tree_sitter_javascript",
        "language",
        "javascript",
        "js",
    ),
    LanguageSpec(
        "typescript",
        (".ts", ".mts", ".cts"),
        "tree_sitter_typescript",
        "language_typescript",
        "typescript",
        "js",
    ),
    LanguageSpec("tsx", (".tsx",), "tree_sitter_typescript", "language_tsx", "typescript", "js"),
    LanguageSpec("go", (".go",), "tree_sitter_go", "language", "go", "go", True),
    LanguageSpec("rust", (".rs",), "tree_sitter_rust", "language", "rust", "rust"),
    LanguageSpec("java", (".java",), "tree_sitter_java", "language", "java", "java", True),
)

_BY_EXTENSION: Mapping[str, LanguageSpec] = {
    ext: spec for spec in LANGUAGES for ext in spec.extensions
}

#: Text files without a grammar that are still worth chunking for code search.
TEXT_EXTENSIONS = frozenset(
    {
        ".md", ".markdown", ".rst", ".txt", ".toml", ".yaml", ".yml", ".cfg", ".ini",
        ".sh", ".bash", ".html", ".css", ".scss", ".c", ".h", ".cc", ".cpp", ".hpp",
        ".cs", ".rb", ".php", ".kt", ".swift", ".scala", ".lua", ".sql", ".vue", ".svelte",
    }
)  # fmt: skip


def _suffix(path: str) -> str:
    """``Path(path).suffix.lower()`` of a file path, from the string: a ``Path`` per call
    was ~3 % of a cold index at 58k files (three lookups per file)."""
    name = path.rstrip("/").rpartition("/")[2]
    dot = name.rfind(".")
    return name[dot:].lower() if 0 < dot < len(name) - 1 else ""


def language_for(path: str) -> LanguageSpec | None:
    """The registry entry for a file name, or ``None`` when no grammar applies."""
    return _BY_EXTENSION.get(_suffix(path))


def is_indexable(path: str) -> bool:
    """Source files with a grammar, plus plain text worth searching."""
    suffix = _suffix(path)
    return suffix in _BY_EXTENSION or suffix in TEXT_EXTENSIONS


def grammars_dir() -> Path:
    """Where the ``.scm`` files are, in a source checkout or an installed wheel.

    The source of truth is ``grammars/`` at the repository root. Editable installs find it
    next to ``server/``; a wheel ships it as data files under ``<prefix>/share/engram/grammars``.
    """
    here = Path(__file__).resolve()
    candidates = [
        here.parents[3] / "grammars",
        Path(sysconfig.get_path("data")) / "share" / "engram" / "grammars",
        Path(sys.prefix) / "share" / "engram" / "grammars",
        here.parent / "grammars",
    ]
    for candidate in candidates:
        if (candidate / "python" / "definitions.scm").is_file():
            return candidate
    raise FileNotFoundError("engram grammars/ folder not found (broken installation?)")


@attrs.define
class LoadedLanguage:
    """A grammar with its compiled queries; built once per process and reused."""

    spec: LanguageSpec
    language: Language
    queries: dict[str, Query]
    #: all of ``queries`` compiled as one, so extraction walks the tree once instead of once
    #: per kind; ``combined_kinds[i]`` is the kind of pattern ``i``. ``None`` when the
    #: concatenation does not compile (then each query runs on its own).
    combined: Query | None = None
    combined_kinds: tuple[str, ...] = ()


class LanguageRegistry:
    """Loads grammars and compiles queries lazily, once per language.

    Held by a :class:`~engram.codegraph.graph.CodeGraph` (no module-level cache), so tests
    and two workspaces in one process do not share mutable state.
    """

    def __init__(self, query_root: Path | None = None) -> None:
        self._query_root = query_root
        self._loaded: dict[str, LoadedLanguage | None] = {}

    @property
    def query_root(self) -> Path:
        if self._query_root is None:
            self._query_root = grammars_dir()
        return self._query_root

    def get(self, spec: LanguageSpec) -> LoadedLanguage | None:
        """The loaded grammar, or ``None`` (logged once) when its wheel is missing."""
        if spec.name in self._loaded:
            return self._loaded[spec.name]
        loaded: LoadedLanguage | None
        try:
            loaded = self._load(spec)
        except Exception as exc:  # a broken wheel or query must not stop indexing
            log.warning("grammar %s unavailable: %s", spec.name, exc)
            loaded = None
        self._loaded[spec.name] = loaded
        return loaded

    def _load(self, spec: LanguageSpec) -> LoadedLanguage:
        from tree_sitter import Language, Query

        module = importlib.import_module(spec.module)
        language = Language(getattr(module, spec.function)())
        queries: dict[str, Query] = {}
        sources: list[str] = []
        kinds: list[str] = []
        folder = self.query_root / spec.queries
        for kind in QUERY_KINDS:
            path = folder / f"{kind}.scm"
            if path.is_file():
                source = path.read_text(encoding="utf-8")
                queries[kind] = Query(language, source)
                sources.append(source)
                kinds.extend([kind] * queries[kind].pattern_count)
        combined: Query | None
        try:
            combined = Query(language, "\n".join(sources))
        except Exception as exc:  # keep the separate queries; they compiled
            log.warning("%s queries do not combine (%s); running them one by one", spec.name, exc)
            combined = None
        if combined is not None and combined.pattern_count != len(kinds):
            combined = None
        return LoadedLanguage(spec, language, queries, combined, tuple(kinds))
