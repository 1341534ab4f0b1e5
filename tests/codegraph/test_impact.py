"""Impact reports: dependents with depth and path, tests, co-change, no-history/no-import cases."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from engram.codegraph import ImpactAnalyzer, rank_related_files
from engram.codegraph.impact import CoChangeSource, is_test_file

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/db.py": "def connect():\n    return 1\n\ndef unused():\n    return 2\n",
    "pkg/repo.py": "from pkg.db import connect\n\ndef load():\n    return connect()\n",
    "pkg/api.py": "from pkg import repo\n\ndef handler():\n    return repo.load()\n",
    "pkg/cli.py": "from pkg.api import handler\n",
    "tests/test_db.py": "def test_nothing():\n    pass\n",
    "tests/test_repo.py": "from pkg.repo import load\n\ndef test_load():\n    load()\n",
    "README.md": "# demo\n",
    "assets/style.css": "body { color: red; }\n",
}


class FakeHistory:
    def __init__(self, partners: dict[str, list[tuple[str, float, int]]]) -> None:
        self.partners = partners

    def cochange_partners(self, file: str, k: int = 10) -> list[tuple[str, float, int]]:
        return self.partners.get(file, [])[:k]


def test_dependents_with_depth_path_and_tests(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(PROJECT)
    report = ImpactAnalyzer(graph).impact("pkg/db.py")
    direct = {d.file: d for d in report.direct_dependents}
    assert set(direct) == {"pkg/repo.py"}
    transitive = {d.file: d for d in report.transitive_dependents}
    assert transitive["pkg/api.py"].depth == 2
    assert transitive["pkg/api.py"].path == ["pkg/db.py", "pkg/repo.py", "pkg/api.py"]
    assert transitive["pkg/cli.py"].depth == 3
    assert abs(transitive["pkg/api.py"].weight - 0.81) < 1e-6
    # tests: one importing a dependent, one by naming convention only
    assert report.tests == ["tests/test_db.py", "tests/test_repo.py"]
    assert 0 < report.score <= 1
    assert report.impacted_files[0] == "pkg/db.py"
    assert "pkg/cli.py" in report.impacted_files
    assert any("co-change" in note for note in report.notes)
    data = report.to_dict()
    assert data["direct_dependents"][0]["file"] == "pkg/repo.py"


def test_symbol_level_impact(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(PROJECT)
    analyzer = ImpactAnalyzer(graph)
    report = analyzer.impact("pkg/db.py", "connect")
    assert report.symbol_info is not None and report.symbol_info.start_line == 1
    assert {(r.file, r.kind) for r in report.symbol_references} >= {
        ("pkg/repo.py", "calls"),
        ("pkg/repo.py", "imports"),
    }
    unused = analyzer.impact("pkg/db.py", "unused")
    assert unused.symbol_references == []
    assert any("no resolved references" in n for n in unused.notes)
    missing = analyzer.impact("pkg/db.py", "nope")
    assert any("not found" in n for n in missing.notes)


def test_ranking_without_history_uses_graph_and_naming(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(PROJECT)
    ranked = rank_related_files("pkg/db.py", graph, None, k=5)
    files = [f for f, _ in ranked]
    assert files[0] in ("pkg/repo.py", "tests/test_db.py")
    assert {"pkg/repo.py", "tests/test_db.py"} <= set(files)
    assert all(score > 0 for _, score in ranked)


def test_ranking_for_a_file_without_imports_uses_cochange(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(PROJECT)
    history = FakeHistory({"assets/style.css": [("README.md", 0.5, 4), ("pkg/api.py", 0.9, 9)]})
    assert isinstance(history, CoChangeSource)
    analyzer = ImpactAnalyzer(graph, cochange=history)
    report = analyzer.impact("assets/style.css")
    assert not report.in_graph or report.direct_dependents == []
    assert [p.file for p in report.cochange] == ["README.md", "pkg/api.py"]
    assert [r.file for r in report.ranked_files][:2] == ["pkg/api.py", "README.md"]
    # agreeing evidence ranks above a single source
    both = FakeHistory({"pkg/db.py": [("pkg/repo.py", 0.5, 5), ("pkg/cli.py", 0.5, 5)]})
    ranked = rank_related_files("pkg/db.py", graph, both, k=3)
    assert ranked[0][0] == "pkg/repo.py"
    assert set(analyzer.import_neighbours("pkg/repo.py")) == {
        "pkg/db.py",
        "pkg/api.py",
        "tests/test_repo.py",
    }


class FakeRanking:
    """A learned ranking: README.md first whatever the structure says; records its prior."""

    def __init__(self) -> None:
        self.priors: list[dict[str, float]] = []

    def rank_with_prior(
        self,
        file: str,
        prior: Mapping[str, float] | None = None,
        k: int = 10,
        *,
        structure_of: Callable[[str], Mapping[str, float]] | None = None,
    ) -> list[tuple[str, float, int]]:
        self.priors.append(dict(prior or {}))
        return [("README.md", 0.95, 7), *((f, 0.5 * p, 0) for f, p in (prior or {}).items())]


def test_the_learned_ranking_is_passed_not_probed(make_graph) -> None:  # type: ignore[no-untyped-def]
    """``ranking=`` decides with the structural evidence as its prior; a co-change source
    that merely has a ``rank_with_prior`` method is not asked for it (nothing is looked up
    by name: docs/codegraph.md)."""
    graph = make_graph(PROJECT)
    ranking = FakeRanking()
    history = FakeHistory({"pkg/db.py": [("pkg/cli.py", 0.9, 9)]})
    report = ImpactAnalyzer(graph, cochange=history, ranking=ranking).impact("pkg/db.py")
    assert report.ranked_files[0].file == "README.md"
    assert report.ranked_files[0].reasons == ["co-changed 7x"]
    assert "pkg/repo.py" in ranking.priors[0]  # the import edge became the prior
    assert "pkg/cli.py" not in [r.file for r in report.ranked_files]  # history decided
    ranked = rank_related_files("pkg/db.py", graph, history, k=5, ranking=ranking)
    assert ranked[0][0] == "README.md"
    # the same object as ``cochange`` only: its partners are evidence, the method unused
    history.rank_with_prior = ranking.rank_with_prior  # type: ignore[attr-defined]
    calls = len(ranking.priors)
    plain = rank_related_files("pkg/db.py", graph, history, k=5)
    assert len(ranking.priors) == calls and "README.md" not in [f for f, _ in plain]
    assert "pkg/cli.py" in [f for f, _ in plain]


def test_unknown_file_is_reported_not_raised(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(PROJECT)
    report = ImpactAnalyzer(graph).impact("nowhere.py")
    assert not report.in_graph
    assert report.direct_dependents == [] and report.score == 0.0


def test_test_file_conventions() -> None:
    for path in ("tests/x.py", "a/test_x.py", "x_test.go", "src/x.test.ts", "FooTest.java"):
        assert is_test_file(path), path
    assert not is_test_file("src/contest.py")


def test_neighbours_both_directions(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(PROJECT)
    assert set(graph.neighbours(["pkg/repo.py"])) == {
        "pkg/db.py",
        "pkg/api.py",
        "tests/test_repo.py",
    }
    deep = graph.neighbours(["pkg/db.py"], depth=2)
    assert deep["pkg/repo.py"] == 0.9 and abs(deep["pkg/api.py"] - 0.81) < 1e-6
    assert graph.neighbours(["missing.py"]) == {}


GO_COMMANDS = {
    "go.mod": "module example.com/app\n\ngo 1.22\n",
    "cmd/command.go": (
        "package cmd\n"
        "type Command struct{}\n"
        "type Other struct{}\n"
        "func (c *Command) Execute() error { return nil }\n"
        "func (o Other) Execute() {}\n"
        "func Execute() {}\n"
    ),
    # on a variable: the graph has its name, not its type, so it counts (by name)
    "cmd/run.go": "package cmd\nfunc run(c *Command) error { return c.Execute() }\n",
    # on the type itself: the method's, whatever else is called Execute
    "cmd/expr.go": "package cmd\nfunc expr(c *Command) { (*Command).Execute(c) }\n",
    # a bare call is the package's function: a Go method is always called on something
    "cmd/bare.go": "package cmd\nfunc start() { Execute() }\n",
    # another type named in the call
    "cmd/other.go": "package cmd\nfunc other(o Other) { Other.Execute(o) }\n",
    # the package's function through its import
    "main.go": 'package main\nimport "example.com/app/cmd"\nfunc main() { cmd.Execute() }\n',
}


def test_a_methods_references_leave_out_what_the_graph_can_tell_is_not_it(make_graph) -> None:  # type: ignore[no-untyped-def]
    """References were found by the bare name (``Execute``), so ``Command.Execute`` listed
    the package function's calls and ``Other.Execute``'s too (docs/codegraph.md)."""
    graph = make_graph(GO_COMMANDS)
    report = ImpactAnalyzer(graph).impact("cmd/command.go", "Command.Execute")
    refs = {(r.file, r.kind, r.line) for r in report.symbol_references}
    assert refs == {("cmd/run.go", "calls", 2), ("cmd/expr.go", "calls", 2)}
    assert any("1 of 2 references are calls of 'Execute' on a variable" in n for n in report.notes)
    assert {d.file for d in report.direct_dependents} == {"cmd/run.go", "cmd/expr.go"}
    # the function of that name keeps every reference the graph resolved to it by name
    function = ImpactAnalyzer(graph).impact("cmd/command.go", "Execute")
    assert {"cmd/bare.go", "main.go"} <= {r.file for r in function.symbol_references}


def test_a_python_methods_references_are_not_its_namesake_functions(make_graph) -> None:  # type: ignore[no-untyped-def]
    graph = make_graph(
        {
            "core.py": "class Engine:\n    def run(self):\n        pass\n\ndef run():\n    pass\n",
            "app.py": "from core import Engine, run\n\nrun()\nEngine().run()\n",
        }
    )
    method = ImpactAnalyzer(graph).impact("core.py", "Engine.run")
    assert {(r.file, r.kind, r.line) for r in method.symbol_references} == {("app.py", "calls", 4)}
    function = ImpactAnalyzer(graph).impact("core.py", "run")
    assert ("app.py", "calls", 3) in {(r.file, r.kind, r.line) for r in function.symbol_references}


GO_ROUTER = {
    "go.mod": "module example.com/chi\n\ngo 1.22\n",
    # two files of one package each define a ServeHTTP method, as go-chi/chi's chain.go
    # (ChainHandler) and mux.go (Mux) do; chain.go is indexed first
    "chain.go": "package chi\ntype ChainHandler struct{}\nfunc (c *ChainHandler) ServeHTTP() {}\n",
    "mux.go": (
        "package chi\ntype Mux struct{}\nfunc (mx *Mux) ServeHTTP() {}\n"
        "func NewRouter() *Mux { return &Mux{} }\n"
    ),
    "middleware/sunset_test.go": (
        "package middleware\n"
        'import "example.com/chi"\n'
        "func TestSunset() { r := chi.NewRouter(); r.ServeHTTP() }\n"
    ),
    "middleware/typed.go": (
        "package middleware\n"
        'import "example.com/chi"\n'
        "func typed(c *chi.ChainHandler) { chi.ChainHandler.ServeHTTP(c) }\n"
    ),
}


def test_a_go_method_gets_the_calls_its_name_resolved_to_a_sibling_file(make_graph) -> None:  # type: ignore[no-untyped-def]
    """Stop 33 on go-chi/chi: a call by the name resolves to one file of the package, the
    first that defines it, so `impact mux.go:Mux.ServeHTTP` found 1 reference of 125 while
    chain.go's ChainHandler.ServeHTTP got them all."""
    graph = make_graph(GO_ROUTER)
    assert graph.package_files("mux.go") == ["chain.go"]
    assert graph.package_files("middleware/typed.go") == ["middleware/sunset_test.go"]
    mux = ImpactAnalyzer(graph).impact("mux.go", "Mux.ServeHTTP")
    refs = {(r.file, r.line) for r in mux.symbol_references}
    assert ("middleware/sunset_test.go", 3) in refs
    assert ("middleware/typed.go", 3) not in refs  # the call names the other type
    assert any("on a variable or field, matched by the name" in n for n in mux.notes)
    chain = ImpactAnalyzer(graph).impact("chain.go", "ChainHandler.ServeHTTP")
    assert ("middleware/sunset_test.go", 3) in {(r.file, r.line) for r in chain.symbol_references}
