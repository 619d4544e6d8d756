"""The ``onrecord`` command line (``onrecord --help``)."""

# From _app, not from the ``main`` module: importing the package must leave
# ``onrecord.cli.main`` unimported, or ``python -m onrecord.cli.main`` warns (runpy).
from onrecord.cli._app import main

__all__ = ["main"]
