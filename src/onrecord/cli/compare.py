"""``onrecord compare A B``: paired comparison of two reports."""

from __future__ import annotations

import argparse
from typing import Any

from onrecord._canonical import atomic_write_bytes
from onrecord.cli._decisions import comparison_record
from onrecord.cli._records import output_path
from onrecord.cli._render import emit, make_console, render_comparison
from onrecord.compare import compare_sources, load_source
from onrecord.errors import InputError, OnrecordError

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``compare`` subcommand."""
    parser = subparsers.add_parser(
        "compare",
        help="paired comparison of two reports (McNemar, bootstrap)",
        description="Pair trials by case and repeat; exact McNemar p-value per check and a "
        "paired bootstrap interval per measure. Refuses (exit 3) when the locks differ or "
        "a run directory is missing planned episodes.",
    )
    parser.add_argument(
        "report_a", metavar="A", help="report file, run directory or RUN/regrades/NAME"
    )
    parser.add_argument("report_b", metavar="B")
    parser.add_argument(
        "--json",
        metavar="FILE",
        help="also save the comparison as JSON (with schema and digest: `onrecord verify` "
        "reads it)",
    )
    parser.add_argument(
        "--html",
        metavar="FILE",
        help="also write a self-contained HTML page "
        "(written even when the comparison is refused, with the reasons)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Compare and print. A and B are report files, run directories or regrade
    directories; an incomplete run is refused, naming its missing episodes."""
    html = output_path(args.html, "--html") if args.html else None
    json = output_path(args.json, "--json") if args.json else None
    if html is not None and json is not None and html.resolve() == json.resolve():
        raise InputError(f"--html and --json name the same file {html}; give two file names")
    if html is not None:
        from onrecord.html import write_comparison
        from onrecord.html._compare import failed_comparison_page

        try:
            emit(f"wrote {write_comparison(args.report_a, args.report_b, html)[0]}")
        except OnrecordError as exc:
            # An interrupted run (no report.json) is refused too: the page says why,
            # rather than leave no page, or last time's, under that name.
            page = failed_comparison_page(args.report_a, args.report_b, str(exc))
            atomic_write_bytes(html, page.encode())
            emit(f"wrote {html}")
            raise
    comparison = compare_sources(load_source(args.report_a), load_source(args.report_b))
    if json is not None:  # before printing: a closed stdout must not lose the file
        atomic_write_bytes(json, comparison_record(comparison))  # `onrecord verify` reads it
    render_comparison(make_console(), comparison)
    return 0
