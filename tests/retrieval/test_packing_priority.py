"""Issue 12 point 4: packing respects priority, on small repositories like the ones it was
found on (a Go file with a long anchored gotcha; a Python method with three Critical items).

On the old main the anchored gotcha of ``completions.go`` (112 tokens) was cut to a citation
at budgets 100, 200 and 300 while a gotcha about another file got text under "Relevant",
and at 400 tokens the three Critical items of ``type_cast_value`` were citations only while a
Relevant item got its full text (the tiers were given fixed shares of the budget).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.conftest import default_env

from engram.app import Engine
from engram.app.recall import context
from engram.app.remember import remember
from engram.retrieval import ContextPack, Level, Tier, estimate_tokens
from engram.workspace import Workspace

NO_MODEL = {"embed": {"model": "none"}}

GO_SOURCE = """package cobra

// GenBashCompletion writes the bash completion script.
func (c *Command) GenBashCompletion(w io.Writer) error {
\treturn genBash(c, w, false)
}

func genBash(c *Command, w io.Writer, withDesc bool) error {
\treturn nil
}
"""
LONG_GOTCHA = (
    "Completion reads COMP_WORDS directly. So a command that rewrites os.Args before "
    "Execute breaks bash completion silently: every flag after the rewritten "
    "position completes to nothing. Keep os.Args untouched in main; completions_test.go "
    "only covers the untouched case."
)


@pytest.fixture
def go_repo(tmp_workspace: Workspace) -> Path:
    root = tmp_workspace.root
    (root / "completions.go").write_text(GO_SOURCE)
    (root / "command.go").write_text("package cobra\n\ntype Command struct{}\n")
    with Engine.open(root, NO_MODEL) as engine:
        remember(engine, LONG_GOTCHA, type="gotcha", file="completions.go", start_line=3)
        remember(
            engine,
            "command.go: completions of hidden commands are skipped on purpose.",
            type="gotcha",
            file="command.go",
            start_line=2,
        )
    return root


def _critical_item(pack: ContextPack, memory_text: str):  # type: ignore[no-untyped-def]
    found = [i for i in pack.items if i.memory.content == memory_text]
    assert found, pack.text
    return found[0]


def test_long_anchored_gotcha_is_rendered_when_its_text_fits(go_repo: Path) -> None:
    with Engine.open(go_repo, NO_MODEL) as engine:
        full_cost = estimate_tokens(
            next(
                i.text
                for i in context(engine, file="completions.go", budget_tokens=5000).items
                if i.memory.content == LONG_GOTCHA
            )
        )
        assert 100 < full_cost < 150  # the 112-token gotcha
        for budget in (200, 300):
            pack = context(engine, file="completions.go", budget_tokens=budget, record=False)
            item = _critical_item(pack, LONG_GOTCHA)
            assert item.tier is Tier.CRITICAL and item.level is Level.FULL, (budget, pack.text)
            assert LONG_GOTCHA.split(":")[0] in pack.text
            assert pack.tokens <= budget
        tight = context(engine, file="completions.go", budget_tokens=100, record=False)
        item = _critical_item(tight, LONG_GOTCHA)
        # the full text cannot fit in 100 tokens at all: its first sentence does
        assert item.tier is Tier.CRITICAL and item.level is Level.SUMMARY, tight.text
        lower = [i for i in tight.items if i.tier in (Tier.RELEVANT, Tier.BACKGROUND)]
        assert all(i.tokens <= item.tokens for i in lower), tight.text
        assert tight.tokens <= 100


PY_SOURCE = '''class Parameter:
    def process_value(self, ctx, value):
        return self.type_cast_value(ctx, value)

    def type_cast_value(self, ctx, value):
        """Convert and validate a value against the option's type."""
        if value is None:
            return () if self.multiple or self.nargs == -1 else None
        return self.type(value, self, ctx)
'''
CRITICAL_ON_SYMBOL = [
    (
        "gotcha",
        "type_cast_value returns an empty tuple, not None, for a missing value when the "
        "parameter is multiple or takes nargs=-1; a test for `is None` misses it.",
    ),
    (
        "dead_end",
        "Converting values in process_value before type_cast_value was tried to support "
        "lazy defaults: it converted defaults twice and was reverted.",
    ),
    (
        "error_pattern",
        "'TypeError: object of type int has no len()' from type_cast_value means nargs was "
        "set on an option whose default is a scalar; give a tuple default.",
    ),
]


@pytest.fixture
def click_repo(tmp_workspace: Workspace) -> Path:
    root = tmp_workspace.root
    (root / "core.py").write_text(PY_SOURCE)
    (root / "types.py").write_text("class ParamType:\n    def convert(self, value):\n        ...\n")
    with Engine.open(root, NO_MODEL) as engine:
        for kind, text in CRITICAL_ON_SYMBOL:
            remember(engine, text, type=kind, file="core.py", symbol="type_cast_value")
        remember(
            engine,
            "ParamType.convert in types.py is called by type_cast_value for every value, "
            "defaults included, so it must accept values that are already converted; the "
            "built-in types all do and custom types written for click 7 often do not. "
            "Values of nargs options arrive one at a time.",
            type="module_insight",
            file="types.py",
        )
    return root


def test_three_critical_items_of_a_symbol_get_their_text_first(click_repo: Path) -> None:
    with Engine.open(click_repo, NO_MODEL) as engine:
        pack = context(
            engine, file="core.py", symbol="type_cast_value", budget_tokens=400, record=False
        )
    assert pack.tokens <= 400
    critical = [i for i in pack.items if i.tier is Tier.CRITICAL]
    assert sorted(i.memory.content for i in critical) == sorted(t for _, t in CRITICAL_ON_SYMBOL)
    assert all(i.level is Level.FULL for i in critical), pack.text
    for _, text in CRITICAL_ON_SYMBOL:
        assert text in pack.text.replace("\n  ", "\n")


def test_cli_text_is_what_the_budget_counts(go_repo: Path) -> None:
    """The CLI writes the pack's text as it is: the count is taken on that output."""
    import subprocess
    import sys

    env = default_env()
    env["ENGRAM_EMBED__MODEL"] = "none"
    for budget in ("100", "200"):
        done = subprocess.run(
            [sys.executable, "-m", "engram", "context", "completions.go", "--budget", budget],
            cwd=go_repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert estimate_tokens(done.stdout) <= int(budget), done.stdout
        assert done.stdout.index("## Critical") < done.stdout.find("## Relevant") or (
            "## Relevant" not in done.stdout
        )
        if budget == "200":
            assert "Keep os.Args untouched in main" in done.stdout
