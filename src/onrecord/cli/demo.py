"""``onrecord demo``: the main job on the embedded default (SQLite files, local worker
processes): every remittance reference agent through the run machinery, the invoice
ledger experiment, tables in the terminal and HTML reports on disk."""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord._progress import CountProgress, note
from onrecord.cli._lines import print_sentence
from onrecord.cli._render import ablation_table as ledger_ablation_table
from onrecord.cli._render import literal, make_console
from onrecord.cli.ledger import INTERRUPTED
from onrecord.cli.ledger import decision_table as ledger_decision_table
from onrecord.domains.ledger import run_ledger_experiment, save_ledger_result
from onrecord.domains.remittance import AGENTS, ablation_table, suite_from_reports, suite_table
from onrecord.errors import InputError
from onrecord.html import write_comparison, write_report
from onrecord.report import EvaluationReport
from onrecord.runner import JobResult, ProcessPoolExecutor, RunResult, plan_run, start_run
from onrecord.runner import Progress as RunProgress
from onrecord.runner._interrupts import interrupts_kept

__all__ = ["register"]

MARKER = ".onrecord-demo"


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo",
        help="run the built-in demonstration and write its reports",
        description="Run every remittance reference agent (3 repeats of 33 tasks, 2 worker "
        "processes) and the invoice ledger experiment; print agent × decision "
        "tables and write JSON and HTML reports to --output-dir. Exit 0 when "
        "every decision is the one the agent must get.",
    )
    parser.add_argument(
        "--output-dir",
        default=Path("demo-output"),
        type=Path,
        metavar="DIR",
        help="new or empty directory, or an earlier demo's, which is replaced "
        "(default demo-output)",
    )
    # Checked here, before the output directory is touched: a mistyped `--repeats 0` used
    # to delete the previous demo's output and only then fail.
    parser.add_argument(
        "--repeats", type=_positive, default=3, metavar="N", help="repeats per task (default 3)"
    )
    parser.add_argument(
        "--workers", type=_positive, default=2, metavar="N", help="worker processes (default 2)"
    )
    parser.set_defaults(func=run)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def run(args: argparse.Namespace) -> int:
    """Run both parts; exit 0 when every decision is as required."""
    out: Path = args.output_dir
    _check_replaceable(out)
    try:
        with interrupts_kept():  # a swallowed Ctrl-C still says what it left
            _fresh(out)
            return _run(out, args)
    except KeyboardInterrupt:
        print(
            f"onrecord demo: interrupted: {out} is incomplete; the next `onrecord demo` "
            "replaces it",
            file=sys.stderr,
        )
        return INTERRUPTED


def _run(out: Path, args: argparse.Namespace) -> int:
    console = make_console()
    runs = _remittance_runs(out / "remittance", args.repeats, args.workers, console)
    suite = suite_from_reports({agent: result.report for agent, result in runs.items()})
    console.print(suite_table(suite))
    console.print(ablation_table(suite))
    note(console, "running the invoice ledger experiment")
    with console.status("running the invoice ledger experiment"):
        ledger = run_ledger_experiment(out / "ledger")
        save_ledger_result(ledger, out / "ledger")
    console.print(ledger_decision_table(ledger))
    console.print(ledger_ablation_table(ledger.ablation()))
    pages = _html(out, runs, console)
    problems = suite.mismatches + ([] if ledger.ok else ["ledger: a decision differs"])
    for problem in problems:
        print_sentence(console, f"[red]unexpected:[/] {literal(problem)}")
    # Paths are the user's: "[/]" in a directory name crashed rich's markup parser
    # (a traceback and exit 1, read as reject, after a complete run). soft_wrap: a path
    # is printed whole on one line, to be copied; rich cut it where COLUMNS=80 ends.
    console.print(f"\nreports: {', '.join(literal(page) for page in pages)}", soft_wrap=True)
    console.print(
        f"everything else (evidence, run stores, databases): {literal(out)}/", soft_wrap=True
    )
    return 0 if not problems else 1


def _check_replaceable(out: Path) -> None:
    """Refuse a file, or a non-empty directory an earlier demo did not make."""
    if out.exists() and not out.is_dir():
        raise InputError(f"--output-dir {out} is a file, not a directory; pass a new directory")
    if out.is_dir() and any(out.iterdir()) and not (out / MARKER).is_file():
        raise InputError(
            f"--output-dir {out} is not empty and was not made by "
            "onrecord demo; pass a new or empty directory"
        )


def _fresh(out: Path) -> None:
    """Empty an earlier demo's directory (or make a new one), keeping its marker."""
    out.mkdir(parents=True, exist_ok=True)
    marker = out / MARKER
    marker.write_text("written by onrecord demo; replaced by the next demo run\n")
    # The marker goes first and stays: a Ctrl-C while the old output is being deleted
    # used to leave (in directory order) a half-deleted directory without the marker,
    # which the next `onrecord demo` then refused as not its own.
    for entry in sorted(out.iterdir()):
        if entry == marker:
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


class _Counted(RunProgress):
    """Feeds one count for all runs of the demo (``start_run`` starts each run's own)."""

    def __init__(self, count: CountProgress) -> None:
        self.count = count

    def advance(self, result: JobResult) -> None:
        self.count.advance()


def _remittance_runs(
    root: Path, repeats: int, workers: int, console: Console
) -> dict[str, RunResult]:
    protocols = {agent: plan_run("remittance", agent, repeats=repeats) for agent in AGENTS}
    total = sum(len(p.tasks) * p.repeats * len(p.seeds) for p in protocols.values())
    results: dict[str, RunResult] = {}
    # The shared count: a bar naming the agent on a terminal; in a CI log a line at the
    # start, at most one every 10 seconds within an agent's run, and one at the end.
    count = CountProgress(console, "remittance episodes")
    count.start(total)
    try:
        for agent, protocol in protocols.items():
            count.phase(agent)
            # Closed here, interrupted or not: an unclosed pool's manager thread was left
            # to close its wake-up pipe while Python's exit wrote to it (CPython 3.11's
            # unlocked _python_exit), and an interrupted demo now and then printed
            # "Exception ignored in: <module 'threading'> ... Bad file descriptor".
            # Kept per agent: a Ctrl-C swallowed between runs stops the demo at the
            # end of this one, not after all eight.
            with interrupts_kept(), ProcessPoolExecutor(workers) as executor:
                results[agent] = start_run(
                    root / agent, protocol, executor=executor, progress=_Counted(count)
                )
            note(console, f"remittance episodes {count.done}/{total}: {agent} done")
    finally:
        count.stop()
    return results


def _html(out: Path, runs: Mapping[str, RunResult], console: Console) -> list[Path]:
    note(console, "writing HTML reports")
    with console.status("writing HTML reports"):
        pages = [
            write_report(out / "remittance" / agent, out / f"remittance-{agent}.html")
            for agent in ("careful", "double_poster", "change_and_restore")
        ]
        page, _ = write_comparison(
            out / "remittance" / "careful",
            out / "remittance" / "skips_notes",
            out / "compare-careful-vs-skips_notes.html",
        )
        ledger_runs = sorted((out / "ledger" / "runs").glob("*/report.json"))
        merged = EvaluationReport.merge(EvaluationReport.load(path) for path in ledger_runs)
        # Beside the ledger directory, not in it: its manifest pins every file it holds,
        # so a file added there would make `onrecord verify` and `ledger analyze` refuse it.
        merged.save_json(out / "ledger.report.json")
        pages.append(write_report(out / "ledger.report.json", out / "ledger.html"))
    return [*pages, page]
