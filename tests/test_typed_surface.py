"""No ``Any`` in the public signatures of server/engram (issue 14).

mypy's ``disallow_any_explicit`` (pyproject.toml) refuses a written ``Any`` in the
packages it covers; this test holds every module, whatever mypy's settings, to the
narrower rule that matters at the seams: no public function or method whose parameters
or return mention ``Any``, directly or through an alias (``X = Any``,
``X: TypeAlias = dict[str, Any]``; the package targets Python 3.11, so no ``type X``
statement), whether defined in that module or
imported from another one. ``tests/typed_surface_allowlist.txt`` is the ratchet: it is
empty, and an entry may only be removed.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "engram"
ALLOWLIST = Path(__file__).with_name("typed_surface_allowlist.txt")


def _mentions(node: ast.AST | None, names: frozenset[str]) -> bool:
    """Whether an annotation names ``Any`` or one of ``names`` (aliases of it)."""
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id in names:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr in names:
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            text = sub.value
            for mark in "[],|().":
                text = text.replace(mark, " ")
            if names & set(text.split()):
                return True
    return False


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _trees() -> dict[str, ast.Module]:
    return {
        _module_name(p): ast.parse(p.read_text(encoding="utf-8"))
        for p in sorted(PACKAGE.rglob("*.py"))
    }


def _imported(tree: ast.Module, module: str) -> list[tuple[str, str, str]]:
    """``(local name, source module, source name)`` of every ``from X import y``."""
    out: list[tuple[str, str, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = node.module or ""
            if node.level:
                base = module.split(".")[: -node.level] if node.level else []
                source = ".".join([*base, source] if source else base)
            for alias in node.names:
                out.append((alias.asname or alias.name, source, alias.name))
    return out


def any_aliases(trees: dict[str, ast.Module]) -> dict[str, frozenset[str]]:
    """Per module: the names that stand for ``Any`` or a type built from it there."""
    local: dict[str, set[str]] = {m: {"Any"} for m in trees}
    changed = True
    while changed:  # an alias of an alias, or one imported from another module
        changed = False
        for module, tree in trees.items():
            names = local[module]
            for node in tree.body:
                targets: list[str] = []
                value: ast.AST | None = None
                if isinstance(node, ast.Assign):
                    targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    value = node.value
                elif (
                    isinstance(node, ast.AnnAssign)
                    and isinstance(node.target, ast.Name)
                    # ``X: TypeAlias = ...`` (a variable annotated ``X: Any`` is not an alias)
                    and _mentions(node.annotation, frozenset({"TypeAlias"}))
                ):
                    targets, value = [node.target.id], node.value
                new = {t for t in targets if t not in names}
                if new and _mentions(value, frozenset(names)):
                    names |= new
                    changed = True
            for name, source, original in _imported(tree, module):
                if source in local and original in local[source] and name not in names:
                    names.add(name)
                    changed = True
    return {m: frozenset(n) for m, n in local.items()}


def public_signatures_with_any() -> set[str]:
    trees = _trees()
    aliases = any_aliases(trees)
    found: set[str] = set()
    for module, tree in trees.items():
        names = aliases[module]

        def visit(
            body: list[ast.stmt], prefix: str, names: frozenset[str] = names, module: str = module
        ) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
                    args = node.args
                    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                    params += [a for a in (args.vararg, args.kwarg) if a is not None]
                    if any(_mentions(a.annotation, names) for a in params) or _mentions(
                        node.returns, names
                    ):
                        found.add(f"{module}:{prefix}{node.name}")
                elif isinstance(node, ast.ClassDef) and _public(node.name):
                    visit(node.body, f"{prefix}{node.name}.")

        visit(tree.body, "")
    return found


def _allowed() -> set[str]:
    return {
        line.strip()
        for line in ALLOWLIST.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }


def test_no_any_in_public_signatures() -> None:
    found = sorted(public_signatures_with_any() - _allowed())
    assert not found, f"public signatures with Any (type them): {found}"


def test_the_allowlist_is_empty() -> None:
    """Every entry was typed (issue 14); a new one needs a type, not a line here."""
    assert not _allowed(), f"{ALLOWLIST.name} must stay empty: {sorted(_allowed())}"


def _scan(source: str, module: str = "engram.demo") -> set[str]:
    trees = {module: ast.parse(source)}
    aliases = any_aliases(trees)
    found: set[str] = set()
    for node in trees[module].body:
        if isinstance(node, ast.FunctionDef) and (
            _mentions(node.returns, aliases[module])
            or any(_mentions(a.annotation, aliases[module]) for a in node.args.args)
        ):
            found.add(node.name)
    return found


def test_aliases_of_any_are_caught() -> None:
    source = """
from typing import Any, TypeAlias
import typing
Blob = Any
Row: TypeAlias = dict[str, Any]
Rows = list[Row]
Opaque = typing.Any
count: Any = 0
def a(x: Blob) -> None: ...
def b() -> Rows: ...
def c(x: "Row | None") -> None: ...
def d(x: Opaque) -> None: ...
def e(x: typing.Any) -> None: ...
def fine(x: dict[str, object]) -> int: ...
def also_fine(x: int = count) -> None: ...
"""
    assert _scan(source) == {"a", "b", "c", "d", "e"}


def test_an_alias_imported_from_another_module_is_caught() -> None:
    trees = {
        "engram.types": ast.parse("from typing import Any\nLoose = dict[str, Any]\n"),
        "engram.user": ast.parse(
            "from engram.types import Loose\nfrom .types import Loose as L2\n"
            "def f(x: Loose) -> L2: ...\n"
        ),
    }
    aliases = any_aliases(trees)
    assert {"Loose", "L2"} <= aliases["engram.user"]
