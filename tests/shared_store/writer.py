"""One "machine" writing to the shared store: remembers COUNT memories through the engine and
prints each acknowledged id on its own line as soon as ``remember`` returned it.

Usage: python writer.py WORKSPACE NAME COUNT  (store settings come from the environment)
"""

from __future__ import annotations

import random
import sys

from engram.app import Engine
from engram.app.remember import remember


def main() -> int:
    workspace, name, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    rng = random.Random(name)
    letters = "bcdfghjklmnprstvz"
    with Engine.open(workspace) as engine:
        for i in range(count):
            words = " ".join(
                "".join(rng.choice(letters) + rng.choice("aeiou") for _ in range(3))
                for _ in range(12)
            )
            result = remember(engine, f"{name} learned {i}: {words}", type="module_insight")
            print(result.memory.id, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
