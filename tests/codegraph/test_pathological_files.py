"""Generated files nested far deeper than code ever is (docs/codegraph.md "Pathological
files").

A 200 KB JS object nested 50,000 levels (a tree 100,000 deep) cost 5.5 CPU s of
tree-sitter queries on its own: the query cursor counts a match's start depth in 16 bits,
and below 65,535 its states never retire. The queries now start no match below that depth
(every shallower file gets exactly its old matches); a deeper file is indexed down to it
and noted, the note shown by ``engram index`` and ``engram doctor``. Nothing crashes and
nothing recurses. How long it takes is printed by ``scripts/bench/pathological.py``, not
judged here.
"""

from __future__ import annotations

import json

import pytest
from tree_sitter import Parser

from engram.cli.main import main
from engram.codegraph.extract import DEPTH_NOTE, MAX_QUERY_DEPTH, deeper_than, extract, parse
from engram.codegraph.languages import LanguageRegistry, language_for
from engram.workspace import Workspace

#: name -> text: each nests past the queries' depth (a level takes one or two tree levels)
TOO_DEEP = {
    "deep_object.js": "const x = " + "{a:" * 50_000 + "1" + "}" * 50_000 + ";\n",
    "deep_object.ts": "const x = " + "{a:" * 50_000 + "1" + "}" * 50_000 + ";\n",
    "deep_list.py": "y = " + "[" * 70_000 + "1" + "]" * 70_000 + "\n",
    "deep_parens.go": "package p\n\nvar y = " + "(" * 70_000 + "1" + ")" * 70_000 + "\n",
}
#: calls nested 30,000 deep (90 KB): 60,000 tree levels, within the queries' depth
DEEP_CALLS = {
    "deep_calls.py": "def g(x):\n    return x\n\n\ny = " + "f(" * 30_000 + "g(1)" + ")" * 30_000,
    "deep_calls.js": "function g(x) { return x; }\nconst y = "
    + "f(" * 30_000
    + "g(1)"
    + ")" * 30_000,
    "deep_calls.rs": "fn main() { let y = " + "f(" * 30_000 + "g(1)" + ")" * 30_000 + "; }\n",
    "deep_calls.java": "class A { int y = " + "f(" * 30_000 + "g(1)" + ")" * 30_000 + "; }\n",
}


def _facts(name: str, text: str):  # type: ignore[no-untyped-def]
    spec = language_for(name)
    assert spec is not None
    loaded = LanguageRegistry().get(spec)
    assert loaded is not None
    tree = parse(Parser(), loaded, text.encode())
    return tree, extract(loaded, tree)


@pytest.mark.parametrize("name", sorted(TOO_DEEP))
def test_a_file_deeper_than_the_queries_go_is_noted(name: str) -> None:
    tree, facts = _facts(name, TOO_DEEP[name])
    assert deeper_than(tree.root_node, MAX_QUERY_DEPTH)
    assert facts.depth_limited


@pytest.mark.parametrize("name", sorted(DEEP_CALLS))
def test_calls_nested_30000_deep_are_read_to_the_bottom(name: str) -> None:
    tree, facts = _facts(name, DEEP_CALLS[name])
    assert not facts.depth_limited
    assert not deeper_than(tree.root_node, MAX_QUERY_DEPTH)
    # the innermost call (~60,000 levels down) is found: nothing within the limit is lost
    assert {"f", "g"} <= {call.name for call in facts.calls}, facts.calls[:5]


def test_shallow_files_are_never_walked_for_depth() -> None:
    tree, facts = _facts("small.py", "def f(x):\n    return [[[x]]]\n")
    assert not deeper_than(tree.root_node, MAX_QUERY_DEPTH) and not facts.depth_limited
    assert [d.name for d in facts.definitions] == ["f"]


def test_index_and_doctor_name_the_partly_indexed_files(
    tmp_workspace: Workspace, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_workspace.root
    for name, text in {**TOO_DEEP, **DEEP_CALLS}.items():
        (root / name).write_text(text)
    (root / "app.py").write_text("from deep_calls import g\n\n\ndef run():\n    return g(2)\n")
    monkeypatch.setenv("ENGRAM_EMBED__MODEL", "none")

    assert main(["index", "--no-embed", "--workspace", str(root)]) == 0
    said = capsys.readouterr().err
    assert f"{len(TOO_DEEP)} files only partly indexed (engram doctor lists them)" in said, said
    assert f"deep_list.py: {DEPTH_NOTE}" in said, said

    assert main(["doctor", "--json", "--workspace", str(root)]) in (0, 1)
    checks = {c["name"]: c for c in json.loads(capsys.readouterr().out)["checks"]}
    graph = checks["code graph"]
    assert graph["facts"]["files"] == len(TOO_DEEP) + len(DEEP_CALLS) + 1, graph
    assert graph["facts"]["partial_files"] == len(TOO_DEEP), graph
    assert f"deep_list.py ({DEPTH_NOTE})" in graph["detail"], graph
