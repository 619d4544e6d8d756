"""The ``onrecord`` command line (``onrecord --help``)."""

from onrecord.cli.main import main

__all__ = ["main"]
