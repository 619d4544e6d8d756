"""The decision section's facts, as ``gate``, ``show`` and the Markdown summary give
them: what decided (``PolicyDecision.headline``), one row per requirement (pass rate,
95 % interval clustered by case, threshold, critical or advisory), then the reasons
that decided, apart from advisory failures, which never change the verdict.

Before, the page gave the verdict and one list of reasons, an advisory failure among
the critical ones, and no requirement's numbers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord._headline import INCOMPLETE_RUN
from onrecord._numbers import interval_percent, rate_percent, requirement_threshold, shown_reason
from onrecord._stats import CLUSTERED_INTERVAL
from onrecord.html._page import (
    TEXT_CHARS,
    attr,
    cell,
    ident,
    long_text,
    name_html,
    name_text,
    table,
)

__all__ = ["headline", "requirements_section"]

_REASONS = 30
"""Policy reasons listed on the page (one per episode with a coverage issue is common)."""


def headline(decision: Mapping[str, Any], *, ids: bool = True) -> str:
    """What decided, under the verdict (an incomplete run's verdict says why first);
    ``ids=False`` leaves its element id out (a notebook may show several)."""
    text = str(decision.get("headline") or "")
    held = decision.get("run_recorded")
    if held is not None and held != decision.get("recorded"):
        # An out-of-date grading: "6 of 33 recorded" read as the run's state, not 19.
        text = (
            f"this grading is out of date: the run holds {held} of "
            f"{decision.get('expected')} episodes recorded, {decision.get('recorded')} "
            f"graded; on those graded: {text}"
        )
    elif decision.get("verdict") != decision.get("decision") and not text.startswith(
        INCOMPLETE_RUN
    ):
        # ``report_data`` leads a partial run's headline with why, as gate prints it;
        # a decision given without that says at least that the run is incomplete.
        text = (
            f"the run is incomplete ({decision.get('recorded')} of "
            f"{decision.get('expected')} episodes recorded); the policy: {text}"
        )
    # One line, as the terminal prints it (``cell``): the headline is check names joined
    # by fixed words, and a name's newline rendered as a space ("posted once") while the
    # requirements table below said "posted\nonce", another check's name.
    return f"<p{ident('decision-headline', ids)}><b>{name_html(text)}</b></p>" if text else ""


def requirements_section(decision: Mapping[str, Any], *, ids: bool = True) -> str:
    """The requirements table, then the deciding reasons, then the advisory failures;
    ``ids=False`` leaves their element ids out (a notebook may show several)."""
    items = [item for item in decision.get("requirements", ()) if isinstance(item, dict)]
    rows = [_row(item) for item in items]
    headers = ("requirement", "critical", "status", "pass rate", CLUSTERED_INTERVAL)
    advisory = {
        item.get("explanation")
        for item in items
        if item.get("status") == "failed" and item.get("critical") is False
    }
    reasons = [str(r) for r in decision.get("reasons", ())]
    deciding = [r for r in reasons if r not in advisory]
    failed = [r for r in reasons if r in advisory]
    return (
        "<h3>Requirements</h3>"
        + (
            table(
                (*headers, "threshold", "cases", "unmeasured"),
                rows,
                element_id="requirements" if ids else "",
            )
            if rows
            else "<p>the policy has no requirement</p>"
        )
        + "<h3>Reasons</h3>"
        + (
            _list("reasons" if ids else "", deciding)
            if deciding
            else "<p>every requirement met</p>"
        )
        + (
            '<h3>Advisory failures</h3><p class="meta">advisory requirements: they do not '
            "change the verdict</p>" + _list("advisory-reasons" if ids else "", failed)
            if failed
            else ""
        )
    )


def _list(element_id: str, reasons: Sequence[str]) -> str:
    shown, more = reasons[:_REASONS], len(reasons) - _REASONS
    return (
        f"<ul{ident(element_id)}>"
        + "".join(f"<li>{long_text(shown_reason(r))}</li>" for r in shown)
        + (f'<li class="meta">… {more} more, in decision.json</li>' if more > 0 else "")
        + "</ul>"
    )


def _row(item: Mapping[str, Any]) -> str:
    passed, failed = _count(item.get("passed")), _count(item.get("failed"))
    measured = passed + failed
    need = item.get("min_pass_rate")
    need = float(need) if isinstance(need, int | float) and not isinstance(need, bool) else None
    rate = (
        f"{rate_percent(passed / measured, need)} ({passed} of {measured})"
        if measured
        else "n/a (none measured)"
    )
    bounds = item.get("shown_interval")
    interval = interval_percent(*bounds) if measured and isinstance(bounds, list) else "—"
    status = str(item.get("status"))
    css = {"met": "pass", "failed": "fail", "undecided": "not_measured"}.get(status, "")
    return (
        f'<tr data-requirement="{attr(item.get("check"))}">'
        + cell(name_text(item.get("check")), limit=TEXT_CHARS)
        + cell("critical" if item.get("critical") else "advisory")
        + cell(status, css=css)
        + cell(rate)
        + cell(interval)
        + cell(requirement_threshold(item))
        + cell(item.get("cases", ""))
        + cell(item.get("unmeasured", ""))
        + "</tr>"
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
