"""``onrecord show RUN`` and ``show RUN/regrades/NAME``: what a CI log reader needs
beyond the report and decision tables.

Before, ``show RUN`` of an interrupted run printed one line (``90 of 300 episodes``) and
nothing of what to do; after a regrade it listed the original grading's failures and
never said a regrade existed; and a regrade's own episodes not passed were not listed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console

from onrecord._canonical import load_record_bytes
from onrecord._natural import natural_key
from onrecord.cli._bundle import Bundle
from onrecord.cli._partial import partial_body
from onrecord.cli._render import _styled, _table, cell, literal
from onrecord.cli._run_episode import path_word, render_not_passed
from onrecord.episode._verify_files import read_regular
from onrecord.report import EvaluationReport

__all__ = ["regrade_of", "render_regrade_directory", "render_run_directory"]


def render_run_directory(console: Console, run: Path, bundle: Bundle, *, every: bool) -> None:
    """After the run's report and decision (``render_bundle``): an incomplete run's
    state and resume command, its episodes not passed, then its regrades."""
    report = _report(bundle)
    decisions = [item for item in bundle.items if isinstance(item, dict) and "recorded" in item]
    if report is None:  # interrupted before grading: the records' own verdicts
        _render_ungraded(console, run, every=every)
    elif not decisions:  # killed between report.json and decision.json
        _undecided(console, run, report)
        render_not_passed(console, run, report, every=every)
    else:
        if decisions[0]["recorded"] < decisions[0]["expected"]:
            _incomplete(console, run, decisions[0]["recorded"], decisions[0]["expected"])
        render_not_passed(console, run, report, every=every)
    _render_regrades(console, run)


def render_regrade_directory(
    console: Console, regrade: Path, bundle: Bundle, *, every: bool
) -> None:
    """After a regrade's changes, report and decision: its own episodes not passed,
    with commands that show them as this regrade graded them."""
    report = _report(bundle)
    if report is not None:
        render_not_passed(console, regrade, report, every=every)


def regrade_of(path: Path) -> Path | None:
    """The run directory whose regrade ``path`` is (``RUN/regrades/NAME``), else None."""
    run = path.parent.parent
    if path.parent.name == "regrades" and (run / "run.json").is_file():
        return run
    return None


def _report(bundle: Bundle) -> EvaluationReport | None:
    reports = [item for item in bundle.items if isinstance(item, EvaluationReport)]
    return reports[0] if reports else None


def _incomplete(console: Console, run: Path, recorded: int, expected: int) -> None:
    console.print(
        f"[yellow]incomplete run[/]: {recorded} of {expected} planned episodes recorded",
    )
    console.print(
        f"continue it: {literal(f'onrecord run --resume {path_word(run)}')}",
        soft_wrap=True,  # the command is copied from here: one line
    )


def _undecided(console: Console, run: Path, report: EvaluationReport) -> None:
    """A run whose report.json grades every recorded episode (verified: ``load_any``
    shows it only then) but whose decision.json is missing. It read "not graded yet",
    though the tables above are its grading and ``compare``, ``gate`` and ``report``
    read it; what is missing is the policy's accept or reject."""
    from onrecord.runner import RunStore

    expected = RunStore.open(run).protocol.episodes
    command = literal(f"onrecord run --resume {path_word(run)}")
    console.print(
        "[yellow]not decided[/]: the report above (report.json, verified) grades every "
        "recorded episode, but the run's decision.json is missing: the run was stopped "
        "after writing its report and before its decision, so its policy has not decided it"
    )
    if len(report.trials) < expected:
        _incomplete(console, run, len(report.trials), expected)
        console.print("continuing it grades and decides it")
    else:
        console.print(f"decide it: {command}", soft_wrap=True)  # copied: one line


def _render_ungraded(console: Console, run: Path, *, every: bool) -> None:
    """A run with no report.json or no decision.json (killed before or while grading):
    no decision is made up, but
    each recorded episode was graded when it was recorded, and those verdicts are in
    its record: what did not pass so far is listed from them."""
    from onrecord.runner import RunStore
    from onrecord.runner._run import recorded_report

    store = RunStore.open(run)
    report = recorded_report(store)
    expected = store.protocol.episodes
    if len(report.trials) < expected:
        _incomplete(console, run, len(report.trials), expected)
    else:  # killed while grading: every episode is recorded, "incomplete" said otherwise
        console.print(
            "the one planned episode recorded"
            if expected == 1
            else f"all {expected} planned episodes recorded"
        )
        console.print(
            f"grade it: {literal(f'onrecord run --resume {path_word(run)}')}", soft_wrap=True
        )
    # A report.json here grades fewer episodes than recorded (``load_any`` verified it
    # and left it out): a grading killed after removing the old decision.json and
    # before the new report.json replaced the old one, or a resume killed while
    # recording, before grading (decision.json left too: it decides those episodes).
    why = "no report.json, so no decision"
    if (run / "decision.json").exists():
        why = "report.json and decision.json are an earlier grading, of fewer episodes"
    elif (run / "report.json").exists():
        why = (
            "report.json is an earlier grading, of fewer episodes, and there is no "
            "decision.json, so no decision"
        )
    console.print(
        f"not graded yet ({why}): the run was interrupted "
        "before or during its grading; resuming it grades it"
    )
    if not report.trials:
        return
    listed = render_not_passed(
        console,
        run,
        report,
        every=every,
        title="recorded episodes not passed (as graded when recorded)",
    )
    if not listed:
        recorded = len(report.trials)
        console.print(
            "the one recorded episode passed"
            if recorded == 1
            else f"each of the {recorded} recorded episodes passed"
        )


def _render_regrades(console: Console, run: Path) -> None:
    """Each regrade (verified with the run) by name: its decision, the episodes it
    graded and its changed verdicts, and the command that shows one: the tables above
    are the run's original grading."""
    folder = run / "regrades"
    names = sorted((p.name for p in folder.glob("*") if p.is_dir()), key=natural_key)
    if not names:
        return
    table = _table("regrade", "decision", "episodes", "changed verdicts", title="regrades")
    for name in names:
        decision = _load(folder / name / "decision.json")
        changes = _load(folder / name / "changes.json")
        # As `show` of the regrade, gate and the HTML say it: decision.json keeps the
        # policy's verdict on the recorded episodes, an accept for a partial run too.
        body = partial_body(decision["decision"], decision["recorded"], decision["expected"])
        table.add_row(
            cell(name),
            _styled(str(body["decision"])),
            f"{decision['recorded']} of {decision['expected']}",
            str(len(changes["changes"])),
        )
    console.print("the tables above are the run's original grading; it was re-graded:")
    console.print(table)
    console.print(
        f"show one: {literal(f'onrecord show {path_word(folder / names[-1])}')}",
        soft_wrap=True,  # the command is copied from here: one line
    )


def _load(path: Path) -> Any:
    # Verified already, with the run (load_any): read for display only.
    return load_record_bytes(read_regular(path), str(path))
