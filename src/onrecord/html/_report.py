"""The run report page: decision and findings first, then the numbers, then episodes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from onrecord._natural import natural_key
from onrecord._stats import CLUSTERED_INTERVAL
from onrecord.html._decision import headline, requirements_section
from onrecord.html._listing import episodes_section
from onrecord.html._measures import measures_section
from onrecord.html._page import (
    NAME_CHARS,
    attr,
    cell,
    document,
    esc,
    fixed,
    long_text,
    name_html,
    name_text,
    percent,
    table,
)
from onrecord.html._script import EPISODE_SCRIPT
from onrecord.html._svg import horizon_chart, interval_chart
from onrecord.html._tasks import tasks_section

__all__ = ["render_report_page"]

_ALL_K = 12
"""pass^k values listed in full; beyond, the milestones."""
_CHART_ROWS = 40
"""Checks the pass-rate chart draws at most: a bar is 22 px tall, so 2,000 checks drew
an SVG 44,000 px tall that buried everything below it."""


def render_report_page(data: Mapping[str, Any]) -> str:
    """The complete HTML of a run report built from ``report_data``."""
    body = "".join(
        (
            _header(data),
            _decision(data),
            _checks(data),
            _pass_hat_k(data),
            measures_section(data),
            tasks_section(data),
            episodes_section(data),
            _plots(data),
        )
    )
    return document(str(data["title"]), body, data, EPISODE_SCRIPT)


def _header(data: Mapping[str, Any]) -> str:
    run = data["run"]
    meta = f"report <code>{esc(data['report_digest'][:16])}</code> · {esc(data['generator'])}"
    if run:
        # Names one line each, as the tables below show them (name_html).
        meta = (
            f"run <code>{name_html(run['run_id'])}</code> · {name_html(run['environment'])} "
            f"{name_html(_config(run['environment_config']))} · agent "
            f"<b>{name_html(run['agent'])}</b> · "
            f"{_count(run['tasks'], 'task')} × {_count(len(run['seeds']), 'seed')} × "
            f"{_count(run['repeats'], 'repeat')} "
            f"· max {run['max_steps']} steps · grading {name_html(run['grading'])} · "
            f"started {esc(run['created'])} · " + meta
        )
    return f'<header><h1>{name_html(data["title"])}</h1><p class="meta">{meta}</p></header>'


def _count(number: int, noun: str) -> str:
    """``1 task``, ``2 tasks``: "1 tasks × 1 seeds" headed a one-task run."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _number(value: float | None) -> str:
    """A ``data-value``: the JSON number (``""`` for null, as ``cell`` writes it)."""
    return "" if value is None else repr(value)


def _config(config: Mapping[str, Any]) -> str:
    """``size=30 kinds=["duplicate"]``: the settings as written on the command line."""
    return " ".join(f"{key}={orjson.dumps(value).decode()}" for key, value in config.items())


def _no_decision(run: Mapping[str, Any] | None, trials: int) -> tuple[str, str]:
    """The badge and reasons of a page with no decision. A run directory has a policy
    (its run.json): its decision.json is missing because the run was stopped between
    writing report.json and decision.json, and the page said "no policy" and "run
    `onrecord gate`", which needs a policy file and writes no decision into the run. A
    report.json of fewer episodes than the run recorded is an earlier grading (killed
    before the new report.json): the page said it was the grading that decision.json
    was to decide."""
    if run is None:
        badge = '<span class="badge indeterminate" id="decision">no policy</span>'
        return badge, (
            "<h3>Reasons</h3><p>This report file has no decision next to it; run "
            "`onrecord gate`.</p>"
        )
    if run.get("recorded", 0) > trials:
        badge = '<span class="badge indeterminate" id="decision">not graded</span>'
        return badge, (
            "<h3>Reasons</h3><p>This run is not graded: it has no decision.json, and its "
            f"report.json (shown here) is an earlier grading, of {trials} of the "
            f"{run['recorded']} recorded episodes, as a grading stopped before writing "
            "the new report.json leaves it. <code>onrecord run --resume</code> of the run "
            "directory grades the run and writes both.</p>"
        )
    badge = '<span class="badge indeterminate" id="decision">not decided</span>'
    return badge, (
        "<h3>Reasons</h3><p>This run has no decision.json: it was stopped after writing "
        "its report.json (the grading shown here) and before its policy's decision. "
        "<code>onrecord run --resume</code> of the run directory writes it.</p>"
    )


def _decision(data: Mapping[str, Any]) -> str:
    decision = data["decision"]
    # A finding names checks and tasks, a reason what the policy saw: either can run to
    # thousands of characters, shown in part and in full on request.
    findings = "".join(f"<li>{long_text(item)}</li>" for item in data["findings"])
    if decision is None:
        badge, reasons = _no_decision(data["run"], data["summary"]["trials"])
        cause = ""
    else:
        verdict = decision["verdict"]
        badge = (
            f'<span class="badge {esc(verdict)}" id="decision" data-decision="{attr(verdict)}" '
            f'data-policy-decision="{attr(decision["decision"])}">{esc(verdict)}</span>'
        )
        reasons = requirements_section(decision)
        cause = headline(decision)
    summary = data["summary"]
    line = (
        f'<p><b data-field="trials">{summary["trials"]}</b> episodes · pass rate '
        f'<b data-field="pass_rate" data-value="{attr(_number(summary["pass_rate"]))}">'
        f"{percent(summary['pass_rate'])}</b> (95% interval "
        f"{percent(summary['interval'][0])} – {percent(summary['interval'][1])}, "
        "clustered by case) · "
        "outcomes "
        + " · ".join(
            f'<span class="{esc(k)}" data-outcome="{attr(k)}">{v} {esc(k)}</span>'
            for k, v in summary["outcomes"].items()
        )
        + "</p>"
    )
    return (
        f'<section class="decision" id="decision-section"><h2>Decision {badge}</h2>'
        f'{cause}{line}<h3>Findings</h3><ul id="findings">{findings}</ul>'
        f"{reasons}</section>"
    )


