"""Definitions, imports, calls and inheritance per language, and import resolution."""

from __future__ import annotations

import os
import subprocess
import sys

from engram.codegraph import CodeGraph


def deps(graph: CodeGraph, file: str) -> set[str]:
    return set(graph.dependencies(file))


def kinds(graph: CodeGraph, file: str) -> dict[str, str]:
    return {s.qualname: s.kind for s in graph.symbols_in(file)}


def test_python_definitions_imports_calls_inheritance(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "src/pkg/__init__.py": "from .core import Engine\n",
            "src/pkg/core.py": (
                "from pkg.util import helper\n"
                "from . import sub\n"
                "class Base:\n    pass\n"
                "class Engine(Base):\n"
                "    def run(self):\n        return helper(self.step())\n"
                "    def step(self):\n        return 1\n"
                "def top():\n    def inner():\n        pass\n"
            ),
            "src/pkg/util.py": "def helper(x):\n    return x\n",
            "src/pkg/sub/__init__.py": "",
            "src/pkg/sub/deep.py": "from ..util import helper\nimport pkg.core as c\n",
            "app.py": "import pkg\nfrom pkg.sub import deep\n",
        }
    )
    assert kinds(graph, "src/pkg/core.py") == {
        "Base": "class",
        "Engine": "class",
        "Engine.run": "method",
        "Engine.step": "method",
        "top": "function",
        "top.inner": "function",
    }
    assert deps(graph, "src/pkg/core.py") == {"src/pkg/util.py", "src/pkg/sub/__init__.py"}
    assert deps(graph, "src/pkg/__init__.py") == {"src/pkg/core.py"}
    assert deps(graph, "src/pkg/sub/deep.py") == {"src/pkg/util.py", "src/pkg/core.py"}
    assert deps(graph, "app.py") == {"src/pkg/__init__.py", "src/pkg/sub/deep.py"}
    # the call to helper resolves to util.py through the imported name
    refs = graph.symbol_dependents("src/pkg/util.py", "helper")
    assert ("src/pkg/core.py", "calls", 7) in refs
    assert graph.symbol_at("src/pkg/core.py", 7) is not None
    assert graph.symbol_at("src/pkg/core.py", 7).qualname == "Engine.run"  # type: ignore[union-attr]
    assert graph.find_symbol("src/pkg/core.py", "step").qualname == "Engine.step"  # type: ignore[union-attr]


def test_javascript_and_typescript_resolution(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "web/main.ts": (
                "import { Button } from './ui';\n"
                "import util from './lib/util.js';\n"
                "import type { T } from './types';\n"
                "export class App extends Base implements Runnable { run(): void { util(); } }\n"
            ),
            "web/ui/index.tsx": "export function Button() { return <b/>; }\n",
            "web/lib/util.ts": "export default function util() {}\n",
            "web/types.d.ts": "export interface T {}\n",
            "web/legacy.js": "const a = require('./legacy/a.cjs');\nmodule.exports = a;\n",
            "web/legacy/a.cjs": "exports.x = 1;\n",
            "web/esm.mjs": "import { x } from './comp.jsx';\nexport * from './legacy.js';\n",
            "web/comp.jsx": "export const x = () => <div/>;\n",
        }
    )
    assert deps(graph, "web/main.ts") == {"web/ui/index.tsx", "web/lib/util.ts", "web/types.d.ts"}
    assert deps(graph, "web/legacy.js") == {"web/legacy/a.cjs"}
    assert deps(graph, "web/esm.mjs") == {"web/comp.jsx", "web/legacy.js"}
    symbols = {s.qualname: s for s in graph.symbols_in("web/main.ts")}
    assert symbols["App"].kind == "class" and symbols["App"].exported
    assert symbols["App.run"].kind == "method"
    assert {s.name for s in graph.symbols_in("web/ui/index.tsx")} == {"Button"}


def test_go_packages_resolve_through_go_mod(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "go.mod": "module example.com/shop\n\ngo 1.22\n",
            "main.go": (
                'package main\nimport (\n  "fmt"\n  "example.com/shop/store"\n)\n'
                "func main() { fmt.Println(store.Open()) }\n"
            ),
            "store/store.go": (
                "package store\ntype DB struct { Base }\nfunc Open() *DB { return helper() }\n"
            ),
            "store/helper.go": "package store\nfunc helper() *DB { return nil }\n",
        }
    )
    assert deps(graph, "main.go") == {"store/helper.go", "store/store.go"}
    # same-package call without an import
    assert deps(graph, "store/store.go") == {"store/helper.go"}
    assert kinds(graph, "store/store.go") == {"DB": "struct", "Open": "function"}
    refs = graph.symbol_dependents("store/store.go", "Open")
    assert ("main.go", "calls", 6) in refs


GO_METHODS = (
    "package cmd\n"
    "type Command struct{}\n"
    "type Other struct{}\n"
    "type Stack[T any] struct{ items []T }\n"
    "func (c *Command) Execute() error { return nil }\n"
    "func (o Other) Execute() {}\n"
    "func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }\n"
    "func (Stack[T]) Len() int { return 0 }\n"
    "func Execute() {}\n"
)


