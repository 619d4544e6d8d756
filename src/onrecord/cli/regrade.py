"""``onrecord regrade RUN``: recompute verdicts from saved evidence and list what changed."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console

from onrecord._canonical import load_record_bytes
from onrecord._saved_episode import refuse_saved_episode
from onrecord.cli._bundle import digested
from onrecord.cli._lines import counted, print_sentence
from onrecord.cli._partial import folder_why, partial_decision
from onrecord.cli._progress import ConsoleProgress, add_no_progress
from onrecord.cli._render import cell, literal, make_console, render_decision, render_report
from onrecord.errors import InputError, OnrecordError
from onrecord.report import EvaluationReport
from onrecord.runner import regrade_run
from onrecord.runner._config import load_policy_file

if TYPE_CHECKING:
    from onrecord.policy import PolicyDecision

__all__ = ["register"]


def register(subparsers: Any) -> None:
    """Add the ``regrade`` subcommand."""
    parser = subparsers.add_parser(
        "regrade",
        help="re-grade a saved run with (improved) checks; lists changed verdicts",
        description="Grade every saved episode of RUN again from its evidence, without "
        "calling the agent or the environment. Saves RUN/regrades/NAME/ "
        "{report,decision,changes}.json; the run's records are only read. "
        "Exit code: the new decision (0 accept, 1 reject, 2 indeterminate; a partial "
        "run is never accepted), 3 on bad input or a tampered run.",
    )
    parser.add_argument("run_dir", metavar="RUN")
    parser.add_argument(
        "--checks",
        action="append",
        help="'default' or module:CHECKS (default: the run's own, re-imported)",
    )
    parser.add_argument("--policy", help="acceptance policy file (default: the run's)")
    parser.add_argument("--name", help="name of the regrade (default: a UTC timestamp)")
    parser.add_argument("--limit", type=int, default=50, help="changes to print (default 50)")
    add_no_progress(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Regrade and print the changes, the new report and decision."""
    if args.limit < 0:  # a negative slice would print all changes but the last ones
        raise InputError(f"--limit must be 0 or more changes to print, got {args.limit}")
    checks = [
        item.strip() for value in args.checks or () for item in value.split(",") if item.strip()
    ]
    # Before the policy is read, as `gate` does: a saved episode is the wrong input
    # whatever the policy (regrade_run refuses it too, for callers of the library).
    refuse_saved_episode(Path(args.run_dir), "regrade")
    policy = load_policy_file(args.policy) if args.policy else None
    # Each episode's world is rebuilt from its evidence: minutes for a few thousand.
    progress = ConsoleProgress(Console(stderr=True, soft_wrap=True), enabled=not args.no_progress)
    regrade = regrade_run(
        args.run_dir, checks or None, policy=policy, name=args.name, progress=progress
    )
    console = make_console()
    for notice in regrade.notices:  # as `run --resume` says what it repaired
        print_sentence(console, f"repaired: {literal(notice)}")
    for name, (old, new) in regrade.versions.items():
        console.print(
            f"check {cell(name)}: version {cell(old or 'absent')} → {cell(new or 'absent')}"
        )
    for name in regrade.unversioned:
        console.print(
            f"[yellow]warning:[/] check {cell(name)} changed verdicts but kept its "
            "version: the two reports' locks claim the same check; bump its version"
        )
    # Out of every check either grading has: checks replaced by `--checks` count too, as
    # their verdicts going "absent" are changes (4950 changed "of 495 episodes × 1 check").
    checks_graded = {*regrade.report.check_names, *regrade.previous.check_names}
    console.print(
        f"[bold]{counted(len(regrade.changes), 'verdict')} changed[/] "
        f"(of {counted(len(regrade.report.trials), 'episode')} × "
        f"{counted(len(checks_graded), 'check')})"
    )
    for change in regrade.changes[: args.limit]:
        # One line, a newline in a case id or check name shown as "\n" (as in a table):
        # hanging, "c1#0 posted" over "    once: pass → fail" read as two changes.
        print_sentence(console, cell(change), indent=2, hanging=4)
    if len(regrade.changes) > args.limit:
        console.print(
            f"  … {len(regrade.changes) - args.limit} more in "
            f"{literal(regrade.path / 'changes.json')}"
        )
    render_report(console, regrade.report)
    previous = regrade.previous
    console.print(f"previous grading: report sha256:{previous.digest[:16]}")
    # The policy's verdict on the recorded episodes; a partial run is never accepted,
    # so it is printed as `run` and `show` print it, never "decision: accept".
    missing = regrade.expected - len(regrade.report.trials)
    why = folder_why(regrade.path, regrade.report) if missing > 0 else ""
    render_decision(console, partial_decision(regrade.decision, max(missing, 0), why=why))
    if checks and not args.policy:
        _policy_hint(console, regrade.decision, checks)
    if not regrade.complete:
        # The command with the run's path (quoted), as `compare` and `gate` give it.
        from onrecord.cli._run_episode import path_word  # (its episode views: only here)

        resume = literal(f"onrecord run --resume {path_word(args.run_dir)}")
        console.print(  # one line: a command wrapped in two does not paste
            f"[yellow]incomplete run:[/] {len(regrade.report.trials)} of "
            f"{regrade.expected} episodes recorded; never accepted: {resume} records the "
            "rest, then regrade it again",
            soft_wrap=True,
        )
    console.print(f"saved to {cell(regrade.path)}", soft_wrap=True)
    for problem in _unverified_grading(Path(args.run_dir)):
        print_sentence(console, f"[yellow]warning:[/] {literal(problem)}")
    return regrade.exit_code


def _policy_hint(console: Console, decision: PolicyDecision, checks: list[str]) -> None:
    """Checks given with ``--checks`` are judged by the run's own policy, written for
    the run's checks: a requirement naming none of the new ones is undecided, and the
    run can never be accepted that way. Says so, and how to give a policy for them."""
    unmatched = [o.requirement.check for o in decision.outcomes if not o.matched]
    if not unmatched:
        return
    verb = "matches" if len(unmatched) == 1 else "match"
    print_sentence(
        console,
        f"[yellow]note:[/] {counted(len(unmatched), 'requirement')} of the run's policy "
        f"{verb} no check of {literal(','.join(checks))} ({literal(', '.join(unmatched))}), "
        "so they stay undecided: pass --policy FILE with requirements for these checks",
    )


def _unverified_grading(run: Path) -> list[str]:
    """The run's own ``report.json`` and ``decision.json`` that do not verify. Regrading
    never reads them (it grades the verified episode records, and they may be missing
    after an interrupted run, or copied from elsewhere: regrading is the remedy), but an
    edited grading file in a run is something its reviewer must hear about."""
    problems = []
    for name, load in (("report.json", EvaluationReport.load), ("decision.json", _decision)):
        path = run / name
        if not path.exists():
            continue
        try:
            load(path)
        except OnrecordError as exc:
            problems.append(
                f"{name} of the run does not verify ({exc}); this regrade graded the "
                "run's verified episode records, not that file, and `onrecord verify` "
                "refuses the run until it is restored or removed"
            )
    return problems


def _decision(path: Path) -> None:
    data = load_record_bytes(path.read_bytes(), str(path))
    digested(path, data)
