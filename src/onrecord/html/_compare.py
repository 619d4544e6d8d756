"""The comparison page: per check the paired counts, exact McNemar p-value and the
discordant episodes; per measure the paired bootstrap interval."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from onrecord._compare_notes import few_bootstrap_cases_note, one_sided_measures_note
from onrecord._compare_rates import pass_rate_from_dict, rate_text
from onrecord._numbers import P_VALUE_MARKS, significant
from onrecord._stats import CLUSTERED_INTERVAL
from onrecord.compare import (
    ComparedSource,
    Comparison,
    compare_sources,
    load_source,
    too_few_pairs_note,
)
from onrecord.errors import ComparisonRefused
from onrecord.html._page import (
    NAME_CHARS,
    attr,
    cell,
    document,
    esc,
    ident,
    long_text,
    name_text,
    table,
)
from onrecord.report import EvaluationReport

__all__ = [
    "comparison_data",
    "failed_comparison_page",
    "load_report",
    "loaded_comparison_data",
    "render_comparison_page",
]

# A printout shows what is open: the discordant episodes, folded in <details>, were
# left off paper.
_SCRIPT = (
    "addEventListener('beforeprint', () => "
    "document.querySelectorAll('details').forEach(d => { d.open = true; }));"
    "document.body.dataset.rendered = 'yes';"
)


def load_report(source: str | Path) -> tuple[EvaluationReport, str]:
    """The report of a run or regrade directory (its ``report.json``) or a report file,
    and a label."""
    loaded = load_source(source)
    return loaded.report, loaded.label


def comparison_data(source_a: str | Path, source_b: str | Path) -> dict[str, Any]:
    """The comparison, or the reasons it is refused, as portable data."""
    a, b = load_source(source_a), load_source(source_b)
    try:
        outcome: Comparison | ComparisonRefused = compare_sources(a, b)
    except ComparisonRefused as exc:
        outcome = exc
    return loaded_comparison_data(a, b, outcome)


def loaded_comparison_data(
    a: ComparedSource, b: ComparedSource, outcome: Comparison | ComparisonRefused
) -> dict[str, Any]:
    """``comparison_data`` of sources already loaded and compared (or refused): `onrecord
    compare --html` read both runs and ran the bootstrap twice, once for the terminal and
    once for the page, and a run changed in between gave the two different contents."""
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    source_a, source_b = a.source, b.source
    label_a, label_b = a.label, b.label
    if label_a == label_b and Path(source_a).resolve() != Path(source_b).resolve():
        # runs/v1/report.json against runs/v2/report.json read "report.json vs
        # report.json": the folder tells A from B.
        label_a, label_b = _qualified(label_a, source_a), _qualified(label_b, source_b)
    data: dict[str, Any] = {
        "generator": f"onrecord {__version__}",
        "a": {"label": label_a, "digest": a.report.digest},
        "b": {"label": label_b, "digest": b.report.digest},
        "comparison": None,
        "refused": None,
        "one_sided_measures": one_sided_measures_note(a.report.trials, b.report.trials),
    }
    if isinstance(outcome, ComparisonRefused):
        data["refused"] = list(outcome.reasons)
    else:
        data["comparison"] = outcome.to_dict()
    return data


def _qualified(label: str, source: str | Path) -> str:
    return f"{label} in {Path(source).resolve().parent.name}/"


def failed_comparison_page(source_a: str | Path, source_b: str | Path, error: str) -> str:
    """The page of a comparison whose sources could not be loaded (an interrupted run
    without report.json, a record that fails verification): the error as its reason."""
    from onrecord import __version__

    return render_comparison_page(
        {
            "generator": f"onrecord {__version__}",
            "a": {"label": Path(source_a).name, "digest": ""},
            "b": {"label": Path(source_b).name, "digest": ""},
            "comparison": None,
            "refused": [error],
        }
    )


def _pair(pair: Mapping[str, Any]) -> str:
    """``task#repeat: pass→fail``; a long task id shows its first part and all of it on
    request, the outcome below it."""
    case_id, outcome = name_text(pair["case_id"]), f"#{pair['repeat']}: {pair['a']}→{pair['b']}"
    shown = long_text(case_id, NAME_CHARS)
    if shown == esc(case_id):  # short: one line, as before
        if _right_to_left(case_id):
            # Isolated: a right-to-left id ran on into "#0", drawn on its far side
            # ("0# שלום: pass→fail"), as if the repeat were part of the name.
            return f"<bdi>{esc(case_id)}</bdi>{esc(outcome)}"
        return esc(case_id + outcome)
    return f'{shown}<span class="outcome">{esc(outcome)}</span>'


def _right_to_left(text: str) -> bool:
    """Whether ``text`` holds a right-to-left letter (Hebrew, Arabic, …)."""
    return any(unicodedata.bidirectional(c) in ("R", "AL") for c in text)


def _discordant(name: str, pairs: list[Mapping[str, Any]]) -> str:
    """A check's discordant episodes, folded; a long check name shows its first part in
    the summary and all of it (on request) above the list."""
    name = name_text(name)
    short = name[:NAME_CHARS] + "…" if len(name) > NAME_CHARS else name
    full = (
        f'<div class="meta check-name">{long_text(name, NAME_CHARS)}</div>' if short != name else ""
    )
    items = "".join(f'<li class="discordant">{_pair(pair)}</li>' for pair in pairs)
    return (
        f"<details><summary>{esc(short)}: {len(pairs)} discordant episodes</summary>"
        f"{full}<ul>{items}</ul></details>"
    )


def render_comparison_page(data: Mapping[str, Any]) -> str:
    """The complete HTML of a comparison."""
    title = f"{data['a']['label']} vs {data['b']['label']}"
    # Labels, check names, task ids and reasons of any length keep their rows a few
    # lines high: the first part, then all of it on request (as on the report page).
    head = (
        f'<header><h1>Comparison</h1><div class="meta" id="sides">'
        f"A = {long_text(name_text(data['a']['label']), NAME_CHARS)} "
        f"<code>{esc(data['a']['digest'][:16])}</code> · "
        f"B = {long_text(name_text(data['b']['label']), NAME_CHARS)} "
        f"<code>{esc(data['b']['digest'][:16])}</code> · {esc(data['generator'])}</div>"
        "</header>"
    )
    if data["refused"] is not None:
        reasons = "".join(f"<li>{long_text(reason)}</li>" for reason in data["refused"])
        body = (
            f'<section class="decision" id="refused"><h2><span class="badge reject">'
            f"refused</span></h2><p>The two runs cannot be compared honestly:</p>"
            f'<ul id="reasons">{reasons}</ul></section>'
        )
    else:
        body = _checks(data["comparison"])
        body += _measures(data["comparison"], data.get("one_sided_measures"))
    return document(title, head + body, data, _SCRIPT)


def _checks(comparison: Mapping[str, Any], *, ids: bool = True) -> str:
    """Per check the paired counts and p-value, then the discordant tasks; ``ids=False``
    leaves the element ids out (a notebook may show several comparisons)."""
    rows, details = [], []
    # Absent from data saved before the rates were recorded: no columns of dashes.
    rates = any(check.get("rate_a") is not None for check in comparison["checks"])
    for check in comparison["checks"]:
        rows.append(
            f'<tr data-check="{attr(check["name"])}">'
            + cell(name_text(check["name"]), limit=NAME_CHARS)
            + "".join(
                cell(check[k], css="num", data={"field": k, "value": check[k]})
                for k in ("both_pass", "only_a", "only_b", "both_fail", "unmeasured")
            )
            + cell(
                significant(check["p_value"], 4, P_VALUE_MARKS),
                css="num",
                data={"field": "p_value", "value": check["p_value"]},
            )
            + "".join(_rate_cell(check, side) for side in (("rate_a", "rate_b") if rates else ()))
            + "</tr>"
        )
        if check["discordant"]:
            details.append(_discordant(check["name"], check["discordant"]))
    if not comparison["pairs"]:
        # An empty table read as "nothing differs"; nothing was compared.
        return (
            f"<section{ident('checks-section', ids)}><h2>Checks (0 paired episodes)</h2>"
            '<p class="empty-comparison">Nothing was compared: the two reports have no '
            "episodes in common to pair (both are empty), so no check can be said to "
            "differ, or not.</p></section>"
        )
    return (
        f"<section{ident('checks-section', ids)}><h2>Checks ({comparison['pairs']} paired "
        'episodes)</h2><p class="meta">A only: passes in A, fails in B (B regressed). '
        "B only: the reverse. p: exact two-sided McNemar test of the discordant pairs."
        + (_RATES_LEGEND if rates else "")
        + "</p>"
        + table(
            (
                *("check", "both pass", "A only", "B only", "both fail", "not measured"),
                "McNemar p",
                *(_RATE_HEADERS if rates else ()),
            ),
            rows,
            element_id="checks" if ids else "",
        )
        + _too_few(comparison["checks"], ids)
        + '<h3>Discordant tasks</h3><p class="meta">task#repeat: result in A → result '
        "in B</p>" + ("".join(details) or "<p>none</p>") + "</section>"
    )


_RATE_HEADERS = tuple(f"{side} pass rate ({CLUSTERED_INTERVAL})" for side in "AB")
_RATES_LEGEND = (
    " A and B pass rate: each report's own pass rate of the check over its measured "
    "results, as <code>onrecord show</code> gives it; it also counts results whose pair "
    "the test leaves out (not measured on the other side)."
)
"""The rate columns said what they hold in their headers but not how they relate to the
counts beside them."""


def _rate_cell(check: Mapping[str, Any], side: str) -> str:
    """A side's rate and interval as every view prints them; its numbers in data-value."""
    rate = pass_rate_from_dict(check.get(side))
    if rate is None:
        return cell("—", css="num", data={"field": side})
    data = {"field": side, "value": rate.pass_rate, "interval": list(rate.interval)}
    return cell(rate_text(rate), css="num", data=data)


