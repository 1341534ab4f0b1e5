"""The ``engram`` command line: memory commands for people, hooks and scripts.

:mod:`engram.cli.main` builds the argument parser with nothing heavy imported (``engram
--help`` must answer in well under 0.3 s); :mod:`engram.cli.commands` runs a subcommand and
is imported only once one was chosen.
"""
