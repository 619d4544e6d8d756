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
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from onrecord.cli._render import make_console
from onrecord.cli.ledger import INTERRUPTED
from onrecord.cli.ledger import ablation_table as ledger_ablation_table
from onrecord.cli.ledger import decision_table as ledger_decision_table
from onrecord.domains.ledger import run_ledger_experiment, save_ledger_result
from onrecord.domains.remittance import AGENTS, ablation_table, suite_from_reports, suite_table
from onrecord.errors import InputError
from onrecord.html import write_comparison, write_report
from onrecord.report import EvaluationReport
from onrecord.runner import JobResult, ProcessPoolExecutor, RunResult, plan_run, start_run
from onrecord.runner import Progress as RunProgress

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
    parser.add_argument("--output-dir", default=Path("demo-output"), type=Path)
    parser.add_argument("--repeats", type=int, default=3, help="repeats per task (default 3)")
    parser.add_argument("--workers", type=int, default=2, help="worker processes (default 2)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run both parts; exit 0 when every decision is as required."""
    out = _fresh(args.output_dir)
    try:
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
    with console.status("running the invoice ledger experiment"):
        ledger = run_ledger_experiment(out / "ledger")
        save_ledger_result(ledger, out / "ledger")
    console.print(ledger_decision_table(ledger))
    console.print(ledger_ablation_table(ledger.ablation()))
    pages = _html(out, runs, console)
    problems = suite.mismatches + ([] if ledger.ok else ["ledger: a decision differs"])
    for problem in problems:
        console.print(f"[red]unexpected:[/] {problem}")
    console.print(f"\nreports: {', '.join(str(page) for page in pages)}")
    console.print(f"everything else (evidence, run stores, databases): {out}/")
    return 0 if not problems else 1


def _fresh(out: Path) -> Path:
    """A demo directory, replacing an earlier demo's output but nothing else."""
    if out.exists() and any(out.iterdir()):
        if not (out / MARKER).exists():
            raise InputError(
                f"--output-dir {out} is not empty and was not made by "
                "onrecord demo; pass a new or empty directory"
            )
        shutil.rmtree(out)
    out.mkdir(parents=True)
    (out / MARKER).write_text("written by onrecord demo; replaced by the next demo run\n")
    return out


class _DemoProgress(RunProgress):
    """Feeds one bar for all runs of the demo."""

    def __init__(self, bar: Progress, task: Any) -> None:
        self.bar, self.task = bar, task

    def advance(self, result: JobResult) -> None:
        self.bar.advance(self.task)


def _remittance_runs(
    root: Path, repeats: int, workers: int, console: Console
) -> dict[str, RunResult]:
    protocols = {agent: plan_run("remittance", agent, repeats=repeats) for agent in AGENTS}
    total = sum(len(p.tasks) * p.repeats * len(p.seeds) for p in protocols.values())
    results: dict[str, RunResult] = {}
    columns = (
        TextColumn("[bold]remittance episodes"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[agent]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=console) as bar:
        task = bar.add_task("episodes", total=total, agent="")
        progress = _DemoProgress(bar, task)
        for agent, protocol in protocols.items():
            bar.update(task, agent=agent)
            results[agent] = start_run(
                root / agent, protocol, executor=ProcessPoolExecutor(workers), progress=progress
            )
    return results


def _html(out: Path, runs: Mapping[str, RunResult], console: Console) -> list[Path]:
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
