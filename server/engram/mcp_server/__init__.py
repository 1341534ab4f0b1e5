"""Engram's own MCP server (``engram mcp-serve``): the declared use cases as MCP tools."""

from engram.mcp_server.server import build_server, run_stdio

__all__ = ["build_server", "run_stdio"]
