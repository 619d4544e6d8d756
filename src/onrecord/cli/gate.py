"""``onrecord gate REPORT --policy POLICY``: the CI gate (exit 0 / 1 / 2). REPORT is a
report file, or a run or regrade directory (verified, and never accepted while planned
episodes have no trial, as ``onrecord run`` decides). ``--junit-xml`` and ``--markdown``
put the decision where a CI system shows results (see docs/ci.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord._saved_episode import refuse_saved_episode
from onrecord.cli._app import refusal
from onrecord.cli._ci_facts import FIRST_UNPASSED, RequirementFacts, requirement_facts
from onrecord.cli._ci_files import (
    CiOutput,
    ci_output,
    record_output,
    refuse_inputs,
    refuse_same_file,
)
from onrecord.cli._decisions import decision_record
from onrecord.cli._gate_refused import refused_junit, refused_markdown
from onrecord.cli._junit import gate_junit
from onrecord.cli._markdown import gate_markdown
from onrecord.cli._partial import gated, run_directory
from onrecord.cli._records import named
from onrecord.cli._render import literal, make_console, print_unchecked, render_decision
from onrecord.cli._run_episode import path_word
from onrecord.cli._unpassed_table import print_unpassed
from onrecord.compare import ComparedSource, load_source
from onrecord.dynamics._unchecked import unchecked_line
from onrecord.errors import InputError, OnrecordError, SchemaError
from onrecord.policy import AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport, summarize_measures

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
    parser.add_argument(
        "report", metavar="REPORT", help="a report file, or a run or regrade directory"
    )
    parser.add_argument(
        "--policy",
        required=True,
        metavar="POLICY",
        help="the acceptance policy to decide with: a TOML or JSON policy file",
    )
    parser.add_argument(
        "--output",
        metavar="FILE",
        help="also save the decision as JSON (with schema and digest: `onrecord verify` reads "
        "it; FILE '-': stdout, instead of the table)",
    )
    parser.add_argument(
        "--junit-xml",
        metavar="FILE",
        help="also write the decision as JUnit XML for CI test reports: a test case per "
        "requirement and one for the decision (an error when the gate is refused, exit 3; "
        "FILE '-': stdout, instead of the table)",
    )
    parser.add_argument(
        "--markdown",
        metavar="FILE",
        help='also append a Markdown summary to FILE, e.g. "$GITHUB_STEP_SUMMARY" '
        "(appended also when the gate is refused, exit 3, with the error; FILE '-': "
        "stdout, instead of the table)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Load, decide, save, print, exit with the decision's code."""
    # Every output is checked before anything runs: a wrong path is exit 3, not a
    # decision whose files are missing.
    output = record_output(args.output, "--output")
    junit = ci_output(args.junit_xml, "--junit-xml", ".xml")
    markdown = ci_output(args.markdown, "--markdown", ".md")
    outputs = (("--output", output), ("--junit-xml", junit), ("--markdown", markdown))
    refuse_same_file(outputs)
    inputs = (("REPORT", args.report), ("--policy", args.policy))
    refuse_inputs(outputs, inputs, "the input being gated")
    # The outputs are sound from here: a refusal is about the inputs, and the CI files
    # say it (a CI reader opening the job's summary saw nothing of why the gate failed).
    try:
        decision, report, subject, policy, loaded = _decide(args.report, args.policy)
    except (OnrecordError, OSError) as exc:
        _write_refused(junit, markdown, refusal(exc), report=args.report, policy=args.policy)
        raise
    if output is not None:  # before printing: a closed stdout must not lose the file
        output.replace(decision_record(decision))  # `onrecord verify` reads it
    facts = requirement_facts(decision, report)  # the CI files' and the log's, made once
    resume = _resume_line(loaded)
    _write_ci(
        junit, markdown, decision, facts, report, subject=subject, policy=policy.name, resume=resume
    )
    if not any(item is not None and item.to_stdout for item in (output, junit, markdown)):
        console = make_console()
        render_decision(console, decision)
        if resume is not None:  # the command is copied from here: one line
            console.print(f"[yellow]incomplete:[/] {literal(resume)}", soft_wrap=True)
        print_unchecked(console, report)  # an accept says nothing of what no check covers
        _render_unpassed(console, facts)
    return decision.exit_code


