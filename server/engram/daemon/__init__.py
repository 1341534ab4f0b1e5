"""One warm engine process per workspace, shared by every front end (docs/engine.md).

Editor windows (``engram serve``), the MCP server, CLI commands and the agents' hook drain
each used to open their own :class:`~engram.app.Engine`: their own LanceDB, model and
snapshot, seconds of imports per CLI call and hundreds of MB per window. Here one process,
``engram engine`` (hidden), holds the engine of one workspace; front ends reach it over a
local socket only the user can open, forward a request and print or show the answer, and
fall back to working in-process when it cannot be reached.

* ``address``: where an engine listens (per-user runtime directory, keyed by workspace).
* ``wire``: the versioned, newline-delimited JSON protocol.
* ``client``: connect, or start the engine race-free, and call it (standard library only,
  so a forwarding CLI imports almost nothing).
* ``server``: the engine process itself; ``handlers``: what it answers (the front ends'
  code it runs is handed in by ``engram.cli.engine_commands``: no front end is imported).

Nothing is imported here: ``engram.daemon.client`` must stay cheap to import.
"""
