"""Issue 12 point 6: anchors are validated, once, in the app layer (CLI, LSP, MCP share it).

On the old main ``remember --file nosuch.go``, ``--symbol NoSuchSym`` and ``--line 99999``
all succeeded silently, and ``--symbol invoke`` on click's core.py anchored to a
``typing.overload`` stub instead of the method.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import default_env

from engram.app import Engine
from engram.app.remember import remember
from engram.errors import InvalidInput
from engram.workspace import Workspace

NO_MODEL = {"embed": {"model": "none"}}

CORE = '''import typing as t
from typing import overload


class Context:
    pass


class CliRunner:
    @t.overload
    def invoke(self, cli: str) -> int: ...

    @overload
    def invoke(self, cli: int) -> int: ...

    def invoke(self, cli, args=None):
        """Invokes a command in an isolated environment."""
        return 0

    def isolation(self):
        return None


class Group:
    def invoke(self, ctx):
        return ctx


class Command:
    def invoke(self, ctx):
        return ctx

    def type_cast_value(self, ctx, value):
        return value
'''


@pytest.fixture
def engine(tmp_workspace: Workspace) -> Engine:
    (tmp_workspace.root / "core.py").write_text(CORE)
    with Engine.open(tmp_workspace.root, NO_MODEL) as opened:
        yield opened


def test_a_missing_file_is_refused_unless_about_to_be_created(engine: Engine) -> None:
    with pytest.raises(InvalidInput, match=r"nosuch\.go does not exist"):
        remember(engine, "the retry loop is here", file="nosuch.go")
    made = remember(engine, "the retry loop will be here", file="nosuch.go", allow_missing=True)
    assert made.memory.anchors[0].file == "nosuch.go"


def test_a_file_outside_the_workspace_is_refused(engine: Engine, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.py"
    outside.write_text("x = 1\n")
    with pytest.raises(Exception, match="outside"):
        remember(engine, "x is one", file=str(outside))


def test_lines_outside_the_file_are_refused(engine: Engine) -> None:
    lines = len(CORE.splitlines())
    with pytest.raises(InvalidInput, match=rf"line 99999 is outside core\.py \({lines} lines\)"):
        remember(engine, "a line far away", file="core.py", start_line=99998)
    with pytest.raises(InvalidInput, match=r"outside core\.py"):
        remember(engine, "a range past the end", file="core.py", start_line=3, end_line=lines)
    ok = remember(engine, "the last line", file="core.py", start_line=lines - 1)
    assert ok.memory.anchors[0].start_line == lines - 1


def test_an_unknown_symbol_names_the_closest(engine: Engine) -> None:
    with pytest.raises(
        InvalidInput, match=r"no symbol 'type_cast_valeu' in core\.py; closest: "
    ) as e:
        remember(engine, "casts", file="core.py", symbol="type_cast_valeu")
    assert str(e.value).endswith("closest: Command.type_cast_value (line 33)")
    with pytest.raises(InvalidInput, match="no symbol 'NoSuchSym'"):
        remember(engine, "nothing", file="core.py", symbol="NoSuchSym")


def test_context_refuses_a_symbol_the_file_does_not_define(engine: Engine) -> None:
    """`engram context core.py --symbol type_cast_valeu` gave the file's pack as if the
    focus had worked; the symbol is resolved like an anchor's (closest names on a miss)."""
    from engram.api.declare import Surface
    from engram.api.memories import CONTEXT

    for surface in (Surface.CLI, Surface.MCP):
        bad = CONTEXT.parse({"file": "core.py", "symbol": "type_cast_valeu"}, surface)
        with pytest.raises(InvalidInput, match=r"no symbol 'type_cast_valeu' in core\.py"):
            CONTEXT.execute(engine, bad, surface)
    good = CONTEXT.parse({"file": "core.py", "symbol": "type_cast_value"}, Surface.MCP)
    assert CONTEXT.execute(engine, good, Surface.MCP).text is not None


