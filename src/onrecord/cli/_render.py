"""Terminal rendering of records with rich tables."""

from __future__ import annotations

import os
import re
import sys
import weakref
from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table

from onrecord._numbers import fixed, interval_percent, percent
from onrecord._tables import ReadableConsole, fitted_table
from onrecord.cli._encoding import tolerant_streams
from onrecord.cli._lines import counted, print_phrases, print_sentence
from onrecord.compare import Comparison
from onrecord.policy import AcceptancePolicy, PolicyDecision
from onrecord.report import EvaluationReport, ReportSummary

__all__ = [
    "cell",
    "emit",
    "literal",
    "make_console",
    "plain",
    "print_interval_note",
    "render_comparison",
    "render_decision",
    "render_forecasts",
    "render_policy",
    "render_report",
]


class _Console(ReadableConsole):
    """rich's console ends the process with exit code 1 when stdout is a closed pipe
    (``onrecord gate … | head -1``): 1 is *reject*, so an accepted report piped to
    ``head`` failed CI and ``--output`` was never written. Output stops instead and the
    command ends with its own exit code. Its text is what stdout's encoding can write
    (``ReadableConsole``)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        _silence_stdout()


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    finally:
        os.close(devnull)


def _tolerant_stdout() -> None:
    """Text a terminal's encoding cannot show (``→`` under ``PYTHONIOENCODING=ascii``
    or a Latin-1 locale, an undecodable file name) is printed as readable ASCII (``->``)
    or, when it is not one of onrecord's symbols, as ``\\u4e2d`` escapes: before, the
    command died with UnicodeEncodeError and exit code 1, i.e. *reject*. ``main`` does
    it first; here again for callers that print without it."""
    tolerant_streams()


def make_console() -> Console:
    """A console that keeps tables readable when output goes to a file or CI log
    (rich would otherwise assume 80 columns): 160 columns there, unless ``COLUMNS``
    says how wide the log is (rich, and most CLIs, read it; it was ignored)."""
    # Record text (case ids, reasons, actions) is the agent's or the user's: emoji codes
    # such as ":warning:" must print as written; markup is escaped with ``_lit``.
    _tolerant_stdout()
    console = _Console(emoji=False)
    if console.is_terminal or _columns() is not None:
        return console  # rich sizes it: the terminal's width, else COLUMNS
    return _Console(width=160, emoji=False)


def _columns() -> int | None:
    """``COLUMNS`` when it is a width rich uses (a positive whole number)."""
    value = os.environ.get("COLUMNS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def emit(text: str) -> None:
    """``print`` for the plain-text commands: a closed pipe stops the output rather than
    turning the command's exit code into 3, and unencodable text prints as escapes."""
    _tolerant_stdout()
    try:
        print(text, flush=True)
    except BrokenPipeError:
        _silence_stdout()


# Terminal control sequences and bidirectional controls in record text (an agent's
# action or answer, a case id): ESC sequences can move the cursor and erase lines (an
# agent could overwrite the "reject" above its own output), and a right-to-left override
# reverses the rest of the line. rich strips only BEL, BS, CR, VT and FF. They are shown
# as escapes; tab and newline stay.
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_CONTROLS}]")
_CONTROL_OR_NEWLINE = re.compile(f"[\n{_CONTROLS}]")
# A run of backslashes right before what an escape begins with ("u", and for a cell "n")
# or before an escaped character is doubled: a name holding the six characters "\u001b"
# or the two "\n" printed exactly as one holding ESC or a newline.
_BEFORE_ESCAPE = re.compile(f"\\\\+(?=u|[{_CONTROLS}])")
_BEFORE_ESCAPE_OR_NEWLINE = re.compile(f"\\\\+(?=[nu\n{_CONTROLS}])")


def plain(value: object) -> str:
    """``value`` as text safe to print to a terminal (controls shown as escapes, and
    backslashes before an escape's letter doubled, so a control and its spelling differ)."""
    return _escape_controls(str(value), _BEFORE_ESCAPE, _CONTROL)


def _escape_controls(text: str, before: re.Pattern[str], controls: re.Pattern[str]) -> str:
    doubled = before.sub(lambda match: match.group() * 2, text)
    return controls.sub(_control_escape, doubled)


def _control_escape(match: re.Match[str]) -> str:
    return "\\n" if match.group() == "\n" else f"\\u{ord(match.group()):04x}"


def literal(value: object) -> str:
    """``value`` as literal text: "[bold]" or "[/]" in a record is printed, never
    interpreted as rich markup (which would restyle the output or crash it), and
    terminal or bidirectional controls are shown as escapes. Every backslash prints as
    written, whatever follows the text: the end of a cell or line, or markup."""
    return _MARKUP.sub(_escaped, plain(value))


def cell(value: object) -> str:
    """``value`` as ``literal`` text for a table cell or a row's title, a newline shown
    as ``\\n``: printed as a second line, a case id ``"c1\\ndecision: accept"`` read
    as two rows, and in a borderless first column (or a stacked row's title) its second
    line began at column 0, where a CI log reads the verdict. Reasons keep their lines:
    they are never the first column, and their lines hang under their first."""
    shown = _escape_controls(str(value), _BEFORE_ESCAPE_OR_NEWLINE, _CONTROL_OR_NEWLINE)
    return _MARKUP.sub(_escaped, shown)