def _too_few(checks: list[Mapping[str, Any]], ids: bool) -> str:
    note = too_few_pairs_note(
        [
            (
                c["name"],
                len(c["discordant"]),
                len({(p["case_id"], p["content_digest"]) for p in c["discordant"]}),
            )
            for c in checks
        ]
    )
    return f'<p class="meta"{ident("too-few-pairs", ids)}>{esc(note)}</p>' if note else ""


def _few_bootstrap_pairs(measures: list[Mapping[str, Any]], ids: bool) -> str:
    note = few_bootstrap_cases_note([(m["name"], m["pairs"], m.get("cases")) for m in measures])
    return f'<p class="meta"{ident("few-bootstrap-pairs", ids)}>{esc(note)}</p>' if note else ""


def _one_sided(note: str | None, ids: bool) -> str:
    """The note, its `commands` as code: the backquotes showed as typed."""
    if not note:
        return ""
    parts = note.split("`")
    shown = "".join(
        f"<code>{esc(part)}</code>" if odd else esc(part)
        for odd, part in ((i % 2 == 1 and i < len(parts) - 1, p) for i, p in enumerate(parts))
    )
    return f'<p class="meta"{ident("one-sided-measures", ids)}>{shown}</p>'


def _measures(
    comparison: Mapping[str, Any], one_sided: str | None = None, *, ids: bool = True
) -> str:
    """Per measure the paired bootstrap interval of B − A; ``ids=False`` leaves the
    element ids out (a notebook may show several comparisons)."""
    measures = comparison["measures"]
    if not measures:
        # Every measure on one side only: the note under its own heading; after the
        # checks' discordant tasks without one, it read as part of that list.
        return (
            f"<section{ident('measures-section', ids)}><h2>Continuous measures (B − A)</h2>"
            f"{_one_sided(one_sided, ids)}</section>"
            if one_sided
            else ""
        )
    rows = [
        f'<tr data-measure="{attr(m["name"])}">'
        + cell(name_text(m["name"]), limit=NAME_CHARS)
        + cell(m["pairs"], css="num")
        + cell(f"{m['mean_a']:.4g}", css="num")
        + cell(f"{m['mean_b']:.4g}", css="num")
        + cell(
            f"{m['mean_difference']:+.4g}",
            css="num",
            data={"field": "mean_difference", "value": m["mean_difference"]},
        )
        + cell(
            f"[{m['interval'][0]:+.4g}, {m['interval'][1]:+.4g}]",
            css="num",
            data={"field": "interval", "value": m["interval"]},
        )
        + "</tr>"
        for m in measures
    ]
    return (
        f"<section{ident('measures-section', ids)}><h2>Continuous measures (B − A)</h2>"
        + table(
            ("measure", "pairs", "mean A", "mean B", "B − A", "95% paired bootstrap interval"),
            rows,
            element_id="measures" if ids else "",
        )
        + _few_bootstrap_pairs(measures, ids)
        + _one_sided(one_sided, ids)
        + "</section>"
    )