def test_impact_names_the_implementation_not_an_overload_stub(engine: Engine) -> None:
    """impact resolved the symbol as an anchor does (the implementation) but reported the
    graph's first definition, a stub, as `symbol_info` (MCP and `--json` show its lines)."""
    from engram.app.impact import impact

    engine.codegraph.index()
    report = impact(engine, "core.py", "CliRunner.invoke")
    assert report.symbol_info is not None
    assert (report.symbol_info.start_line, report.symbol_info.end_line) == (16, 18)


def test_the_implementation_wins_over_overload_stubs(engine: Engine) -> None:
    made = remember(engine, "invoke catches exceptions", file="core.py", symbol="CliRunner.invoke")
    anchor = made.memory.anchors[0]
    assert anchor.start_line is not None and CORE.splitlines()[anchor.start_line].strip() == (
        "def invoke(self, cli, args=None):"
    )


def test_an_ambiguous_name_lists_the_candidates(engine: Engine) -> None:
    with pytest.raises(InvalidInput, match=r"'invoke' is ambiguous in core\.py") as e:
        remember(engine, "invoke is tricky", file="core.py", symbol="invoke")
    message = str(e.value)
    for where in ("CliRunner.invoke (line 16)", "Group.invoke (line 25)", "Command.invoke"):
        assert where in message
    assert "line 10" not in message and "line 13" not in message  # stubs are not candidates
    # a line inside one of them settles it
    made = remember(engine, "group invoke", file="core.py", symbol="invoke", start_line=25)
    assert made.memory.anchors[0].start_line == 25


def test_a_symbol_in_a_file_without_a_grammar_is_kept_as_given(engine: Engine) -> None:
    (engine.workspace.root / "notes.txt").write_text("see retry\n")
    made = remember(engine, "retry notes", file="notes.txt", symbol="retry")
    assert made.memory.anchors[0].symbol == "retry"


# ------------------------------------------------------------------ impact FILE:SYMBOL

PROJECT = {
    "pkg/__init__.py": "",
    "pkg/db.py": "def connect():\n    return 1\n\n\ndef unused():\n    return 2\n",
    "pkg/repo.py": (
        "from pkg.db import connect\n\n\ndef load():\n    return connect()\n\n\n"
        "def reload():\n    return connect()\n\n\ndef ping():\n    return connect()\n"
    ),
    "pkg/one.py": "from pkg.db import connect\n\n\ndef once():\n    return connect()\n",
    "pkg/other.py": "import pkg.db\n\n\ndef unrelated():\n    return pkg.db\n",
}


@pytest.fixture
def project(tmp_workspace: Workspace) -> Engine:
    for rel, text in PROJECT.items():
        path = tmp_workspace.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    with Engine.open(tmp_workspace.root, NO_MODEL) as opened:
        opened.codegraph.index()
        yield opened


def test_impact_of_a_symbol_ranks_files_by_its_use(project: Engine) -> None:
    from engram.app.impact import impact

    report = impact(project, "pkg/db.py", "connect")
    users = {r.file for r in report.symbol_references}
    assert users == {"pkg/repo.py", "pkg/one.py"}
    ranked = [r.file for r in report.ranked_files]
    assert ranked[:2] == ["pkg/repo.py", "pkg/one.py"]  # 4 references, then 2
    assert report.ranked_files[0].reasons[0].startswith("uses connect 4x (line 1, 5, 9, 13)")
    scores = [r.score for r in report.ranked_files]
    assert scores == sorted(scores, reverse=True)
    assert all(r.file not in users for r in report.ranked_files[2:])


def test_impact_of_an_unknown_symbol_is_an_error(project: Engine) -> None:
    from engram.app.impact import impact

    with pytest.raises(InvalidInput, match=r"no symbol 'conect' in pkg/db\.py; closest: connect"):
        impact(project, "pkg/db.py", "conect")