# rich's markup reads backslashes only right before a "[": before a tag ("[bold]")
# n + 1 of them print n and escape the tag; before any other "[" (a regex's "\[0-9]")
# one is dropped; anywhere else they print as written. rich's ``escape`` handles the
# tag, but doubles a final backslash whatever follows (a cell showed "C:\\" for "C:\")
# and not two or three (markup right after them lost one, or was printed as text), and
# leaves "\[0-9]" to print as "[0-9]". A run of backslashes is matched whole (the
# lookbehind), so a long run is not rescanned from each of its backslashes.
_MARKUP = re.compile(r"(?<!\\)(\\*)(\[[a-z#/@][^[]*?]|\[|\Z)")

_END = "[dim][/dim]"
"""An empty span after final backslashes: they are then always right before a tag, so
print as written at the end of a cell and before markup alike (n + n then print n)."""


def _escaped(match: re.Match[str]) -> str:
    backslashes, after = match.groups()
    if after.startswith("[") and len(after) > 1:  # a tag: printed as text
        return f"{backslashes}{backslashes}\\{after}"
    if after == "[":
        return f"{backslashes}\\[" if backslashes else after
    return f"{backslashes}{backslashes}{_END}" if backslashes else ""


_DECISION_STYLE = {"accept": "bold green", "reject": "bold red", "indeterminate": "bold yellow"}
_STATUS_STYLE = {
    "pass": "green",
    "fail": "red",
    "not_measured": "yellow",
    "evaluator_error": "magenta",
    "model_error": "magenta",
    "ok": "green",
    # what became of a tool call (a tool world's action log, its Gymnasium face)
    "rejected": "red",
    "error": "red",
    "finished": "green",
}


_table = fitted_table  # every command's tables: words wrap, names stay whole

FIRST_STEPS = 40
"""Steps (or tool calls) an episode view shows by default, besides those that failed."""


def _styled(text: str) -> str:
    style = _STATUS_STYLE.get(text) or _DECISION_STYLE.get(text)
    return f"[{style}]{text}[/]" if style else literal(text)


INTERVAL_PHRASES = (
    "95% intervals are Wilson intervals clustered by case:",
    "a case's repeats count as one cluster, not as independent trials",
)
INTERVAL_NOTE = " ".join(INTERVAL_PHRASES)
"""The line under a terminal table of pass rates: its column is headed short. Too long
for the console, it wraps between its phrases (at 100 columns rich left "cluster, not
as independent trials" alone under it, at 120 "trials")."""


def _interval(bounds: tuple[float, float]) -> str:
    # In percent, as ``gate``, Markdown, JUnit and HTML give it: the same interval read
    # [0.76, 0.97] above the decision's 76.4%–96.9%. ``interval_percent`` never shows a
    # bound strictly inside (0, 1) as 0 or 1 (2999 of 3000 once read [1.00, 1.00]).
    return interval_percent(*bounds)


def print_interval_note(console: Console) -> None:
    """The line saying what the "95% interval" column is, once per console: ``run`` and
    ``regrade`` print the report's table and the decision's, and said it under both."""
    if console not in _NOTED:
        print_phrases(console, INTERVAL_PHRASES, indent=2, hanging=2, sep=" ")
        _NOTED.add(console)


_NOTED: weakref.WeakSet[Console] = weakref.WeakSet()
"""Consoles that printed the interval note (weakly: a console ends with its command)."""


def render_report(console: Console, report: EvaluationReport) -> None:
    """Per-check pass rates with intervals, outcomes and pass^k."""
    summary = report.summary()
    rate = "n/a" if summary.pass_rate is None else percent(summary.pass_rate)
    # Phrase by phrase (see _lines): rich broke it as "outcomes: 450" over "pass, …".
    print_phrases(
        console,
        [
            f"[bold]report[/] {counted(summary.trials, 'trial')}",
            (
                f"pass rate {rate}",
                f"(95% interval {literal(_interval(summary.interval))}, clustered by case)",
            ),
            _outcomes(summary.outcomes),
            f"sha256:{report.digest[:16]}",
        ],
    )
    from onrecord.cli._check_table import check_table  # it builds on this module

    console.print(check_table(summary, report.lock["checks"], console.width))
    print_interval_note(console)
    if summary.pass_hat_k:
        shown = _milestones(sorted(summary.pass_hat_k))
        console.print("pass^k: " + "  ".join(_pass_hat_k(summary, k) for k in shown))
    for issue in report.coverage_issues[:_COVERAGE_LISTED]:
        # As a sentence: its lines after the first hang, so an agent's error message
        # quoted in it cannot print a line of its own ("boom\ndecision: accept").
        print_sentence(console, f"[yellow]coverage:[/] {literal(issue)}")
    unlisted = len(report.coverage_issues) - _COVERAGE_LISTED
    if unlisted > 0:  # the 21st and later were left out without a word
        console.print(f"[yellow]coverage:[/] … {unlisted} more coverage issues")
    print_unchecked(console, report)


