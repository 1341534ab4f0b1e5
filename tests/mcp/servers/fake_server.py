"""A small MCP server for the hub's tests, launched over stdio by the tests.

Modes (first argument):
- ``ok`` (default): a FastMCP-style server with a few tools, including ones that misbehave
  on purpose (``crash`` exits the process mid-call, ``hang`` never answers, ``slow`` sleeps).
- ``junk``: not an MCP server: prints garbage lines and keeps running.
- ``exit``: exits at once with an error (a server that cannot start).

``--tools N`` adds N extra generated tools; ``--name NAME`` sets the server name;
``--http PORT`` serves streamable HTTP on ``127.0.0.1:PORT/mcp`` instead of stdio; the env
variable ``FAKE_PIDFILE`` (if set) gets this process's pid appended, so tests can check
which processes were started and that none survive.
"""

from __future__ import annotations

import os
import sys
import time


def _record_pid() -> None:
    path = os.environ.get("FAKE_PIDFILE")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")


def main(argv: list[str]) -> None:
    _record_pid()
    mode = argv[0] if argv and not argv[0].startswith("--") else "ok"
    if mode == "exit":
        sys.stderr.write("fake server: refusing to start\n")
        raise SystemExit(3)
    if mode == "junk":
        while True:
            sys.stdout.write("this is not json-rpc\n")
            sys.stdout.flush()
            time.sleep(0.05)
    extra = int(argv[argv.index("--tools") + 1]) if "--tools" in argv else 0
    name = argv[argv.index("--name") + 1] if "--name" in argv else "fake"

    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer(name)

    @server.tool(description="Echo the given text back unchanged.")
    def echo(text: str) -> str:
        return text

    @server.tool(description="Add two integers and return the sum.")
    def add(a: int, b: int) -> int:
        return a + b

    @server.tool(description="Report which environment variables the server can see.")
    def env_names() -> list[str]:
        return sorted(os.environ)

    @server.tool(description="Return the value of one environment variable.")
    def env_value(name: str) -> str:
        return os.environ.get(name, "")

    @server.tool(description="Crash the server process in the middle of the call.")
    def crash() -> str:
        os._exit(1)

    @server.tool(description="Never answer (the client must time out).")
    def hang() -> str:
        while True:
            time.sleep(1)

    @server.tool(description="Sleep for the given seconds, then answer.")
    def slow(seconds: float) -> str:
        time.sleep(seconds)
        return f"slept {seconds}"

    @server.tool(description="Fail with an error result that mentions a precondition.")
    def fail() -> str:
        raise ToolError("the dev server must be running before screenshots can be taken")

    @server.tool(description="Return this server process id.")
    def pid() -> int:
        return os.getpid()

    for i in range(extra):

        def make(i: int) -> None:
            def generated(value: str) -> str:
                return f"{name}-{i}:{value}"

            server.tool(name=f"gen_{i}", description=f"Generated tool number {i} of {name}.")(
                generated
            )

        make(i)

    if "--http" in argv:  # streamable HTTP on 127.0.0.1:PORT/mcp instead of stdio
        server.run("streamable-http", port=int(argv[argv.index("--http") + 1]))
    else:
        server.run("stdio")


if __name__ == "__main__":
    main(sys.argv[1:])
