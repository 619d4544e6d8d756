"""``--markdown``: GitHub-flavoured Markdown summaries of ``gate`` and ``compare``, for
``$GITHUB_STEP_SUMMARY`` (or a merge-request comment).

Record text — a case id, a check's reason, a policy's check pattern — is the agent's or
the user's. ``text`` makes it literal: a ``|`` cannot end a table cell, a newline cannot
end a row, and backticks, emphasis, links, math and HTML are shown as typed, never
rendered (a reason such as ``<img src=…>`` or ``**accept**`` must not restyle the page
that decides a release).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from onrecord._compare_rates import PassRate, rate_text
from onrecord._numbers import P_VALUE_MARKS, shown_reason, significant
from onrecord._stats import CLUSTERED_INTERVAL
from onrecord.cli._ci_facts import FIRST_UNPASSED, RequirementFacts, clean
from onrecord.cli._lines import counted
from onrecord.cli._markdown_fit import Part, fitted
from onrecord.compare import (
    Comparison,
    discordant_cases,
    few_bootstrap_pairs_note,
    too_few_pairs_note,
)
from onrecord.policy import PolicyDecision
from onrecord.report import MeasureSummary
from onrecord.report._measures import MEASURE_COLUMNS, MEASURE_ROWS, measure_cells

__all__ = ["compare_markdown", "gate_markdown", "refused_markdown", "table", "text"]

_ICONS = {"accept": "✅", "reject": "❌", "indeterminate": "⚠️"}
_STATUS = {"met": "✅ met", "failed": "❌ failed", "undecided": "⚠️ undecided"}
_REASONS = 20  # listed in full; the rest counted (the terminal output has them all)
_PAIRS = 10  # discordant pairs listed per check, as the terminal output lists them

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
# Inline syntax GitHub renders (code, emphasis, links and images, footnotes, math,
# strikethrough, table cells, headings): backslash-escaped, which shows the character.
_INLINE = re.compile(r"[\\`*_\[\]|~#!$]")
# Block syntax at the start of a list item's text: a nested list, a numbered one.
_BULLET = re.compile(r"^[-+]")
_NUMBERED = re.compile(r"^(\d+)([.)])")


def text(value: object, limit: int = 500) -> str:
    """``value`` as literal Markdown on one line (newlines become ``<br>``)."""
    cleaned = clean(value, limit).replace("\t", " ").strip()
    escaped = _INLINE.sub(lambda match: "\\" + match.group(), cleaned)
    escaped = "".join(_ENTITIES.get(char, char) for char in escaped)
    escaped = _NUMBERED.sub(r"\1\\\2", _BULLET.sub(r"\\\g<0>", escaped))
    return escaped.replace("\n", "<br>")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GFM table; cells must already be Markdown (``text`` for record text)."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def gate_markdown(
    decision: PolicyDecision,
    facts: Sequence[RequirementFacts],
    *,
    subject: str,
    policy: str,
    measures: Sequence[MeasureSummary] = (),
    trials: int = 0,
    unchecked: str | None = None,
    resume: str | None = None,
) -> str:
    """The summary of one gate: the decision, each requirement with its measured pass
    rate, interval and threshold, the report's ``measures`` over its ``trials``, the
    reasons, and the first results that did not pass. ``unchecked`` (a world-model
    report's coordinates without a tolerance) and ``resume`` (what finishes a partial
    run, with its path) are said under the verdict."""
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    verdict = decision.decision
    lines = [
        f"### {_ICONS[verdict]} onrecord gate: {verdict} (exit {decision.exit_code})",
        "",
        f"{text(subject)} · policy {text(policy)} · {text(decision.headline)}",
        "",
    ]
    if unchecked is not None:
        # Beside the verdict: an accept on dynamics/*/h1 is no word on these coordinates.
        lines += [f"⚠️ {text(unchecked)}", ""]
    if resume is not None:
        lines += [f"⏩ {text(resume)}", ""]
    headers = ("requirement", "critical", "status", "pass rate", CLUSTERED_INTERVAL, "threshold")
    rows = [_requirement_row(item) for item in facts]
    parts = [
        Part([*table((*headers, "cases", "unmeasured"), rows), ""], 2, len(rows), "requirements"),
        _reasons([shown_reason(reason) for reason in decision.reasons]),
        _unpassed(facts),
        # After what decided (the requirements, their reasons and failures): context.
        _measure_summary(measures, trials),
    ]
    footer = (
        f"<sub>report sha256:{decision.report_digest[:16]} · policy "
        f"sha256:{decision.policy_digest[:16]} · onrecord {__version__}</sub>"
    )
    where = "the terminal output of `onrecord gate`, its `--junit-xml`, `onrecord show REPORT`"
    return fitted(lines, parts, [footer], where)


def _requirement_row(item: RequirementFacts) -> tuple[str, ...]:
    outcome = item.outcome
    return (
        text(outcome.requirement.check),
        "yes" if outcome.requirement.critical else "no",
        _STATUS[outcome.status],
        item.rate,
        item.interval,
        item.threshold,
        str(outcome.cases),
        str(outcome.unmeasured),
    )


def _measure_summary(measures: Sequence[MeasureSummary], trials: int) -> Part:
    """The report's measures, as ``onrecord show`` tabulates them: a PR's reviewer sees
    only this summary, and "rows_put_back above 0 in 3 trials" is what a pass rate of
    the checks does not say. The first ``MEASURE_ROWS``, as the terminal caps them."""
    if not measures:
        return Part([])
    rows = []
    for measure in measures[:MEASURE_ROWS]:
        name, *numbers = measure_cells(measure, trials)
        # The numbers are ours ("-0.5", "1.2e+04"), not record text: through ``text``
        # a "100." would be escaped as a numbered list's.
        rows.append((text(name, 200), *numbers))
    lines = [f"**Measures** over the {counted(trials, 'trial')}", "", *table(MEASURE_COLUMNS, rows)]
    more = len(measures) - MEASURE_ROWS
    if more > 0:
        lines += ["", f"… and {more} more (`onrecord show REPORT --all-measures` lists them all)"]
    return Part([*lines, ""], 4, len(rows), "measures", max(more, 0))


def _reasons(reasons: Sequence[str]) -> Part:
    if not reasons:
        return Part([])
    lines = ["**Reasons**", ""] + [f"- {text(reason)}" for reason in reasons[:_REASONS]]
    more = max(len(reasons) - _REASONS, 0)
    if more:
        lines.append(f"- … {more} more (the command's output lists them all)")
    return Part([*lines, ""], 2, len(lines) - 2 - bool(more), "reasons", more)


def _unpassed(facts: Sequence[RequirementFacts]) -> Part:
    """The first results that did not pass, of each requirement not met."""
    shown = [item for item in facts if item.outcome.status != "met" and item.unpassed]
    if not shown:
        return Part([])
    rows = [
        (
            text(item.outcome.requirement.check),
            text(u.episode, 200),
            text(u.check, 200),
            u.status,
            text(u.reason),
        )
        for item in shown
        for u in item.unpassed
    ]
    lines = [f"**Results that did not pass** (first {FIRST_UNPASSED} per requirement)", ""]
    lines += table(("requirement", "episode", "check", "status", "reason"), rows)
    more = sum(item.more for item in shown)
    if more:
        lines += ["", f"… and {more} more (`onrecord report` lists every episode)"]
    return Part([*lines, ""], 4, len(rows), "results that did not pass", more)


def compare_markdown(
    comparison: Comparison, label_a: str, label_b: str, *, note: str | None = None
) -> str:
    """The summary of one comparison: McNemar per check with the discordant pairs, the
    paired bootstrap interval per measure, then ``note`` (measures on one side only).
    The note is inside the size cap: appended after it, it could take the summary past
    what a GitHub comment holds."""
    from onrecord import __version__

    lines = [
        f"### onrecord compare: {counted(comparison.pairs, 'paired trial')}",
        "",
        f"A: {text(label_a)} (sha256:{comparison.report_a[:16]}) · "
        f"B: {text(label_b)} (sha256:{comparison.report_b[:16]})",
        "",
    ]
    parts = [_checks(comparison), _discordant(comparison), _measures(comparison)]
    where = "the terminal output of `onrecord compare`, its `--json`"
    noted = [f"_{text(note, limit=2000)}_", ""] if note else []
    return fitted(lines, parts, [*noted, f"<sub>onrecord {__version__}</sub>"], where)


def _checks(comparison: Comparison) -> Part:
    # Each side's rate beside the p-value (after it: the columns it always had keep their
    # places): the counts say how A and B differ, not where they stand. Absent from a
    # comparison saved before the rates were recorded.
    rates = any(c.rate_a is not None for c in comparison.checks)
    rate_headers = tuple(f"{side} pass rate ({CLUSTERED_INTERVAL})" for side in "AB")
    headers = (
        *("check", "both pass", "A only", "B only", "both fail", "unmeasured"),
        "McNemar p",
        *(rate_headers if rates else ()),
    )
    rows = [
        (
            text(c.name),
            *(str(n) for n in (c.both_pass, c.only_a, c.only_b, c.both_fail, c.unmeasured)),
            significant(c.p_value, 4, P_VALUE_MARKS),
            *((_rate(c.rate_a), _rate(c.rate_b)) if rates else ()),
        )
        for c in comparison.checks
    ]
    note = too_few_pairs_note(
        [(c.name, len(c.discordant), discordant_cases(c.discordant)) for c in comparison.checks]
    )
    lines = [*table(headers, rows), "", *([f"_{text(note, limit=2000)}_", ""] if note else [])]
    return Part(lines, 2, len(rows), "checks")


def _rate(rate: PassRate | None) -> str:
    # Our own numbers, not record text: through ``text`` "100.0%" read "100\.0%" (a
    # numbered list's "100." escaped), as the gate's rates are not.
    return "—" if rate is None else rate_text(rate)


def _measures(comparison: Comparison) -> Part:
    if not comparison.measures:
        return Part([])
    headers = ("measure", "pairs", "mean A", "mean B", "B − A", "95% bootstrap interval")
    rows = [
        (
            text(m.name),
            str(m.pairs),
            f"{m.mean_a:.4g}",
            f"{m.mean_b:.4g}",
            f"{m.mean_difference:+.4g}",
            f"[{m.interval[0]:+.4g}, {m.interval[1]:+.4g}]",
        )
        for m in comparison.measures
    ]
    note = few_bootstrap_pairs_note(comparison.measures)
    lines = [
        "**Measures** (B − A, paired bootstrap)",
        "",
        *table(headers, rows),
        "",
        *([f"_{text(note, limit=2000)}_", ""] if note else []),
    ]
    return Part(lines, 4, len(rows), "measures")


def _discordant(comparison: Comparison) -> Part:
    rows = [
        (text(check.name), text(f"{pair.case_id}#{pair.repeat}", 200), *_sides(pair.passed_a))
        for check in comparison.checks
        for pair in check.discordant[:_PAIRS]
    ]
    if not rows:
        return Part([])
    lines = [f"**Discordant pairs** (first {_PAIRS} per check)", ""]
    lines += table(("check", "episode", "A", "B"), rows)
    more = sum(max(0, len(check.discordant) - _PAIRS) for check in comparison.checks)
    if more:
        lines += ["", f"… and {more} more (`onrecord compare --json` lists them all)"]
    return Part([*lines, ""], 4, len(rows), "discordant pairs", more)


def _sides(passed_a: bool) -> tuple[str, str]:
    return ("pass", "fail") if passed_a else ("fail", "pass")


def refused_markdown(source_a: str, source_b: str, reasons: Sequence[str]) -> str:
    """Why two reports were not compared (``onrecord compare`` exits 3)."""
    from onrecord import __version__

    lines = [
        "### ⛔ onrecord compare: refused (exit 3)",
        "",
        f"A: {text(source_a)} · B: {text(source_b)}",
        "",
        *_reasons(reasons).lines,
        f"<sub>onrecord {__version__}</sub>",
    ]
    return "\n".join(lines) + "\n"
