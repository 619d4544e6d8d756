"""``onrecord report RUN``: a self-contained HTML report of a run (or a report file)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from onrecord.cli._output_path import output_path
from onrecord.cli._render import emit
from onrecord.errors import InputError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``report`` subcommand."""
    parser = subparsers.add_parser(
        "report",
        help="write a self-contained HTML report of a run",
        description="Write one HTML file (no network access needed to view it): the "
        "decision and findings first, pass rates with intervals, pass^k, a "
        "per-task table and, per episode, the action timeline, row diff, audit "
        "history and failing checks.",
    )
    parser.add_argument("source", metavar="RUN", help="run directory or report.json")
    parser.add_argument("-o", "--out", help="HTML file (default RUN/report.html)")
    parser.add_argument("--grading", help="a regrade name under RUN/regrades/ to show")
    parser.add_argument(
        "--episodes",
        default="auto",
        help="episodes with full detail (every episode is listed either way): auto "
        "(all up to 300, else the failing and incomplete ones, up to 1,000), all, "
        "failing, or a number (failing first)",
    )
    parser.add_argument("--plots", type=Path, help="directory of .svg/.png plots to embed")
    parser.add_argument("--json", help="also save the page's data as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Write the report and print where it is."""
    from onrecord.html import write_report

    out = output_path(args.out, "-o/--out") if args.out is not None else None
    data_json = output_path(args.json, "--json") if args.json is not None else None
    if out is not None and data_json is not None and out.resolve() == data_json.resolve():
        raise InputError(f"-o and --json name the same file {out}; give two file names")
    path = write_report(
        args.source,
        out,
        grading=args.grading,
        episodes=args.episodes,
        plots=args.plots,
        data_json=data_json,
    )
    emit(f"wrote {path}" + ("" if data_json is None else f" and its data {data_json}"))
    return 0
