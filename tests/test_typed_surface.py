"""No ``Any`` in the public signatures of server/engram (issue 14), as a ratchet.

``engram.app``, ``engram.api`` and the small foundation modules are checked by mypy itself
(``disallow_any_explicit`` in pyproject.toml). Elsewhere this test lists every public
function or method whose parameters or return mention ``Any`` and compares the list with
``tests/typed_surface_allowlist.txt``: a new one fails, and so does an entry that no longer
uses ``Any`` (delete its line: the list only shrinks).
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "server" / "engram"
ALLOWLIST = Path(__file__).with_name("typed_surface_allowlist.txt")


def _mentions_any(node: ast.AST | None) -> bool:
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "Any":
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            words = sub.value.replace("[", " ").replace("]", " ").replace(",", " ").split()
            if "Any" in words:
                return True
    return False


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def public_signatures_with_any() -> set[str]:
    found: set[str] = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        tree = ast.parse(path.read_text(encoding="utf-8"))

        def visit(body: list[ast.stmt], prefix: str, module: str = module) -> None:
            for node in body:
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and _public(node.name):
                    args = node.args
                    params = [*args.posonlyargs, *args.args, *args.kwonlyargs]
                    params += [a for a in (args.vararg, args.kwarg) if a is not None]
                    if any(_mentions_any(a.annotation) for a in params) or _mentions_any(
                        node.returns
                    ):
                        found.add(f"{module}:{prefix}{node.name}")
                elif isinstance(node, ast.ClassDef) and _public(node.name):
                    visit(node.body, f"{prefix}{node.name}.", module)

        visit(tree.body, "")
    return found


def test_no_new_any_in_public_signatures() -> None:
    allowed = {
        line.strip()
        for line in ALLOWLIST.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    found = public_signatures_with_any()
    new = sorted(found - allowed)
    gone = sorted(allowed - found)
    assert not new, f"public signatures with Any (type them): {new}"
    assert not gone, f"typed now, delete from {ALLOWLIST.name}: {gone}"
