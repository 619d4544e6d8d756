"""``onrecord gate REPORT --policy POLICY``: the CI gate (exit 0 / 1 / 2)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from onrecord._canonical import atomic_write_bytes, canonical_bytes
from onrecord.cli._records import named, output_path
from onrecord.cli._render import make_console, render_decision
from onrecord.policy import AcceptancePolicy
from onrecord.report import EvaluationReport

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``gate`` subcommand."""
    parser = subparsers.add_parser(
        "gate",
        help="decide accept / reject / indeterminate for a report",
        description="Apply an acceptance policy (JSON saved by onrecord, or TOML with "
        "[[requirements]] tables) to a report. Exit 0 accept, 1 reject, "
        "2 indeterminate, 3 bad input.",
    )
    parser.add_argument("report", metavar="REPORT")
    parser.add_argument("--policy", required=True, metavar="POLICY")
    parser.add_argument("--output", metavar="FILE", help="also save the decision as JSON")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, decide, save, print, exit with the decision's code."""
    output = output_path(args.output, "--output") if args.output else None
    # Errors name the file: with REPORT and POLICY swapped, the message said "schema is
    # 'onrecord.report/v1', expected 'onrecord.policy/v1'", not which file was wrong.
    report = named(Path(args.report), lambda: EvaluationReport.load(args.report))
    policy = named(Path(args.policy), lambda: AcceptancePolicy.load(args.policy))
    decision = policy.evaluate(report)
    if output is not None:  # before printing: a closed stdout must not lose the file
        atomic_write_bytes(output, canonical_bytes(decision.to_dict()) + b"\n")
    render_decision(make_console(), decision)
    return decision.exit_code
