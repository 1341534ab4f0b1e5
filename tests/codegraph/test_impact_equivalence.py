"""Impact answers from the closure in one query and remembers them per graph version
(docs/codegraph.md, "At 50,000 files"): the reports must be the ones the row-by-row code gave.

``data/impact_golden.json`` holds the SHA-256 of the canonical JSON of the reports of every
file (and a symbol of every module) of the fixture below as main at 36d02cb wrote them,
before the closure was read in one query (with its symbol users taken in path order, the
one fix of results made with it); regenerate it only for an intended change of results:
``python tests/codegraph/test_impact_equivalence.py > tests/codegraph/data/impact_golden.json``
(``--reports`` prints the reports themselves, to compare two versions by eye).
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from pathlib import Path

from engram.codegraph import CodeGraph, ImpactAnalyzer
from engram.jsontypes import JsonObject
from engram.workspace import Workspace

GOLDEN = Path(__file__).parent / "data" / "impact_golden.json"
MODULES = 40


def fixture_files() -> dict[str, str]:
    """A layered package (each module imports and calls up to three earlier ones, so
    paths reach depth 3 and hubs have many dependents), tests named after every third
    module and a test importing a hub."""
    files: dict[str, str] = {"app/__init__.py": ""}
    for i in range(MODULES):
        deps = sorted({j for j in (i - 1, i // 2, (i * 7) % max(i, 1)) if 0 <= j < i})
        lines = [f"from app.m{j} import f{j}, Base{j}" for j in deps]
        base = f"Base{deps[0]}" if deps else "object"
        lines += [
            "",
            f"class Base{i}({base}):",
            "    pass",
            "",
            f"def f{i}():",
            *(f"    f{j}()" for j in deps),
            "    return 1",
            "",
        ]
        files[f"app/m{i}.py"] = "\n".join(lines)
        if i % 3 == 0:
            test = f"from app.m{i} import f{i}\n\ndef test_it():\n    f{i}()\n"
            files[f"tests/test_m{i}.py"] = test
    files["tests/test_hub.py"] = "import app.m0\nimport app.m1\n"
    return files


class FixedHistory:
    """Co-change partners by a fixed rule: every module changes with its neighbours."""

    def cochange_partners(self, file: str, k: int = 10) -> list[tuple[str, float, int]]:
        if not file.startswith("app/m"):
            return []
        i = int(file.removeprefix("app/m").removesuffix(".py"))
        out = [(f"app/m{j}.py", round(1.0 / (1 + abs(i - j)), 3), 1 + (i + j) % 4)
               for j in (i - 2, i + 1, i + 5) if 0 <= j < MODULES]  # fmt: skip
        return out[:k]


def reports(graph: CodeGraph) -> dict[str, JsonObject]:
    """Every file's report, without and with history, and a symbol of every module."""
    plain, history = ImpactAnalyzer(graph), ImpactAnalyzer(graph, cochange=FixedHistory())
    out: dict[str, JsonObject] = {}
    for path, *_ in graph.files():
        out[path] = plain.impact(path).to_dict()
        out[f"{path} +history"] = history.impact(path).to_dict()
        if path.startswith("app/m"):
            i = path.removeprefix("app/m").removesuffix(".py")
            out[f"{path}::f{i}"] = history.impact(path, f"f{i}").to_dict()
    return out


def build(root: Path) -> CodeGraph:
    for rel, text in fixture_files().items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    graph = CodeGraph(Workspace.open(root))
    graph.index()
    return graph


def normal(data: object) -> object:
    """JSON as written (tuples become lists)."""
    return json.loads(json.dumps(data, sort_keys=True))


def digests(data: dict[str, JsonObject]) -> dict[str, str]:
    """Each report's SHA-256 over its canonical JSON (sorted keys, no spaces)."""
    return {
        key: hashlib.sha256(
            json.dumps(report, sort_keys=True, separators=(",", ":")).encode()
        ).hexdigest()
        for key, report in data.items()
    }


def test_impact_reports_are_the_ones_the_row_by_row_code_gave(tmp_path: Path) -> None:
    graph = build(tmp_path)
    try:
        got = digests(reports(graph))
        again = digests(reports(graph))  # answered from what was remembered
    finally:
        graph.close()
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))
    assert sorted(got) == sorted(expected)
    assert [key for key in expected if got[key] != expected[key]] == []
    assert again == got


def test_remembered_dependents_follow_edits_from_this_and_other_processes(
    tmp_path: Path,
) -> None:
    graph = build(tmp_path)
    other = CodeGraph(Workspace.open(tmp_path))  # another process's connection
    try:
        before = {d[0] for d in graph.dependents("app/m39.py")}
        assert before == {"tests/test_m39.py"}
        # m39 becomes a dependency of a new importer, written through this graph
        (tmp_path / "app/extra.py").write_text("from app.m39 import f39\n", encoding="utf-8")
        graph.reindex_file("app/extra.py")
        assert {d[0] for d in graph.dependents("app/m39.py")} == before | {"app/extra.py"}
        # and through the other connection: this one must not answer from memory
        assert {d[0] for d in graph.dependents("app/m38.py", 1)} == {"app/m39.py"}
        (tmp_path / "app/extra2.py").write_text("from app.m38 import f38\n", encoding="utf-8")
        other.reindex_file("app/extra2.py")
        assert "app/extra2.py" in {d[0] for d in graph.dependents("app/m38.py", 1)}
        # a caller's mutation of an answer never reaches the next answer
        first = graph.dependents("app/m0.py")
        first[0][3].append("bogus")
        assert "bogus" not in graph.dependents("app/m0.py")[0][3]
        # a shallower question is answered from the deeper one, nearest first
        deep = graph.dependents("app/m0.py")
        shallow = graph.dependents("app/m0.py", 2)
        assert shallow == [d for d in deep if d[1] <= 2]
    finally:
        other.close()
        graph.close()


if __name__ == "__main__":  # writes the golden file's content (see the module docstring)
    with tempfile.TemporaryDirectory() as tmp:
        built = build(Path(tmp))
        try:
            found = reports(built)
            out = normal(found) if "--reports" in sys.argv else digests(found)
            sys.stdout.write(json.dumps(out, indent=1, sort_keys=True) + "\n")
        finally:
            built.close()