def test_cli_impact_leads_with_references_and_refuses_unknown(project: Engine) -> None:
    """Real processes: the text output starts with file:line references; exit 1 when unknown."""
    import subprocess
    import sys

    env = default_env()
    env["ENGRAM_EMBED__MODEL"] = "none"
    root = project.workspace.root
    project.close()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "engram", *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    shown = run("impact", "pkg/db.py:connect")
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == "references to connect (6):", shown.stdout
    assert "  pkg/repo.py:5  calls" in lines and "  pkg/one.py:1  imports" in lines
    ranked = lines[lines.index(next(x for x in lines if x.startswith("impact of"))) + 1 :]
    assert "pkg/repo.py" in ranked[0] and "uses connect 4x" in ranked[0]
    unknown = run("impact", "pkg/db.py:NoSuchSym")
    assert unknown.returncode == 1 and unknown.stdout == ""
    assert unknown.stderr.strip().startswith("engram: error: no symbol 'NoSuchSym' in pkg/db.py")
    assert len(unknown.stderr.strip().splitlines()) == 1
    missing = run("remember", "--file", "nosuch.go", "the retry loop is here")
    assert missing.returncode == 1
    assert missing.stderr.strip() == (
        "engram: error: nosuch.go does not exist (--allow-missing anchors a file you are about to "
        "create)"
    )
    far = run("remember", "--file", "pkg/db.py", "--line", "99999", "far away")
    assert far.returncode == 1 and "line 99999 is outside pkg/db.py (6 lines)" in far.stderr
    made = run("remember", "--file", "nosuch.go", "--allow-missing", "the loop will be here")
    assert made.returncode == 0, made.stderr


def test_cli_impact_after_a_remember_in_a_fresh_clone_sees_the_whole_graph(
    tmp_workspace: Workspace,
) -> None:
    """`remember --symbol` re-indexes only the file it anchors, so in a clone never indexed
    the graph held one file, `engram impact` took it for indexed and reported "references to
    connect (0)"; now it indexes the rest first (once: a completed pass is recorded)."""
    from engram.api.declare import Surface
    from engram.api.workspace import IMPACT, ImpactArgs
    from engram.app.indexing import GRAPH_INDEXED
    from engram.app.state import EngineState

    for rel, text in PROJECT.items():
        path = tmp_workspace.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    with Engine.open(tmp_workspace.root, NO_MODEL) as engine:
        remember(engine, "retries twice", file="pkg/db.py", symbol="connect")
        assert int(engine.codegraph.stats()["files"]) == 1  # what remember saw, no more
        assert EngineState.of(tmp_workspace).get(GRAPH_INDEXED) is None
        args = ImpactArgs(file="pkg/db.py", symbol="connect")  # what `db.py:connect` parses to
        report = IMPACT.execute(engine, args, Surface.CLI)
        assert {r.file for r in report.symbol_references} == {"pkg/repo.py", "pkg/one.py"}
        assert EngineState.of(tmp_workspace).get(GRAPH_INDEXED) is True


# ------------------------------------------------------------------ Go methods: Type.Method

GO_COMMAND = """package cmd

type Command struct{ name string }

type Other struct{}

type Stack[T any] struct{ items []T }

func (c *Command) Execute() error {
	return nil
}

func (o Other) Execute() {
}

func (s *Stack[T]) Push(v T) {
	s.items = append(s.items, v)
}
"""
GO_RUN = "package cmd\n\nfunc run(c *Command) error {\n\treturn c.Execute()\n}\n"


@pytest.fixture
def go_project(tmp_workspace: Workspace) -> Engine:
    """cobra's shape (found by a new user: ``--symbol Command.Execute`` was refused)."""
    root = tmp_workspace.root
    (root / "go.mod").write_text("module example.com/tool\n\ngo 1.22\n")
    (root / "command.go").write_text(GO_COMMAND)
    (root / "run.go").write_text(GO_RUN)
    with Engine.open(root, NO_MODEL) as opened:
        opened.codegraph.index()
        yield opened


def test_a_go_method_is_anchored_by_its_receiver_type(go_project: Engine) -> None:
    made = remember(
        go_project, "Execute runs the tree", file="command.go", symbol="Command.Execute"
    )
    anchor = made.memory.anchors[0]
    assert anchor.symbol == "Command.Execute"
    assert (anchor.start_line, anchor.end_line) == (8, 10)  # 0-based: lines 9-11
    other = remember(go_project, "a value receiver", file="command.go", symbol="Other.Execute")
    assert other.memory.anchors[0].start_line == 12
    generic = remember(
        go_project, "type parameters dropped", file="command.go", symbol="Stack.Push"
    )
    assert generic.memory.anchors[0].start_line == 15
    alone = remember(go_project, "one Push", file="command.go", symbol="Push")
    assert alone.memory.anchors[0].start_line == 15  # the name alone: the one method


