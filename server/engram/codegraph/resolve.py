"""Import resolution: which workspace files an import statement points at.

Pure string work over the set of workspace files, so it is cheap to redo when files appear
or disappear. Imports that leave the workspace (stdlib, third-party packages) resolve to
nothing, which is the right answer for impact analysis.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable

from engram.codegraph.extract import ImportRef
from engram.jsontypes import parse_json

_JS_EXTENSIONS = (".ts", ".tsx", ".js", ".jsx", ".mjs", ".cjs", ".mts", ".cts", ".d.ts")
#: most memoised answers one resolver keeps (a cold index of a huge tree must stay bounded)
_MEMO_LIMIT = 50_000
_GO_MODULE_RE = re.compile(r"^\s*module\s+(\S+)", re.MULTILINE)


def _dirname(path: str) -> str:
    """``posixpath.dirname``, without its Python for the usual path (a cold index of 11k
    files calls this ~36k times): exact, as a head not ending in ``/`` is what it returns."""
    head, slash, _ = path.rpartition("/")
    if not slash:
        return ""
    if head and head[-1] != "/":
        return head
    return posixpath.dirname(path)  # "/x", "a//b": its rules for repeated slashes


def _join(*parts: str) -> str:
    """The non-empty ``parts`` joined and normalised (``posixpath.join`` + ``normpath``,
    ``"."`` as ``""``). Exact, with their Python only where it can change the answer: a
    part's own slash at a seam (absolute parts restart the path), and ``.``/``..``/
    repeated or trailing slashes to normalise (resolution calls this ~34k times at 11k)."""
    kept = [p for p in parts if p]
    if not kept:
        return ""
    joined = "/".join(kept)
    if "//" in joined:
        joined = posixpath.join(*kept)
    if "//" in joined or "/." in joined or joined[0] == "." or joined[-1] == "/":
        joined = posixpath.normpath(joined)
    return "" if joined == "." else joined


class ImportResolver:
    """Resolves imports against one snapshot of the workspace's file list.

    ``go_modules`` maps the directory of each ``go.mod`` to its module path and
    ``js_packages`` each ``package.json`` name to its folder and entry file; the graph reads
    the manifests and passes them in, so this class never touches the file system.
    """

    def __init__(
        self,
        files: Iterable[str],
        go_modules: dict[str, str] | None = None,
        js_packages: dict[str, tuple[str, str | None]] | None = None,
    ) -> None:
        self.files = set(files)
        self.go_modules = dict(go_modules or {})
        #: package name -> (directory, entry file) from the workspace's package.json files
        self.js_packages = {name: d for name, (d, _) in (js_packages or {}).items()}
        self.js_entries = {name: e for name, (_, e) in (js_packages or {}).items() if e}
        self._by_dir: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            self._by_dir[_dirname(path)].append(path)
        self._python_roots = self._find_python_roots()
        #: every folder holding a Python file at any depth, and every Python file's path
        #: without its extension: a dotted name can only be a module under ``base`` when
        #: ``base/<its first part>`` is one of them (an absolute import is tried from every
        #: root: at 58k files ~60 roots, most of them without the name)
        self._python_paths: set[str] = set()
        for path in self.files:
            if path.endswith((".py", ".pyi")):
                stem = path.rpartition(".")[0]
                while stem and stem not in self._python_paths:
                    self._python_paths.add(stem)
                    stem = _dirname(stem)
        self._java_suffix: dict[str, list[str]] = defaultdict(list)
        self._java_dirs: dict[str, list[str]] = defaultdict(list)
        for path in self.files:
            if path.endswith(".java"):
                parts = path[: -len(".java")].split("/")
                for start in range(len(parts)):
                    self._java_suffix[".".join(parts[start:])].append(path)
        for directory in {_dirname(p) for p in self.files if p.endswith(".java")}:
            parts = directory.split("/") if directory else []
            for start in range(len(parts)):
                self._java_dirs[".".join(parts[start:])].append(directory)
        #: answers of :meth:`resolve`; valid as long as this snapshot of the file list is, so
        #: re-indexing an edited file does not redo the string work for its unchanged imports.
        #: Keyed by the importing file's folder where only the folder matters (a cold index
        #: meets the same import in every file of a folder)
        self._memo: dict[tuple[str, str, str, tuple[str, ...], bool], list[str]] = {}
        #: absolute Python imports tried from the roots: the same in every importing file
        self._python_absolute: dict[tuple[str, tuple[str, ...], bool], list[str]] = {}
        #: (base, dotted) -> the module's file: every import of a module tries it from each
        #: root, and each try normalises a path and probes four names
        self._python_modules: dict[tuple[str, str], str | None] = {}
        #: folder -> its crate root (:meth:`_rust_crate_root`)
        self._rust_roots: dict[str, str] = {}

    # -- helpers ---------------------------------------------------------------------------
    def files_in_dir(self, directory: str, suffixes: tuple[str, ...] = ()) -> list[str]:
        return sorted(
            p for p in self._by_dir.get(directory, []) if not suffixes or p.endswith(suffixes)
        )

    def _find_python_roots(self) -> list[str]:
        """Directories from which absolute Python imports start.

        The root, common layout folders (``src/``, ``lib/``), and the parent of every
        top-level package (a folder with ``__init__.py`` whose parent has none).
        """
        roots: dict[str, None] = {"": None, "src": None, "lib": None}
        # in path order: an import two roots can answer (two copies of one package) must
        # mean the same file in every process, whatever the string hash seed
        for path in sorted(self.files):
            if posixpath.basename(path) != "__init__.py":
                continue
            package = _dirname(path)
            parent = _dirname(package)
            while parent and f"{parent}/__init__.py" in self.files:
                parent = _dirname(parent)
            roots.setdefault(parent, None)
        return list(roots)

    # -- dispatch --------------------------------------------------------------------------
    def resolve(
        self, resolver: str, source: str, ref: ImportRef, package: str | None = None
    ) -> list[str]:
        """Workspace files ``ref`` (found in ``source``) refers to; empty when external."""
        # Rust's module folder depends on the file's name (mod.rs, lib.rs); the other
        # languages resolve from the importing file's folder
        where = source if resolver == "rust" else _dirname(source)
        key = (resolver, where, ref.module, tuple(ref.names), ref.wildcard)
        cached = self._memo.get(key)
        if cached is None:
            if len(self._memo) >= _MEMO_LIMIT:  # bounded memory on a huge tree
                self._memo.clear()
                self._python_absolute.clear()
                self._python_modules.clear()
                self._rust_roots.clear()
            cached = self._memo[key] = self._resolve_uncached(resolver, source, ref)
        return [t for t in cached if t != source]

    def _resolve_uncached(self, resolver: str, source: str, ref: ImportRef) -> list[str]:
        """Targets of ``ref`` from ``source``'s folder; ``source`` itself is dropped by the
        caller (the answer is shared by every file of the folder)."""
        method = {
            "python": self._python,
            "js": self._js,
            "go": self._go,
            "rust": self._rust,
            "java": self._java,
        }.get(resolver)
        if method is None:
            return []
        return sorted(set(method(source, ref)))

    # -- Python ----------------------------------------------------------------------------
    def _python_module(self, base: str, dotted: str) -> str | None:
        key = (base, dotted)
        if key in self._python_modules:
            return self._python_modules[key]
        found = self._python_modules[key] = self._find_python_module(base, dotted)
        return found

    def _find_python_module(self, base: str, dotted: str) -> str | None:
        rel = dotted.replace(".", "/") if dotted else ""
        stem = _join(base, rel)
        for candidate in (
            f"{stem}.py",
            f"{stem}.pyi",
            f"{stem}/__init__.py",
            f"{stem}/__init__.pyi",
        ):
            if candidate in self.files:
                return candidate.lstrip("/")
        return None

    def _python(self, source: str, ref: ImportRef) -> list[str]:
        module = ref.module
        if module.startswith("."):
            dots = len(module) - len(module.lstrip("."))
            base = _dirname(source)
            for _ in range(dots - 1):
                base = _dirname(base)
            bases = [base]
            dotted = module[dots:]
        else:
            key = (module, tuple(ref.names), ref.wildcard)
            from_roots = self._python_absolute.get(key)
            if from_roots is None:
                from_roots = self._python_absolute[key] = self._python_from(
                    self._python_roots, module, ref
                )
            return from_roots or self._python_from([_dirname(source)], module, ref)
        return self._python_from(bases, dotted, ref)

    def _python_from(self, bases: list[str], dotted: str, ref: ImportRef) -> list[str]:
        """The files ``dotted`` (with ``ref``'s names) means from the first base that has it."""
        first = dotted.partition(".")[0]
        for base in bases:
            if first and (f"{base}/{first}" if base else first) not in self._python_paths:
                continue  # no module file under base starts with that name
            found: list[str] = []
            module_file = self._python_module(base, dotted) if dotted else None
            # ``from pkg import sub`` names submodules; other names live in the module itself
            names_in_module = False
            for name in ref.names:
                submodule = self._python_module(base, f"{dotted}.{name}" if dotted else name)
                if submodule is not None:
                    found.append(submodule)
                else:
                    names_in_module = True
            if module_file is not None and (names_in_module or not ref.names or ref.wildcard):
                found.append(module_file)
            if not dotted and not found:
                init = _join(base, "__init__.py")
                if init in self.files and names_in_module:
                    found.append(init)
            if found:
                return found
        return []

    # -- JavaScript / TypeScript -----------------------------------------------------------
    def _js(self, source: str, ref: ImportRef) -> list[str]:
        spec = ref.module.split("?")[0]
        if not spec.startswith((".", "/")):
            # the workspace's own package imported by name (tests often do this)
            name, _, rest = spec.partition("/")
            if name.startswith("@") and rest:
                scope_name, _, rest = rest.partition("/")
                name = f"{name}/{scope_name}"
            package_dir = self.js_packages.get(name)
            if package_dir is None:
                return []
            entry = self.js_entries.get(name) if not rest else None
            spec = "/" + (entry if entry is not None else _join(package_dir, rest))
        stem = _join(_dirname(source), spec) if spec.startswith(".") else spec.lstrip("/")
        if stem.startswith("../"):
            return []
        prefix = f"{stem}/" if stem else ""
        candidates = [stem] if stem else []
        root, ext = posixpath.splitext(stem)
        if ext in (".js", ".jsx", ".mjs", ".cjs"):  # TS sources imported by their output name
            candidates += [root + e for e in (".ts", ".tsx", ".mts", ".cts")]
        candidates += [stem + e for e in _JS_EXTENSIONS]
        candidates += [f"{prefix}index{e}" for e in _JS_EXTENSIONS]
        for candidate in candidates:
            if candidate in self.files:
                return [candidate]
        return []

    # -- Go --------------------------------------------------------------------------------
    def _go(self, source: str, ref: ImportRef) -> list[str]:
        spec = ref.module
        best: tuple[str, str] | None = None
        for directory, module_path in self.go_modules.items():
            if (spec == module_path or spec.startswith(module_path + "/")) and (
                best is None or len(module_path) > len(best[1])
            ):
                best = (directory, module_path)
        if best is None:
            return []
        directory, module_path = best
        target = _join(directory, spec[len(module_path) :].lstrip("/"))
        return self.files_in_dir(target, (".go",))

    # -- Rust ------------------------------------------------------------------------------
    @staticmethod
    def _rust_module_dir(source: str) -> str:
        name = posixpath.basename(source)
        if name in ("mod.rs", "lib.rs", "main.rs"):
            return _dirname(source)
        return _join(_dirname(source), name[: -len(".rs")])

    def _rust_crate_root(self, source: str) -> str:
        """The folder of the crate root (``lib.rs``/``main.rs``) above ``source``, else its
        own folder; the same for every file of a folder, so found once per folder."""
        start = _dirname(source)
        root = self._rust_roots.get(start)
        if root is None:
            root = self._rust_roots[start] = self._find_rust_crate_root(start)
        return root

    def _find_rust_crate_root(self, start: str) -> str:
        directory = start
        while True:
            for entry in ("lib.rs", "main.rs"):
                if _join(directory, entry) in self.files:
                    return directory
            if not directory:
                return start
            directory = _dirname(directory)

    def _rust_walk(self, base: str, segments: list[str]) -> str | None:
        """The deepest module file reached by ``segments`` from the module dir ``base``."""
        found: str | None = None
        directory = base
        for segment in segments:
            for candidate in (
                _join(directory, f"{segment}.rs"),
                _join(directory, segment, "mod.rs"),
            ):
                if candidate in self.files:
                    found = candidate
                    break
            else:
                break
            directory = _join(directory, segment)
        return found

    def _rust(self, source: str, ref: ImportRef) -> list[str]:
        segments = [s for s in ref.module.split("::") if s]
        if not segments:
            return []
        if (
            ref.line
            and "::" not in ref.module
            and not ref.names
            and segments[0]
            not in (
                "crate",
                "self",
                "super",
            )
        ):
            # ``mod x;`` declares a child module file
            target = self._rust_walk(self._rust_module_dir(source), segments[:1])
            if target is not None:
                return [target]
        head = segments[0]
        if head == "crate":
            base, rest = self._rust_crate_root(source), segments[1:]
        elif head == "self":
            base, rest = self._rust_module_dir(source), segments[1:]
        elif head == "super":
            base = _dirname(self._rust_module_dir(source))
            rest = segments[1:]
            while rest and rest[0] == "super":
                base, rest = _dirname(base), rest[1:]
        else:
            return []
        results: list[str] = []
        for name in ref.names:
            hit = self._rust_walk(base, [*rest, name])
            if hit is not None and (
                posixpath.basename(hit) == f"{name}.rs" or hit.endswith(f"{name}/mod.rs")
            ):
                results.append(hit)
        module_file = self._rust_walk(base, rest) if rest else None
        if module_file is not None and (len(results) < len(ref.names) or not ref.names):
            results.append(module_file)
        if not results and not rest:
            for entry in ("lib.rs", "main.rs", "mod.rs"):
                candidate = _join(base, entry)
                if candidate in self.files:
                    results.append(candidate)
                    break
        return results

    # -- Java ------------------------------------------------------------------------------
    def _java(self, source: str, ref: ImportRef) -> list[str]:
        parts = ref.module.split(".")
        if ref.wildcard:
            dirs = self._java_dirs.get(ref.module, [])
            if dirs:
                return [f for d in dirs for f in self.files_in_dir(d, (".java",))]
        for end in range(len(parts), 0, -1):
            hits = self._java_suffix.get(".".join(parts[:end]))
            if hits:
                return hits if len(hits) <= 3 else []
        return []


def read_go_modules(root_files: dict[str, bytes]) -> dict[str, str]:
    """``{directory: module path}`` from the contents of ``go.mod`` files keyed by path."""
    modules: dict[str, str] = {}
    for path, content in root_files.items():
        match = _GO_MODULE_RE.search(content.decode("utf-8", errors="replace"))
        if match:
            modules[_dirname(path)] = match.group(1)
    return modules


def read_js_packages(manifests: dict[str, bytes]) -> dict[str, tuple[str, str | None]]:
    """``{name: (directory, entry file)}`` from ``package.json`` contents keyed by path."""
    packages: dict[str, tuple[str, str | None]] = {}
    for path, content in manifests.items():
        try:
            data = parse_json(content.decode("utf-8", errors="replace"))
        except ValueError:
            continue
        if not isinstance(data, dict) or not isinstance(data.get("name"), str):
            continue
        directory = _dirname(path)
        main = data.get("main") if isinstance(data.get("main"), str) else None
        entry = None
        if main:
            entry = _join(directory, main)
        packages[data["name"]] = (directory, entry)
    return packages
