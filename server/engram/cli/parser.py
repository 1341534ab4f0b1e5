"""argparse that fails in one line, and the CLI's exit codes (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

#: Exit codes: 1 = the user's request failed, 2 = bad usage, 70 = internal error (EX_SOFTWARE).
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that points at ``--help``."""

    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message} (see '{self.prog} --help')\n")
        raise SystemExit(EXIT_USAGE)


__all__ = ["EXIT_ERROR", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "EXIT_USAGE", "OneLineParser"]
