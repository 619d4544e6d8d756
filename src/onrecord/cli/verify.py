"""``onrecord verify FILE``: check a saved record's schema, digest and consistency."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rich.console import Console

from onrecord.cli._app import EXIT_ERROR, print_error, refusal
from onrecord.cli._progress import CountProgress, add_no_progress
from onrecord.cli._record_files import KINDS
from onrecord.cli._records import Bundle, load_any
from onrecord.cli._render import emit, plain
from onrecord.episode import EpisodeEvidence
from onrecord.episode._blobs import find_blob_dir, referenced_blobs
from onrecord.errors import OnrecordError
from onrecord.runner._interrupts import raise_noted_interrupt

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``verify`` subcommand."""
    parser = subparsers.add_parser(
        "verify",
        help="verify saved records: evidence, reports, decisions, run directories, ...",
        description="Verify the schema, digest and internal consistency of any file "
        f"onrecord writes: {KINDS}. A file that is not a record (an HTML page, its data, "
        "a foreign file) is refused saying what it is. Every file is verified and gets a "
        "line: ok on stdout, or its error (naming the file and what failed) on stderr. "
        "Exit 0 when every one verifies, 3 otherwise. A run directory's "
        "episodes are counted on stderr as they are verified.",
    )
    parser.add_argument("files", nargs="+", metavar="FILE")
    add_no_progress(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Verify each file and say its verdict: ``ok`` on stdout, or its error on stderr.
    Every file is verified, whichever fail: stopping at the first left the ones after it
    unchecked, and a CI log said nothing of them. Exit 3 when any failed."""
    failed = 0
    for path in args.files:
        try:
            _verify(path, args.no_progress)
        except (OnrecordError, OSError) as exc:
            raise_noted_interrupt()  # a Ctrl-C something swallowed ends the command here
            failed += 1
            print_error("verify", refusal(exc))
    if failed and len(args.files) > 1:
        print(f"onrecord verify: {failed} of {len(args.files)} did not verify", file=sys.stderr)
    return EXIT_ERROR if failed else 0


def _verify(path: str, no_progress: bool) -> None:
    # Only a run directory uses it: seconds for a few thousand episodes.
    progress = CountProgress(Console(stderr=True), "episodes verified", enabled=not no_progress)
    record = load_any(path, progress)
    if isinstance(record, Bundle):
        emit(plain(f"ok  {path}  {record.kind} ({record.summary})  sha256:{record.digest}"))
    else:
        emit(plain(f"ok  {path}  {type(record).__name__}  sha256:{record.digest}"))
    if isinstance(record, EpisodeEvidence):
        _note_unreferenced_blobs(path, record)


def _note_unreferenced_blobs(path: str, episode: EpisodeEvidence) -> None:
    """Whole blobs the evidence does not reference verify (an interrupted or concurrent
    save leaves them, and they cannot change the record), but are said: a reviewer
    seeing more files than the record uses should know why, and that they may go."""
    folder = find_blob_dir(path)
    try:
        entries = sorted(entry.name for entry in folder.iterdir())
    except OSError:  # no folder: the evidence has no blobs
        return
    used = {meta["sha256"] for meta in referenced_blobs(episode.data)}
    extra = [name for name in entries if name not in used]
    if extra:
        print(
            f"onrecord verify: note: {folder} holds {len(extra)} blob file"
            f"{'' if len(extra) == 1 else 's'} the evidence does not use, left by an "
            f"interrupted (or running) save: the next save to {path} removes them, or "
            "delete them",
            file=sys.stderr,
        )
