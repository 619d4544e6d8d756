"""``onrecord verify FILE``: check a saved record's schema, digest and consistency."""

from __future__ import annotations

import argparse
from typing import Any

from rich.console import Console

from onrecord.cli._progress import CountProgress, add_no_progress
from onrecord.cli._record_files import KINDS
from onrecord.cli._records import Bundle, load_any
from onrecord.cli._render import emit, plain

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    parser = subparsers.add_parser(
        "verify",
        help="verify saved records: evidence, reports, decisions, run directories, ...",
        description="Verify the schema, digest and internal consistency of any file "
        f"onrecord writes: {KINDS}. A file that is not a record (an HTML page, its data, "
        "a foreign file) is refused saying what it is. Exit 0 when every one verifies, 3 "
        "otherwise (the error names the file and what failed). A run directory's "
        "episodes are counted on stderr as they are verified.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    add_no_progress(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Verify each file; stop at the first that fails (its error names the problem)."""
    for path in args.files:
        # Only a run directory uses it: seconds for a few thousand episodes.
        progress = CountProgress(
            Console(stderr=True), "episodes verified", enabled=not args.no_progress
        )
        record = load_any(path, progress)
        if isinstance(record, Bundle):
            emit(plain(f"ok  {path}  {record.kind} ({record.summary})  sha256:{record.digest}"))
        else:
            emit(plain(f"ok  {path}  {type(record).__name__}  sha256:{record.digest}"))
    return 0