def test_a_go_method_name_alone_is_ambiguous_between_receivers(go_project: Engine) -> None:
    with pytest.raises(InvalidInput, match=r"'Execute' is ambiguous in command\.go") as e:
        remember(go_project, "which one", file="command.go", symbol="Execute")
    assert "Command.Execute (line 9), Other.Execute (line 13)" in str(e.value)
    assert str(e.value).endswith("give the qualified name or a line")
    # `engram impact command.go:Execute` takes no line: it said "or a line" (stop 33)
    from engram.app.impact import impact

    with pytest.raises(InvalidInput, match=r"'Execute' is ambiguous") as asked:
        impact(go_project, "command.go", "Execute")
    assert str(asked.value).endswith("; give the qualified name")
    with pytest.raises(InvalidInput, match=r"no symbol 'Command\.Excute'") as typo:
        remember(go_project, "a typo", file="command.go", symbol="Command.Excute")
    assert "Command.Execute (line 9)" in str(typo.value).split("closest: ")[1]


def test_a_go_method_anchored_by_its_name_and_a_line_keeps_its_receiver_type(
    go_project: Engine,
) -> None:
    """Stop 33 (go-chi/chi): `--symbol Flush --line 172` stored the symbol `Flush`, which four
    types define; once the anchored lines changed, the editor put the memory on the first
    `Flush` of the file. The anchor keeps the qualified name the line settled on."""
    from engram.anchors import LineSpan
    from engram.lsp.folder import find_symbol_span, symbols_blocking

    made = remember(go_project, "the value one", file="command.go", symbol="Execute", start_line=12)
    anchor = made.memory.anchors[0]
    assert anchor.symbol == "Other.Execute"
    assert (anchor.start_line, anchor.end_line) == (12, 12)
    # where the editor puts it once its lines no longer match (relocation by the symbol)
    symbols = symbols_blocking(go_project, "command.go", True)
    assert find_symbol_span(symbols, anchor.symbol) == LineSpan(12, 13)
    alone = remember(go_project, "one Push", file="command.go", symbol="Push")
    assert alone.memory.anchors[0].symbol == "Stack.Push"


@pytest.mark.parametrize(
    ("written", "method"),
    [
        ("(*Command).Execute", "Command.Execute"),
        ("(Other).Execute", "Other.Execute"),
        ("(*Stack[T]).Push", "Stack.Push"),
    ],
)
def test_a_go_method_expression_names_the_method(
    go_project: Engine, written: str, method: str
) -> None:
    """`(*Mux).ServeHTTP` is how a Go stack trace names a method: it was "no symbol"."""
    made = remember(go_project, f"pasted {written}", file="command.go", symbol=written)
    assert made.memory.anchors[0].symbol == method


def test_context_focuses_a_go_method_by_its_receiver_type(go_project: Engine) -> None:
    from engram.api.declare import Surface
    from engram.api.memories import CONTEXT

    remember(go_project, "Execute runs the tree", file="command.go", symbol="Command.Execute")
    args = CONTEXT.parse({"file": "command.go", "symbol": "Command.Execute"}, Surface.MCP)
    text = CONTEXT.execute(go_project, args, Surface.MCP).text
    assert text is not None and "Execute runs the tree" in text


def test_impact_of_a_go_method_leads_with_its_references(go_project: Engine) -> None:
    """`engram impact command.go:Command.Execute`, in a real process."""
    import subprocess
    import sys

    env = default_env()
    env["ENGRAM_EMBED__MODEL"] = "none"
    root = go_project.workspace.root
    go_project.close()
    shown = subprocess.run(
        [sys.executable, "-m", "engram", "impact", "command.go:Command.Execute"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:2] == ["references to Command.Execute (1):", "  run.go:4  calls"], shown.stdout
