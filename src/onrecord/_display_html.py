"""Results as HTML fragments for notebooks (``_repr_html_``): the tables of the HTML
report (``onrecord report``, ``compare --html``), built with its helpers and escaping.

A notebook inserts the fragment into its own page, with the page's privileges: every
piece of record text (check names, reasons, case ids: written by agents and users) is
escaped by ``onrecord.html._page.esc``. The fragment holds no script, no style sheet
(it would restyle the whole notebook), no external resource and no colour of its own,
so it reads in light and dark themes alike. The report page's SVG chart is left out:
its black labels vanish on a dark theme.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from onrecord._numbers import fixed, interval_percent
from onrecord._stats import CLUSTERED_INTERVAL
from onrecord.html._compare import _checks as _compared_checks
from onrecord.html._compare import _measures as _compared_measures
from onrecord.html._decision import headline, requirements_section
from onrecord.html._measures import measure_rows
from onrecord.html._page import NAME_CHARS, attr, cell, esc, name_text, percent, table
from onrecord.report._measures import MEASURE_COLUMNS

if TYPE_CHECKING:
    from onrecord.compare import Comparison
    from onrecord.episode import EpisodeEvidence
    from onrecord.policy import PolicyDecision
    from onrecord.report import CheckSummary, EvaluationReport, ReportSummary

__all__ = ["comparison_html", "decision_html", "evidence_html", "report_html"]

_CHECK_HEADERS = (
    *("check", "version", "passed", "failed", "not measured", "of which errors"),
    *("pass rate", CLUSTERED_INTERVAL, "coverage"),
)
"""The report page's check table's columns, in its order."""


def _fragment(kind: str, body: str) -> str:
    """One ``<div>``, marked with the record's kind for anyone styling it."""
    return f'<div class="onrecord onrecord-{kind}">{body}</div>'


def report_html(report: EvaluationReport) -> str:
    """The summary line, the checks' table (the report page's columns), pass^k and the
    measures."""
    summary = report.summary()
    versions = report.lock["checks"]
    outcomes = ", ".join(f"{count} {outcome}" for outcome, count in summary.outcomes.items())
    rate = percent(summary.pass_rate)
    head = (
        f"<p><b>report</b>: {summary.trials} trial{'' if summary.trials == 1 else 's'}; "
        f"pass rate {esc(rate)} ({CLUSTERED_INTERVAL} "
        f"{esc(interval_percent(*summary.interval))}); outcomes: {esc(outcomes or 'none')}; "
        f"<code>sha256:{esc(report.digest[:16])}</code></p>"
    )
    rows = [_check_row(check, versions.get(check.name, "")) for check in summary.checks]
    checks = table(_CHECK_HEADERS, rows, css="onrecord-checks")
    return _fragment("report", head + checks + _pass_hat_k(summary.pass_hat_k) + _measures(summary))


def _measures(summary: ReportSummary) -> str:
    """Every measure over the trials that have it (the report page folds those past
    the first rows away; a notebook cell scrolls)."""
    if not summary.measures:
        return ""
    measures = [measure.to_dict() for measure in summary.measures]
    return table(MEASURE_COLUMNS, measure_rows(measures, summary.trials), css="onrecord-measures")


def _check_row(check: CheckSummary, version: Any) -> str:
    """A check's row, as the report page gives it (numbers in ``data-value``)."""
    counts = (
        ("passed", check.passed),
        ("failed", check.failed),
        ("unmeasured", check.unmeasured),
        ("errors", check.errors),
    )
    # No measured result: "0.0% – 100.0%" read as an interval estimated from data.
    interval = "—" if check.pass_rate is None else interval_percent(*check.interval)
    return (
        f'<tr data-check="{attr(check.name)}">'
        + cell(name_text(check.name), limit=NAME_CHARS)
        + cell(version)
        + "".join(cell(n, css="num", data={"field": f, "value": n}) for f, n in counts)
        + cell(percent(check.pass_rate), css="num", data={"field": "pass_rate"})
        + cell(interval, css="num", data={"field": "interval"})
        + cell(percent(check.coverage), css="num", data={"field": "coverage"})
        + "</tr>"
    )


def _pass_hat_k(values: dict[int, float]) -> str:
    """pass^k for k up to 5 (a run of 300 seeds has 300 of them), as a one-row table."""
    shown = sorted(k for k in values if k <= _PASS_HAT_K)
    if not shown:
        return ""
    row = "<tr>" + "".join(cell(fixed(values[k], 3), css="num") for k in shown) + "</tr>"
    return table([f"pass^{k}" for k in shown], [row], css="onrecord-pass-hat-k")


_PASS_HAT_K = 5
"""The largest k a notebook shows (``report.summary().pass_hat_k`` holds every one)."""


def decision_html(decision: PolicyDecision) -> str:
    """The verdict, what decided it, then the HTML report's requirements and reasons
    (without the page's element ids: two decisions in one notebook repeated them)."""
    data = decision.to_dict()
    # The interval every view gives beside a rate (the saved form keeps it only when a
    # requirement has a lower bound); ``headline`` compares the verdict with the policy's.
    for item, outcome in zip(data["requirements"], decision.outcomes, strict=True):
        item["shown_interval"] = list(outcome.interval)
    verdict = {"decision": decision.decision, "verdict": decision.decision}
    body = (
        f"<p>decision: <b>{esc(decision.decision)}</b></p>"
        + headline({**verdict, "headline": decision.headline}, ids=False)
        + requirements_section(data, ids=False)
    )
    return _fragment("decision", body)


def comparison_html(comparison: Comparison) -> str:
    """The HTML comparison page's checks and measures sections."""
    data = comparison.to_dict()
    head = (
        f"<p><b>comparison</b>: {comparison.pairs} paired trials; "
        f"A <code>sha256:{esc(comparison.report_a[:16])}</code>, "
        f"B <code>sha256:{esc(comparison.report_b[:16])}</code></p>"
    )
    return _fragment(
        "comparison", head + _compared_checks(data, ids=False) + _compared_measures(data, ids=False)
    )


def evidence_html(evidence: EpisodeEvidence) -> str:
    """The episode's summary rows (see ``onrecord._display.evidence_rows``)."""
    from onrecord._display import evidence_rows

    rows = [f"<tr>{cell(label)}{cell(value)}</tr>" for label, value in evidence_rows(evidence)]
    return _fragment("evidence", table(("episode evidence", ""), rows))
