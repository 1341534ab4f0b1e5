"""Issue 12: a default flip on one anchor, remembered and consolidated through the real
``engram`` console script (each command its own process)."""

from __future__ import annotations

import json

from engram.workspace import Workspace

from .conftest import RunCli, needs_store

pytestmark = needs_store

OLD = (
    "CliRunner.invoke catches exceptions by default (catch_exceptions=True), so a failing "
    "command shows up only in result.exception"
)
NEW = (
    "CliRunner.invoke never catches exceptions (catch_exceptions=False): a failing command "
    "raises straight into the test"
)


def _anchor(ws: Workspace) -> list[str]:
    (ws.root / "testing.py").write_text(
        "class CliRunner:\n    def invoke(self, cli, catch_exceptions=True):\n        pass\n"
    )
    return ["--file", "testing.py", "--symbol", "CliRunner.invoke"]


def test_remember_links_a_default_flip_on_one_symbol_for_review(
    cli: RunCli, tmp_workspace: Workspace
) -> None:
    where = _anchor(tmp_workspace)
    first = cli("remember", "--type", "gotcha", *where, OLD)
    assert first.code == 0, first.err
    second = cli("remember", "--type", "gotcha", *where, NEW)
    assert second.code == 0, second.err
    assert "contradicts" in second.err and "catch_exceptions" in second.err
    review = json.loads(cli("list", "--json", "--review").out)
    assert [m["content"] for m in review["memories"]] == [NEW]
