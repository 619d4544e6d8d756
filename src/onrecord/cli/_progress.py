"""The ``--no-progress`` option; the progress itself is ``onrecord._progress``, shared
with the Python API (``start_run(..., progress=True)``)."""

from __future__ import annotations

import argparse

from onrecord._progress import ConsoleProgress, CountProgress, StepProgress

__all__ = ["ConsoleProgress", "CountProgress", "StepProgress", "add_no_progress"]


def add_no_progress(parser: argparse.ArgumentParser) -> None:
    """The ``--no-progress`` option every command with progress on stderr takes."""
    parser.add_argument(
        "--no-progress",
        action="store_true",
        help="no progress bar (nor the plain progress lines written when stderr is not a terminal)",
    )
