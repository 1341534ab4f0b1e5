"""Project type detection (docs/codegraph.md): a few L0 facts from manifests at the root.

The facts are plain data; the engine decides whether and how to store them as memories
(``module_insight`` / ``preference``, scope global). Nothing here guesses beyond what a
manifest states.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engram.jsontypes import JsonObject

import logging
import re
import tomllib
from pathlib import Path

import attrs

from engram.jsontypes import parse_json
from engram.workspace import MAX_SETTINGS_FILE_BYTES, WorkspaceError, confine, read_regular

log = logging.getLogger(__name__)

_PY_FRAMEWORKS = {
    "django": "Django", "flask": "Flask", "fastapi": "FastAPI", "starlette": "Starlette",
    "pygls": "pygls", "click": "Click", "typer": "Typer", "sqlalchemy": "SQLAlchemy",
    "pydantic": "Pydantic", "attrs": "attrs", "numpy": "NumPy", "pandas": "pandas",
    "torch": "PyTorch", "aiohttp": "aiohttp", "celery": "Celery", "lancedb": "LanceDB",
}  # fmt: skip
_PY_TEST = {"pytest": "pytest", "hypothesis": "Hypothesis", "tox": "tox", "nox": "nox"}
_NODE_FRAMEWORKS = {
    "react": "React", "vue": "Vue", "svelte": "Svelte", "next": "Next.js", "express": "Express",
    "koa": "Koa", "fastify": "Fastify", "@nestjs/core": "NestJS", "electron": "Electron",
    "@angular/core": "Angular", "vite": "Vite", "webpack": "webpack",
}  # fmt: skip
_NODE_TEST = {
    "jest": "Jest",
    "vitest": "Vitest",
    "mocha": "Mocha",
    "@playwright/test": "Playwright",
}
_GO_FRAMEWORKS = {"gin-gonic/gin": "Gin", "labstack/echo": "Echo", "gofiber/fiber": "Fiber",
                  "spf13/cobra": "Cobra", "gorilla/mux": "gorilla/mux"}  # fmt: skip
_RUST_FRAMEWORKS = {"tokio": "Tokio", "actix-web": "Actix Web", "axum": "Axum", "serde": "Serde",
                    "clap": "clap", "tauri": "Tauri", "bevy": "Bevy"}  # fmt: skip
_JAVA_FRAMEWORKS = {"spring-boot": "Spring Boot", "junit": "JUnit", "quarkus": "Quarkus",
                    "micronaut": "Micronaut"}  # fmt: skip


@attrs.frozen
class ProjectFact:
    """One L0 fact. ``memory_type`` and ``key`` let the engine deduplicate across runs."""

    key: str  # stable identity, e.g. "project.language.python"
    content: str
    memory_type: str  # "module_insight" | "preference"
    evidence: str  # the manifest it came from
    confidence: float = 0.9

    def to_dict(self) -> JsonObject:
        return attrs.asdict(self)


def _read(root: Path, path: Path) -> str:
    """A manifest's text, confined to the workspace ("" for a link that points outside, or
    a file that is not regular or over :data:`MAX_SETTINGS_FILE_BYTES`)."""
    try:
        real = confine(root.resolve(), path)
    except WorkspaceError as exc:
        log.info("project facts: %s", exc)
        return ""
    try:  # a FIFO would block the index, a 2 GB manifest fill memory: no fact from either
        return read_regular(real, MAX_SETTINGS_FILE_BYTES).decode("utf-8", errors="replace")
    except OSError as exc:
        log.info("project facts: %s", exc)
        return ""


def _dep_name(requirement: str) -> str:
    return re.split(r"[\s<>=!~;\[(@]", requirement.strip(), maxsplit=1)[0].lower()


def _found(deps: set[str], table: dict[str, str]) -> list[str]:
    return sorted({label for name, label in table.items() if name in deps})


def _python(root: Path) -> list[ProjectFact]:
    manifests = [n for n in ("pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
                 if (root / n).is_file()]  # fmt: skip
    if not manifests:
        return []
    deps: set[str] = set()
    name = ""
    if "pyproject.toml" in manifests:
        try:
            data = tomllib.loads(_read(root, root / "pyproject.toml"))
        except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            log.debug("pyproject unreadable: %s", exc)
            data = {}
        project = data.get("project", {}) if isinstance(data.get("project"), dict) else {}
        name = str(project.get("name", ""))
        for req in project.get("dependencies", []) or []:
            deps.add(_dep_name(str(req)))
        for group in (project.get("optional-dependencies", {}) or {}).values():
            deps.update(_dep_name(str(r)) for r in group or [])
        tools = data.get("tool", {}) if isinstance(data.get("tool"), dict) else {}
        deps.update(k for k in ("pytest", "tox") if k in tools)
        poetry = tools.get("poetry", {}) if isinstance(tools.get("poetry"), dict) else {}
        deps.update(str(k).lower() for k in (poetry.get("dependencies") or {}))
    for req_file in ("requirements.txt", "requirements-dev.txt", "setup.cfg", "setup.py"):
        path = root / req_file
        if path.is_file():
            text = _read(root, path)
            deps.update(_dep_name(line) for line in text.splitlines() if line.strip())
            deps.update(m.lower() for m in re.findall(r"['\"]([A-Za-z0-9_.\-]+)", text))
    facts = [
        ProjectFact(
            "project.language.python",
            f"Python project{f' {name!r}' if name else ''} (manifest: {manifests[0]}).",
            "module_insight",
            manifests[0],
        )
    ]
    frameworks = _found(deps, _PY_FRAMEWORKS)
    if frameworks:
        facts.append(ProjectFact("project.frameworks.python",
                                 f"Python libraries in use: {', '.join(frameworks)}.",
                                 "module_insight", manifests[0], 0.85))  # fmt: skip
    tests = _found(deps, _PY_TEST)
    if tests or (root / "pytest.ini").is_file() or (root / "conftest.py").is_file():
        facts.append(ProjectFact("project.tests.python",
                                 f"Tests run with {', '.join(tests or ['pytest'])}.",
                                 "preference", manifests[0], 0.8))  # fmt: skip
    return facts


def _node(root: Path) -> list[ProjectFact]:
    path = root / "package.json"
    if not path.is_file():
        return []
    try:
        data = parse_json(_read(root, path))
    except (OSError, ValueError) as exc:
        log.debug("package.json unreadable: %s", exc)
        data = {}
    if not isinstance(data, dict):
        data = {}
    deps: set[str] = set()
    for section in ("dependencies", "devDependencies", "peerDependencies"):
        if isinstance(data.get(section), dict):
            deps.update(data[section])
    typescript = "typescript" in deps or (root / "tsconfig.json").is_file()
    lang = "TypeScript" if typescript else "JavaScript"
    name = data.get("name")
    facts = [ProjectFact("project.language.node",
                         f"Node.js {lang} project{f' {name!r}' if name else ''} (package.json).",
                         "module_insight", "package.json")]  # fmt: skip
    frameworks = _found(deps, _NODE_FRAMEWORKS)
    if frameworks:
        facts.append(ProjectFact("project.frameworks.node",
                                 f"Node libraries in use: {', '.join(frameworks)}.",
                                 "module_insight", "package.json", 0.85))  # fmt: skip
    tests = _found(deps, _NODE_TEST)
    found = data.get("scripts")
    scripts: dict[str, object] = found if isinstance(found, dict) else {}
    if tests or (scripts and "test" in scripts):
        how = ", ".join(tests) if tests else f"`{scripts['test']}`"
        facts.append(ProjectFact("project.tests.node", f"Tests run with {how}.",
                                 "preference", "package.json", 0.8))  # fmt: skip
    return facts


def _go(root: Path) -> list[ProjectFact]:
    path = root / "go.mod"
    if not path.is_file():
        return []
    text = _read(root, path)
    module = re.search(r"^\s*module\s+(\S+)", text, re.MULTILINE)
    version = re.search(r"^\s*go\s+(\S+)", text, re.MULTILINE)
    facts = [ProjectFact("project.language.go",
                         f"Go module {module.group(1) if module else '?'}"
                         f"{f' (go {version.group(1)})' if version else ''}.",
                         "module_insight", "go.mod")]  # fmt: skip
    frameworks = sorted({label for key, label in _GO_FRAMEWORKS.items() if key in text})
    if frameworks:
        facts.append(ProjectFact("project.frameworks.go",
                                 f"Go libraries in use: {', '.join(frameworks)}.",
                                 "module_insight", "go.mod", 0.85))  # fmt: skip
    return facts


def _rust(root: Path) -> list[ProjectFact]:
    path = root / "Cargo.toml"
    if not path.is_file():
        return []
    try:
        data = tomllib.loads(_read(root, path))
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError):
        data = {}
    package = data.get("package", {}) if isinstance(data.get("package"), dict) else {}
    deps = set(data.get("dependencies", {}) or {}) | set(data.get("dev-dependencies", {}) or {})
    label = "Rust workspace" if "workspace" in data and not package else "Rust crate"
    name = package.get("name")
    edition = package.get("edition")
    facts = [ProjectFact("project.language.rust",
                         f"{label}{f' {name!r}' if name else ''}"
                         f"{f' (edition {edition})' if edition else ''}.",
                         "module_insight", "Cargo.toml")]  # fmt: skip
    frameworks = _found({d.lower() for d in deps}, _RUST_FRAMEWORKS)
    if frameworks:
        facts.append(ProjectFact("project.frameworks.rust",
                                 f"Rust crates in use: {', '.join(frameworks)}.",
                                 "module_insight", "Cargo.toml", 0.85))  # fmt: skip
    return facts


def _java(root: Path) -> list[ProjectFact]:
    for manifest, tool in (("pom.xml", "Maven"), ("build.gradle", "Gradle"),
                           ("build.gradle.kts", "Gradle")):  # fmt: skip
        path = root / manifest
        if path.is_file():
            text = _read(root, path)
            facts = [ProjectFact("project.language.java", f"Java project built with {tool}.",
                                 "module_insight", manifest)]  # fmt: skip
            frameworks = sorted({lbl for key, lbl in _JAVA_FRAMEWORKS.items() if key in text})
            if frameworks:
                facts.append(ProjectFact("project.frameworks.java",
                                         f"Java libraries in use: {', '.join(frameworks)}.",
                                         "module_insight", manifest, 0.85))  # fmt: skip
            return facts
    return []


def detect_project(root: Path) -> list[ProjectFact]:
    """L0 facts for every ecosystem whose manifest sits at the workspace root."""
    facts: list[ProjectFact] = []
    for detector in (_python, _node, _go, _rust, _java):
        try:
            facts.extend(detector(root))
        # an unreadable manifest is not worth failing the index for, nor one of a shape the
        # detector did not expect: a clone's `dependencies = 5` (TypeError) or `a = [[[[…`
        # (RecursionError) stopped `engram index` with an internal error (stop 30)
        except (OSError, ValueError, TypeError, AttributeError, RecursionError) as exc:
            log.debug("project detection %s failed: %s", detector.__name__, exc)
    return facts
