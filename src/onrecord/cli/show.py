"""``onrecord show FILE``: a readable table of a saved record."""

from __future__ import annotations

import argparse
from typing import Any

from onrecord.cli._records import load_any
from onrecord.cli._render import make_console, render_episode, render_policy, render_report
from onrecord.episode import EpisodeEvidence
from onrecord.report import EvaluationReport

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``show`` subcommand."""
    parser = subparsers.add_parser(
        "show",
        help="print a saved record as tables",
        description="Verify a saved record and print it as tables.",
    )
    parser.add_argument("file", metavar="FILE")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Render whichever record the file holds."""
    record = load_any(args.file)
    console = make_console()
    if isinstance(record, EpisodeEvidence):
        render_episode(console, record)
    elif isinstance(record, EvaluationReport):
        render_report(console, record)
    else:
        render_policy(console, record)
    return 0
