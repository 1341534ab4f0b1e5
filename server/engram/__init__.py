"""Engram: a code-memory language server.

The package is split by capability (model, store, embed, retrieval, codegraph, history,
observer, lifecycle, mcp, lsp, cli). Each folder exposes a small public surface in its
``__init__``; :class:`engram.app.Engine` composes them and ``engram.app`` holds the use
cases every front end (CLI, LSP, MCP server, hooks) calls.
Nothing heavy is imported here so that ``engram --help`` and LSP ``initialize`` stay fast.
"""

__version__ = "0.1.0"
