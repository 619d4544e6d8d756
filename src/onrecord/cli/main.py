"""Entry point of the ``onrecord`` command (``onrecord = "onrecord.cli.main:main"``), and
``python -m onrecord.cli.main``; the command itself is in ``onrecord.cli._app``."""

from __future__ import annotations

import sys

from onrecord.cli._app import (
    COMMAND_MODULES,
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    build_parser,
    main,
)

__all__ = ["COMMAND_MODULES", "EXIT_ERROR", "EXIT_INTERRUPTED", "build_parser", "main"]

if __name__ == "__main__":
    sys.exit(main())