def _checks(data: Mapping[str, Any]) -> str:
    checks = data["summary"]["checks"]
    rows = [
        f'<tr data-check="{attr(c["name"])}">'
        + cell(name_text(c["name"]), limit=NAME_CHARS)
        + cell(data["versions"].get(c["name"], ""), css="tag")  # remittance-v3 whole
        + cell(c["passed"], css="num", data={"field": "passed", "value": c["passed"]})
        + cell(c["failed"], css="num", data={"field": "failed", "value": c["failed"]})
        + cell(c["unmeasured"], css="num", data={"field": "unmeasured", "value": c["unmeasured"]})
        + cell(
            c.get("errors", 0),
            css="num evaluator_error" if c.get("errors") else "num",
            data={"field": "errors", "value": c.get("errors", 0)},
        )
        + cell(
            percent(c["pass_rate"]), css="num", data={"field": "pass_rate", "value": c["pass_rate"]}
        )
        + cell(
            # No measured result: "0.0% – 100.0%" read as an interval estimated from data.
            "—"
            if c["pass_rate"] is None
            else f"{percent(c['interval'][0])} – {percent(c['interval'][1])}",
            css="num",
            data={"field": "interval", "value": c["interval"]},
        )
        + cell(percent(c["coverage"]), css="num")
        + "</tr>"
        for c in checks
    ]
    charted = _charted(checks)
    chart = interval_chart(
        [(c["name"], c["pass_rate"], *c["interval"]) for c in charted],
        title=f"pass rate per check with {CLUSTERED_INTERVAL}",
    )
    if len(charted) < len(checks):
        chart += (
            f'<p class="meta" id="chart-note">the chart draws the {len(charted)} checks with '
            f"the lowest pass rates (unmeasured ones first) of {len(checks)}; the table "
            "lists every check, and every value is in the page's <code>onrecord-data</code> "
            "JSON</p>"
        )
    return (
        '<section id="checks-section"><h2>Pass rate per check</h2>'
        + table(
            (
                "check",
                "version",
                "passed",
                "failed",
                "not measured",
                "of which errors",
                "pass rate",
                CLUSTERED_INTERVAL,
                "coverage",
            ),
            rows,
            element_id="checks",
        )
        + chart
        + "</section>"
    )


def _charted(checks: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The checks the chart draws, in the table's order: all of them up to
    ``_CHART_ROWS``, else the worst (no pass rate first, then the lowest; ties in
    natural order)."""
    if len(checks) <= _CHART_ROWS:
        return checks
    worst = sorted(
        range(len(checks)),
        key=lambda i: (
            checks[i]["pass_rate"] is not None,
            checks[i]["pass_rate"] or 0.0,
            natural_key(checks[i]["name"]),
        ),
    )[:_CHART_ROWS]
    return [checks[i] for i in sorted(worst)]


def _pass_hat_k(data: Mapping[str, Any]) -> str:
    values = data["summary"]["pass_hat_k"]
    if not values:
        return ""
    cases = data["summary"].get("pass_hat_k_cases", {})
    shown = _milestones([int(k) for k in values])
    rows = [
        f"<tr>{cell(k)}"
        + cell(fixed(v, 3), css="num", data={"k": k, "value": v})
        + cell(str(cases.get(k, "")), css="num")
        + "</tr>"
        for k, v in values.items()
        if int(k) in shown
    ]
    # A run of 304 seeds has 304 values of k: a table of 304 rows pushed the tasks and
    # episodes a screen down each. The milestones, as `onrecord run` prints them.
    more = (
        f'<p class="meta">k = {", ".join(map(str, sorted(shown)))} of 1 to '
        f"{max(shown)}; every value is in the page's <code>onrecord-data</code> JSON</p>"
        if len(shown) < len(values)
        else ""
    )
    return (
        '<section id="passk-section"><h2>pass^k</h2><p class="meta">the chance that k '
        "measured repeats of a task all pass (every check, full coverage), averaged over "
        "the tasks with at least k</p>"
        + table(("k", "pass^k", "tasks"), rows, element_id="passk")
        + more
        + "</section>"
    )


def _milestones(ks: list[int]) -> set[int]:
    """Every k up to 12 values, else 1, 2, 3, 5, 10, 20, 50, 100, 200, 500, … and the
    largest."""
    if len(ks) <= _ALL_K:
        return set(ks)
    wanted = {1, 2, 3, 5, max(ks)}
    step = 10
    while step <= max(ks):
        wanted |= {step, 2 * step, 5 * step}
        step *= 10
    return {k for k in ks if k in wanted}


def _plots(data: Mapping[str, Any]) -> str:
    parts = []
    if data["horizons"]:
        parts.append(
            "<h3>Forecast pass rate by horizon</h3>"
            + horizon_chart(data["horizons"], title="pass rate by horizon per coordinate")
        )
    parts += [
        f'<figure><img alt="{name_html(image["name"])}" src="{image["src"]}">'
        f"<figcaption>{name_html(image['name'])}</figcaption></figure>"
        for image in data["images"]
    ]
    return f'<section id="plots-section"><h2>Plots</h2>{"".join(parts)}</section>' if parts else ""
