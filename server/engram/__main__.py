"""``python -m engram``: the same entry point as the ``engram`` console script.

Editors start the server as ``python -m engram serve`` so that only a Python interpreter
(not a script on PATH) has to be found.
"""

from engram.cli.entry import main

raise SystemExit(main())
