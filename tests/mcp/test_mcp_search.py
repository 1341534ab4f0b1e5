"""Tool search ranking: words, typos, context (file, phase), popularity, module history, hook."""

from __future__ import annotations

import time
from collections.abc import Mapping

from engram.mcphub.registry import ToolInfo
from engram.mcphub.search import SearchContext, ToolSearch, tokenize


def catalogue() -> list[ToolInfo]:
    def tool(server: str, name: str, description: str, *params: str) -> ToolInfo:
        schema = {"type": "object", "properties": {p: {"type": "string"} for p in params}}
        return ToolInfo(server, name, description, schema)

    return [
        tool(
            "playwright",
            "browser_take_screenshot",
            "Take a screenshot of the current page",
            "filename",
        ),
        tool("playwright", "browser_click", "Click an element on the web page", "selector"),
        tool("postgres", "run_query", "Run a read-only SQL query against the database", "sql"),
        tool("postgres", "list_tables", "List tables in the database schema"),
        tool(
            "github", "create_issue", "Create a new issue in a GitHub repository", "title", "body"
        ),
        tool("github", "search_code", "Search code across GitHub repositories", "query"),
        tool("git", "git_log", "Shows the commit logs", "repo_path"),
        tool("git", "git_diff", "Shows differences between branches or commits", "target"),
        tool("time", "get_current_time", "Get current time in a specific timezone", "timezone"),
        tool("docs", "get_library_docs", "Fetch up-to-date documentation for a library", "library"),
        tool("pytest", "run_tests", "Run the test suite and report failures", "path"),
    ]


def names(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [h.tool.qualified_name for h in hits]


def test_tokenize_splits_identifiers_and_stems() -> None:
    assert tokenize("browser_takeScreenshot of Pages") == ["browser", "take", "screenshot", "page"]


def test_words_find_the_right_tool() -> None:
    search = ToolSearch(catalogue())
    assert (
        names(search.search("take a screenshot of the page", k=3))[0]
        == "playwright__browser_take_screenshot"
    )
    assert names(search.search("sql query", k=3))[0] == "postgres__run_query"
    assert names(search.search("open a github issue", k=3))[0] == "github__create_issue"
    assert names(search.search("commit history log", k=3))[0] == "git__git_log"


def test_typos_still_match() -> None:
    search = ToolSearch(catalogue())
    assert names(search.search("screenshoot", k=1)) == ["playwright__browser_take_screenshot"]
    assert names(search.search("timezon", k=1)) == ["time__get_current_time"]


def test_unrelated_query_returns_a_short_list_and_k_is_respected() -> None:
    search = ToolSearch(catalogue())
    assert search.search("zzzzqqqq", k=5) == []
    assert len(search.search("the", k=15)) <= 15
    assert len(search.search("run", k=2)) == 2


def test_file_and_phase_context_lift_matching_tools() -> None:
    search = ToolSearch(catalogue())
    in_sql = search.search("list", context=SearchContext(file="db/schema.sql"), k=3)
    assert names(in_sql)[0] == "postgres__list_tables"
    validating = search.search("", context=SearchContext(phase="validate"), k=3)
    assert "pytest__run_tests" in names(validating)


def test_popularity_breaks_ties_but_does_not_beat_relevance() -> None:
    popular = {"git__git_diff": 50}
    search = ToolSearch(catalogue(), popularity=popular)
    assert names(search.search("shows commit", k=2))[0] == "git__git_diff"
    assert names(search.search("screenshot", k=1)) == ["playwright__browser_take_screenshot"]
    # with nothing else to go on, the popular tools come first
    assert names(search.search("", k=1)) == ["git__git_diff"]


def test_module_history_and_memory_hook_lift_tools_that_helped_here() -> None:
    def module_usage(module: str) -> Mapping[str, int]:
        return {"docs__get_library_docs": 3} if module == "src/api" else {}

    seen: list[SearchContext] = []

    def hook(ctx: SearchContext, query: str) -> Mapping[str, float]:
        seen.append(ctx)
        return {"github__search_code": 1.0}

    search = ToolSearch(catalogue(), module_usage=module_usage, memory_hook=hook)
    hits = search.search("find", context=SearchContext(file="src/api/routes.py"), k=5)
    assert {"docs__get_library_docs", "github__search_code"} <= set(names(hits))
    assert seen and seen[0].file == "src/api/routes.py"
    assert "module" in next(h for h in hits if h.tool.name == "get_library_docs").reasons


def test_search_over_1000_tools_is_fast() -> None:
    tools = [
        ToolInfo(
            f"s{i // 5}", f"tool_{i}_{w}", f"Does {w} things with resource {i}", {"type": "object"}
        )
        for i, w in enumerate(["read", "write", "list", "delete", "query"] * 200)
    ]
    search = ToolSearch(tools)
    start = time.perf_counter()
    for query in ["read resource", "delete things", "query 42", "writ", "list resources 7"] * 4:
        assert search.search(query, k=15)
    per_query = (time.perf_counter() - start) / 20
    assert per_query < 0.25  # goal 50 ms p95, measured by scripts/bench/mcp.py
