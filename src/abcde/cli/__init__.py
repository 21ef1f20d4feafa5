"""The command line: a thin layer over the library's public functions."""

from abcde.cli.commands import main

__all__ = ["main"]
