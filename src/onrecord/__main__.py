"""``python -m onrecord``: the ``onrecord`` command, with the same exit codes."""

from __future__ import annotations

import sys

from onrecord.cli._app import main

if __name__ == "__main__":
    sys.exit(main())
