"""``onrecord compare A B``: paired comparison of two reports."""

from __future__ import annotations

import argparse
from typing import Any

from onrecord._canonical import atomic_write_bytes, canonical_bytes
from onrecord.cli._render import make_console, render_comparison
from onrecord.compare import compare_sources, load_source

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
    parser.add_argument("--json", metavar="FILE", help="also save the comparison as JSON")
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
    if args.html:
        from onrecord.html import write_comparison

        print(f"wrote {write_comparison(args.report_a, args.report_b, args.html)[0]}")
    comparison = compare_sources(load_source(args.report_a), load_source(args.report_b))
    render_comparison(make_console(), comparison)
    if args.json:
        atomic_write_bytes(args.json, canonical_bytes(comparison.to_dict()) + b"\n")
    return 0