def test_go_methods_are_named_by_their_receiver_type(make_graph) -> None:  # type: ignore[no-untyped-def]
    """A Go method is declared at top level; its receiver's type (no ``*``, no type
    parameters) names it as nesting names a Python or Rust method: ``Command.Execute``."""
    graph = make_graph(
        {
            "cmd/command.go": GO_METHODS,
            "cmd/run.go": "package cmd\nfunc run(c *Command) { c.Execute() }\n",
        }
    )
    symbols = {
        (s.qualname, s.name, s.kind, s.start_line) for s in graph.symbols_in("cmd/command.go")
    }
    assert {
        ("Command.Execute", "Execute", "method", 5),
        ("Other.Execute", "Execute", "method", 6),
        ("Stack.Push", "Push", "method", 7),
        ("Stack.Len", "Len", "method", 8),
        ("Execute", "Execute", "function", 9),
    } <= symbols
    other = graph.find_symbol("cmd/command.go", "Other.Execute")
    assert other is not None and other.start_line == 6
    # references are still found by the method's own name
    assert ("cmd/run.go", "calls", 2) in graph.symbol_dependents(
        "cmd/command.go", "Command.Execute"
    )


def test_rust_modules(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "Cargo.toml": '[package]\nname = "demo"\nedition = "2021"\n',
            "src/lib.rs": "mod net;\npub mod util;\nuse crate::net::client::Client;\n",
            "src/net/mod.rs": "pub mod client;\n",
            "src/net/client.rs": (
                "use super::super::util::{fmt_addr};\n"
                "pub struct Client;\n"
                "trait Connect { fn go(&self); }\n"
                "impl Connect for Client { fn go(&self) { fmt_addr(); } }\n"
            ),
            "src/util.rs": "pub fn fmt_addr() {}\n",
        }
    )
    assert deps(graph, "src/lib.rs") == {"src/net/mod.rs", "src/util.rs", "src/net/client.rs"}
    assert deps(graph, "src/net/mod.rs") == {"src/net/client.rs"}
    assert deps(graph, "src/net/client.rs") == {"src/util.rs"}
    assert kinds(graph, "src/net/client.rs") == {
        "Client": "struct",
        "Connect": "trait",
        "Connect.go": "method",
        "Client.go": "method",
    }


def test_java_packages(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "src/main/java/com/acme/App.java": (
                "package com.acme;\nimport com.acme.model.User;\nimport com.acme.util.*;\n"
                "public class App extends Base implements Runnable {\n"
                "  public void run() { new User(); Helper.go(); }\n}\n"
            ),
            "src/main/java/com/acme/Base.java": "package com.acme;\npublic class Base {}\n",
            "src/main/java/com/acme/model/User.java": (
                "package com.acme.model;\npublic class User {}\n"
            ),
            "src/main/java/com/acme/util/Helper.java": (
                "package com.acme.util;\npublic class Helper { static void go() {} }\n"
            ),
        }
    )
    assert deps(graph, "src/main/java/com/acme/App.java") == {
        "src/main/java/com/acme/model/User.java",
        "src/main/java/com/acme/util/Helper.java",
        "src/main/java/com/acme/Base.java",  # same package, through `extends Base`
    }
    assert kinds(graph, "src/main/java/com/acme/App.java") == {"App": "class", "App.run": "method"}


def test_an_import_two_roots_answer_means_one_file_whatever_the_hash_seed() -> None:
    """Two copies of a package (pip's test data has simplewheel-1.0/ and -2.0/): the graph
    used to pick one by string-set order, so the same tree gave different graphs per process."""
    script = (
        "from engram.codegraph.resolve import ImportResolver\n"
        "from engram.codegraph.extract import ImportRef\n"
        "files = ['a-1.0/pkg/__init__.py', 'a-2.0/pkg/__init__.py', 'user/setup.py']\n"
        "files += [f'filler{i}/mod{i}/__init__.py' for i in range(40)]\n"
        "print(ImportResolver(files).resolve('python', 'user/setup.py', ImportRef('pkg')))\n"
    )
    answers = {
        subprocess.run(
            [sys.executable, "-c", script],
            env={**os.environ, "PYTHONHASHSEED": str(seed)},
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        for seed in range(6)
    }
    assert answers == {"['a-1.0/pkg/__init__.py']\n"}


def test_extraction_pauses_the_collector_and_leaves_it_as_it_found_it() -> None:
    """extract() reads a file's matches with the cyclic collector off (its temporaries
    are freed by reference counting) and gives it back as it was, even when it fails."""
    import gc

    import pytest
    from tree_sitter import Parser

    from engram.codegraph import extract as extract_module
    from engram.codegraph.languages import LanguageRegistry, language_for

    spec = language_for("m.py")
    assert spec is not None
    loaded = LanguageRegistry().get(spec)
    assert loaded is not None
    tree = extract_module.parse(Parser(), loaded, b"class A:\n    def f(self):\n        g()\n")
    seen: list[bool] = []
    original = extract_module._collect_calls

    def spy(matches: extract_module.Matches, facts: extract_module.FileFacts) -> None:
        seen.append(gc.isenabled())
        original(matches, facts)

    was_enabled = gc.isenabled()
    try:
        extract_module._collect_calls = spy  # type: ignore[assignment]
        gc.enable()
        facts = extract_module.extract(loaded, tree)
        assert gc.isenabled() and seen == [False]
        assert [d.qualname for d in facts.definitions] == ["A", "A.f"]
        assert [(c.name, c.caller) for c in facts.calls] == [("g", 1)]
        gc.disable()  # someone else paused it: it stays paused
        extract_module.extract(loaded, tree)
        assert not gc.isenabled()

        def broken(matches: extract_module.Matches, facts: extract_module.FileFacts) -> None:
            raise RuntimeError("grammar bug")

        extract_module._collect_calls = broken  # type: ignore[assignment]
        gc.enable()
        with pytest.raises(RuntimeError):
            extract_module.extract(loaded, tree)
        assert gc.isenabled()
    finally:
        extract_module._collect_calls = original  # type: ignore[assignment]
        if was_enabled:
            gc.enable()
        else:
            gc.disable()