def print_unchecked(console: Console, report: EvaluationReport) -> None:
    """``unchecked coordinates: theta_dot (no tolerance)`` for a world-model report
    whose tolerances left coordinates without a check (only its lock said so)."""
    from onrecord.dynamics._unchecked import LABEL, unchecked_line

    line = unchecked_line(report.lock)
    if line is not None:
        print_sentence(console, f"[yellow]{LABEL}:[/] {literal(line.removeprefix(LABEL + ': '))}")


_COVERAGE_LISTED = 20
"""Coverage issues a report lists in the terminal before counting the rest."""


def _outcomes(outcomes: Mapping[str, int]) -> tuple[str, ...]:
    """``outcomes: 450 pass, 45 fail, 0 incomplete``: the trial outcomes as read, where
    the summary line printed the dict itself (``{'pass': 450, 'fail': 45, ...}``); as
    parts, so a narrow line breaks between outcomes, never after "outcomes:"."""
    parts = [f"{count} {literal(outcome)}" for outcome, count in outcomes.items()]
    return tuple(
        f"{'outcomes: ' if i == 0 else ''}{part}{',' if i < len(parts) - 1 else ''}"
        for i, part in enumerate(parts)
    ) or ("outcomes: none",)


def _pass_hat_k(summary: ReportSummary, k: int) -> str:
    """``k=3: 0.500``, and over how many cases when fewer than k=1's have k measured
    repeats (a larger k is then an average over fewer cases)."""
    text = f"k={k}: {fixed(summary.pass_hat_k[k], 3)}"
    cases, every = summary.pass_hat_k_cases.get(k), summary.pass_hat_k_cases.get(1)
    return text if cases == every else f"{text} ({cases} of {every} cases)"


def _milestones(ks: list[int]) -> list[int]:
    """A readable subset of k: 1, 2, 3, 5, 10, 20, … and the largest."""
    wanted = {1, 2, 3, 5, 10, 20, 50, 100, ks[-1]}
    return [k for k in ks if k in wanted]


def render_policy(console: Console, policy: AcceptancePolicy) -> None:
    """One row per requirement (a ``min lower bound`` column when one has it)."""
    bounds = any(r.min_lower_bound is not None for r in policy.requirements)
    columns = ["check", "critical", "min pass rate", "min cases", "min coverage"]
    table = _table(
        *columns, *(["min lower bound"] if bounds else []), title=f"policy {literal(policy.name)}"
    )
    for requirement in policy.requirements:
        bound = requirement.min_lower_bound
        table.add_row(
            cell(requirement.check),
            str(requirement.critical),
            f"{requirement.min_pass_rate:g}",
            str(requirement.min_cases),
            f"{requirement.min_coverage:g}",
            *([f"{bound:g}" if bound is not None else "—"] if bounds else []),
        )
    console.print(table)


def render_decision(console: Console, decision: PolicyDecision) -> None:
    """The decision first, then each requirement with the pass rate it measured and the
    threshold it had to meet (as ``onrecord show`` gives a saved decision), then every
    reason on a line of its own."""
    from onrecord.cli._record_views import render_decision_body  # it builds on this module

    render_decision_body(
        console,
        decision.to_dict(),
        reason_column=False,
        intervals=[outcome.interval for outcome in decision.outcomes],
        headline=decision.headline,
    )


def render_comparison(
    console: Console,
    comparison: Comparison,
    *,
    header: bool = True,
    labels: tuple[str, str] | None = None,
) -> None:
    """Per check McNemar and each side's pass rate; per measure bootstrap interval
    (``header=False`` when the caller has already said what is compared, as ``show``
    does). ``labels`` name A and B (agent, environment, run) as ``--markdown`` does: a
    CI log that gave only their digests left a reviewer to guess which run was the new
    one."""
    from onrecord.cli._compare_lines import print_comparison  # it builds on this module

    print_comparison(console, comparison, header=header, labels=labels)


def render_forecasts(console: Console, forecasts: Sequence[Any]) -> None:
    """One row per forecast: model, episode, status, horizons."""
    table = _table("model", "case", "status", "horizons", "observed steps", "sha256")
    for forecast in forecasts:
        table.add_row(
            cell(forecast.model_id),
            cell(forecast.episode["case"].get("case_id", "")),
            _styled(forecast.status),
            literal(",".join(str(h) for h in forecast.horizons)),
            str(forecast.observed_steps),
            forecast.digest[:16],
        )
    console.print(table)


def ablation_table(rows: Sequence[Mapping[str, Any]]) -> Table:
    """The ledger experiment's ablation: what each weaker grader accepts over the
    complete episodes (``onrecord ledger`` prints it, ``show`` of its summary too)."""
    table = _table(
        "grader",
        "complete episodes",
        "accepted",
        "accepted but violating",
        title="ablation: what weaker graders accept",
    )
    for row in rows:
        keys = ("grader", "episodes", "accepted", "accepted_violating")
        table.add_row(*(cell(row.get(key)) for key in keys))
    return table
