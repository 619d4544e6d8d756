"""``onrecord ledger run|analyze``: the invoice ledger experiment and its offline audit."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord._saved_episode import refuse_episode_given_as
from onrecord._tables import SplitTable
from onrecord.cli._lines import print_sentence
from onrecord.cli._progress import StepProgress, add_no_progress
from onrecord.cli._render import ablation_table, literal, make_console
from onrecord.domains.ledger import (
    LedgerResult,
    analyze_ledger_dir,
    run_ledger_experiment,
    save_ledger_result,
)
from onrecord.domains.ledger._experiment import LEDGER_STEPS
from onrecord.errors import InputError

__all__ = ["INTERRUPTED", "decision_table", "register"]

INTERRUPTED = 130
"""Exit code after Ctrl-C, as ``onrecord run`` and ``onrecord worldmodel run`` use."""


def register(subparsers: Any) -> None:
    """Add the ``ledger`` subcommand with ``run`` and ``analyze``."""
    parser = subparsers.add_parser(
        "ledger",
        help="the invoice ledger experiment (real SQLite fixture)",
        description="Run the invoice ledger experiment, or re-verify a saved one offline.",
    )
    actions = parser.add_subparsers(dest="ledger_command", metavar="ACTION", required=True)
    run_parser = actions.add_parser(
        "run",
        help="run every variant and save databases, evidence, reports and hashes",
        description="Run every ledger variant with seeds 7 and 8 plus FrozenLake and "
        "CartPole checks; save everything with a sha256 manifest. Exit 0 when "
        "every decision is the one the protocol requires, else 1.",
    )
    run_parser.add_argument("--output-dir", required=True, type=Path, metavar="DIR")
    add_no_progress(run_parser)
    run_parser.set_defaults(func=run)
    analyze_parser = actions.add_parser(
        "analyze",
        help="re-verify hashes and recompute decisions and the ablation",
        description="Check every file against the manifest, reload every record, re-run "
        "the checks and recompute decisions and the ablation. Exit 0 when all "
        "verifies, 3 when anything does not.",
    )
    analyze_parser.add_argument("directory", type=Path, metavar="DIR")
    analyze_parser.set_defaults(func=analyze)


def run(args: argparse.Namespace) -> int:
    """Run, save, print the tables."""
    out: Path = args.output_dir
    if out.exists() and any(out.iterdir()):
        raise InputError(f"--output-dir {out} is not empty; pass a new or empty directory")
    console = make_console()
    # Each episode and native run is a step, then the save. A bar on a terminal and plain
    # lines in a CI log, as `worldmodel run` (a spinner left a log silent for seconds).
    progress = StepProgress(
        Console(stderr=True), "ledger steps", LEDGER_STEPS + 1, enabled=not args.no_progress
    )
    try:
        with progress:
            # "ledger steps 1/24 · correct-seed7-attempt1: accept done", not "… · ledger
            # correct-…": the prefix already says whose steps these are.
            result = run_ledger_experiment(
                out, progress=lambda text: progress.step(text.removeprefix("ledger "))
            )
            save_ledger_result(result, out)
            progress.step("save")
    except KeyboardInterrupt:
        print(
            f"onrecord ledger: interrupted: {out} is incomplete (no manifest.json) and "
            "cannot be analyzed; delete it and run again into a new or empty directory",
            file=sys.stderr,
        )
        return INTERRUPTED
    console.print(decision_table(result))
    console.print(ablation_table(result.ablation()))
    # The path is the user's: "[/]" in it crashed rich's markup parser after a complete
    # run (exit 1, read as reject); quoted, and never wrapped (soft_wrap: rich cut the
    # line where COLUMNS=80 ends), so that the hint can be pasted as it is.
    console.print(
        f"saved to {literal(out)}/ (verify with: onrecord ledger analyze "
        f"{literal(shlex.quote(str(out)))})",
        soft_wrap=True,
    )
    return 0 if result.ok else 1


def analyze(args: argparse.Namespace) -> int:
    """Verify and recompute; print what did not verify."""
    directory: Path = args.directory
    refuse_episode_given_as(directory, "ledger")  # before: its manifest's schema
    if directory.is_dir() and not (directory / "manifest.json").exists():
        raise InputError(
            f"{directory} has no manifest.json: it is not the --output-dir of `onrecord "
            "ledger run`, or that run was interrupted (the manifest is written last)"
        )
    console = make_console()
    analysis = analyze_ledger_dir(directory)
    if analysis.ablation:
        console.print(ablation_table(analysis.ablation))
    # Problems name files found in the directory, i.e. anyone's names: a file under
    # "x[/" crashed rich's markup parser (a traceback and exit 1 instead of 3), and
    # "[bold]" hid part of a name.
    for problem in analysis.problems:
        print_sentence(console, f"[red]problem:[/red] {literal(problem)}")  # a name's lines hang
    verdict = "verified" if analysis.ok else f"{len(analysis.problems)} problem(s)"
    console.print(
        f"{literal(directory)}: {len(analysis.decisions)} decisions recomputed, {verdict}"
    )
    return 0 if analysis.ok else 3


def decision_table(result: LedgerResult) -> SplitTable:
    """Variant × seed × attempt with each grader's decision. A ``SplitTable``: at 80
    columns the four decisions beside a 38-character episode name folded both the
    name ("duplicate_write-seed7-attempt" over "1") and "indetermin" over "ate". The
    decision required is the full policy's, unless marked: in a column of its own it
    made the table too wide for 100 columns, a "part 2 of 2" of it alone."""
    table = SplitTable(
        "episode",
        "final answer",
        "final posting",
        "full policy",
        keys=1,
        title="ledger experiment (full policy: the decision required, unless marked ✗)",
    )
    for episode in result.episodes:
        d = episode.decisions
        table.add_row(
            episode.name,
            d["final_answer"],
            d["final_posting"],
            _required(d["full_policy"], episode.expected),
        )
    for run in result.classic:
        decision = run["decision"].decision
        table.add_row(f"classic {run['name']}", "", "", _required(decision, run["expected"]))
    return table


def _required(decision: str, expected: str) -> str:
    """The full policy's decision, and the one required when that is another."""
    return decision if decision == expected else f"{decision} [red]✗ required {expected}[/red]"