def _decide(
    given: str, policy_path: str
) -> tuple[PolicyDecision, EvaluationReport, str, AcceptancePolicy, ComparedSource | None]:
    """The decision on REPORT ``given`` (a report file, or a verified run or regrade
    directory), the report, its label, the policy and the run's loaded source."""
    refuse_saved_episode(Path(given), "gate")  # before: "not a regular file"
    # Errors name the file: with REPORT and POLICY swapped, the message said "schema is
    # 'onrecord.report/v1', expected 'onrecord.policy/v1'", not which file was wrong.
    source = run_directory(Path(given))
    loaded = None
    if source is not None:  # verified: the run's own grading of its recorded episodes
        loaded = named(source, lambda: load_source(source))
        report, subject = loaded.report, loaded.label
    else:
        report, subject = _report_file(given), str(given)
    policy = named(Path(policy_path), lambda: AcceptancePolicy.load(policy_path))
    decision = policy.evaluate(report)
    if source is not None and loaded is not None:
        decision = gated(decision, source, loaded)  # a partial run is never accepted
    return decision, report, subject, policy, loaded


def _write_refused(
    junit: CiOutput | None, markdown: CiOutput | None, message: str, *, report: str, policy: str
) -> None:
    """The CI files of a gate refused for ``message``; one that cannot be written is
    said on stderr, and the refusal itself stays the error the command exits with."""
    for output in (junit, markdown):
        if output is None:
            continue
        try:
            if output is junit:
                output.replace(refused_junit(message, report=report, policy=policy))
            else:
                output.append(refused_markdown(message, report=report, policy=policy))
        except OSError as exc:
            print(f"onrecord gate: {output.option}: {refusal(exc)}", file=sys.stderr)


def _resume_line(loaded: ComparedSource | None) -> str | None:
    """What finishes a run missing planned episodes, with its path: the decision's reason
    says only "`onrecord run --resume` retries them" (a saved decision's text, verified,
    names no directory), and that command alone is refused for want of one."""
    if loaded is None or not loaded.missing:
        return None
    return (
        f"{len(loaded.missing)} of {loaded.planned} planned episodes have no trial; "
        f"{loaded.hint}, then gate again"
    )


def _render_unpassed(console: Console, facts: list[RequirementFacts]) -> None:
    """The first results that did not pass of each requirement not met, as ``--markdown``
    lists them (``onrecord show RUN --episode CASE#REPEAT`` shows one): the log of a
    rejected gate said which checks failed and never in which episodes."""
    shown = [item for item in facts if item.outcome.status != "met" and item.unpassed]
    if not shown:
        return
    rows = [unpassed for item in shown for unpassed in item.unpassed]
    title = f"results not passed (first {FIRST_UNPASSED} per requirement not met)"
    print_unpassed(console, rows, title=title)
    more = sum(item.more for item in shown)
    if more:
        console.print(f"… and {more} more")


def _write_ci(
    junit: CiOutput | None,
    markdown: CiOutput | None,
    decision: PolicyDecision,
    facts: list[RequirementFacts],
    report: EvaluationReport,
    *,
    subject: str,
    policy: str,
    resume: str | None = None,
) -> None:
    """The JUnit XML file (replaced) and the Markdown summary (appended), for every
    decision alike."""
    unchecked = unchecked_line(report.lock)
    if junit is not None:
        document = gate_junit(decision, facts, suite=subject, policy=policy, unchecked=unchecked)
        junit.replace(document)
    if markdown is not None:
        measures = summarize_measures(report.trials)
        trials = len(report.trials)
        summary = gate_markdown(
            decision,
            facts,
            subject=subject,
            policy=policy,
            measures=measures,
            trials=trials,
            unchecked=unchecked,
            resume=resume,
        )
        markdown.append(summary)


def _report_file(path: str) -> EvaluationReport:
    """A saved report. A TOML file as REPORT is the policy given the wrong way round:
    it was refused as "not valid JSON …; the file is damaged or was edited: restore it",
    telling the user to restore a policy that was fine."""
    if Path(path).is_dir():
        raise InputError(_not_a_run(Path(path)))
    try:
        return named(Path(path), lambda: EvaluationReport.load(path))
    except SchemaError as exc:
        if Path(path).suffix.lower() != ".toml":
            raise
        raise InputError(
            f"REPORT {path} is a TOML file, not a report (reports are saved as JSON): a "
            "hand-written policy goes to --policy; give the report file, or the run or "
            f"regrade directory, first: onrecord gate REPORT --policy {path}"
        ) from exc


def _not_a_run(folder: Path) -> str:
    """Why a directory that holds no run.json is no REPORT, as ``compare`` says it: it
    was "a directory, not a regular file … put a regular file there", which asked for
    the directory to be replaced by a file."""
    report = folder / "report.json"
    instead = (
        f"; its report.json is a report: onrecord gate {path_word(str(report))} --policy POLICY"
        if report.is_file()
        else "; give a report file, or a run or regrade directory (start a run with "
        "`onrecord run ... --out DIR`)"
    )
    return f"{folder} is not a run directory (it has no run.json){instead}"
