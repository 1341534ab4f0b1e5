"""The ``engram`` command line: memory commands for people, hooks and scripts.

:mod:`engram.cli.main` builds the argument parser with nothing heavy imported and only the
chosen command's parser built (docs/cli.md, "Start-up"); :mod:`engram.cli.commands` runs a
subcommand and is imported only once one was chosen.
"""
