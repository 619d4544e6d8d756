"""``onrecord show`` of a record ``verify`` returns as a ``Bundle``: a directory or JSON
Lines file (its contents), and the records that were one line only: a decision (gate,
run, remittance suite or ledger), a comparison, closed-loop records and a ledger or
remittance summary, each printed whole from what ``verify`` checked.

Before: ``show`` printed the line ``verify`` prints (``policy decision (reject, 8
requirements)``) and nothing of the requirements, the p-values, the runs or the agents;
a run's decision gave its reasons without the requirements' numbers.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich.console import Console

from onrecord._loaded import loaded
from onrecord._natural import natural_key
from onrecord._numbers import (
    interval_percent,
    rate_percent,
    requirement_threshold,
    shown_reason,
)
from onrecord._policy_rules import StatusTable, requirement_interval
from onrecord._saved_decision import saved_headline
from onrecord._stats import wilson_interval
from onrecord.cli._bundle import Bundle
from onrecord.cli._decision_table import decision_table, table_headers
from onrecord.cli._lines import counted, print_sentence
from onrecord.cli._measure_table import render_report_measures as _render_report
from onrecord.cli._partial import partial_body
from onrecord.cli._render import (
    _styled,
    _table,
    ablation_table,
    cell,
    literal,
    print_interval_note,
    render_comparison,
    render_forecasts,
)
from onrecord.episode import EpisodeEvidence
from onrecord.report import EvaluationReport

if TYPE_CHECKING:
    from onrecord.dynamics import ForecastEvidence

__all__ = ["render_bundle", "render_decision_body"]

_REQUIREMENT_STYLE = {"met": "green", "failed": "red", "undecided": "yellow"}
View = Callable[[Console, Any, Sequence[Any]], None]


def render_bundle(
    console: Console,
    bundle: Bundle,
    *,
    all_measures: bool = True,
    command: str = "",
    why: str = "",
) -> None:
    """What was verified (``verify``'s line), then what it holds: the record it carries
    (``Bundle.record``) as tables, or a directory's or JSON Lines file's contents. A
    report's measures: the first ``MEASURE_ROWS`` unless ``all_measures`` (``command``:
    the ``show`` command that lists them all, without its flag). ``why``: what stopped
    a partial run's missing episodes (``2 timed out``)."""
    schema = _schema(bundle.record) or ""
    if schema not in _OWN_HEADER:
        console.print(
            f"[bold]{bundle.kind}[/] {literal(bundle.summary)}  sha256:{bundle.digest[:16]}"
        )
    view = _VIEWS.get(schema)
    if view is not None:
        view(console, bundle.record, bundle.items)
        return
    forecasts = _forecasts(bundle.items)
    if forecasts:
        render_forecasts(console, forecasts)
    episodes = [item for item in bundle.items if isinstance(item, EpisodeEvidence)]
    if episodes:
        table = _table("case", "seed", "ended", "steps", "sha256")
        for episode in episodes:
            table.add_row(
                cell(episode.case["case_id"]),
                literal(episode.environment["seed"]),
                _styled(episode.ended),
                str(len(episode.attempts())),
                episode.digest[:16],
            )
        console.print(table)
    for change in bundle.changes[:50]:
        print_sentence(  # a case id's second line hangs, never at column 0
            console,
            f"{literal(change['case_id'])}#{change['repeat']} {literal(change['check'])}: "
            f"{literal(change['before'] or 'absent')} → {literal(change['after'] or 'absent')}",
            indent=2,
            hanging=4,
        )
    if len(bundle.changes) > 50:
        console.print(f"  … {len(bundle.changes) - 50} more changed verdicts")
    for item in bundle.items:
        if isinstance(item, EvaluationReport):
            _render_report(console, item, every=all_measures, command=command)
        elif isinstance(item, dict) and "decision" in item:  # a run's (or regrade's)
            note = f"  ({item['recorded']} of {item['expected']} episodes)"
            reports = [other for other in bundle.items if isinstance(other, EvaluationReport)]
            body = partial_body(item["decision"], item["recorded"], item["expected"], why)
            render_decision_body(console, body, note, report=next(iter(reports), None))


def _forecasts(items: Sequence[Any]) -> list[ForecastEvidence]:
    """The forecasts among a bundle's items. Reading one loads their module (and NumPy,
    which reading other records does without): while it is not loaded, there is none."""
    module = loaded("onrecord.dynamics._evidence")
    if module is None:
        return []
    return [item for item in items if isinstance(item, module.ForecastEvidence)]


def _schema(record: Any) -> str | None:
    first = record[0] if isinstance(record, tuple) and record else record
    schema = first.get("schema") if isinstance(first, Mapping) else None
    return schema if isinstance(schema, str) else None


def render_decision_body(
    console: Console,
    body: Mapping[str, Any],
    note: str = "",
    *,
    reason_column: bool = True,
    intervals: Sequence[tuple[float, float]] | None = None,
    report: EvaluationReport | None = None,
    headline: str | None = None,
) -> None:
    """A decision's verdict and what decided it (``headline``, else made again from the
    saved requirements), then one row per requirement: its status, the pass rate it
    measured, the threshold it had to meet and why; then the reasons that are not a
    requirement's (coverage issues, an incomplete run). ``note`` follows the verdict.
    Without ``reason_column`` every reason is a line of its own after the table, never
    wrapped inside a cell: what a CI log of ``gate`` or ``run`` should let one grep.
    Each interval is clustered by case: ``intervals`` (one per requirement, as the
    decision's outcomes carry them), else the one the saved requirement carries, else
    one made again from ``report`` (the report decided on)."""
    console.print(f"decision: {_styled(str(body.get('decision')))}{literal(note)}")
    # What decided, as the Markdown and JUnit summaries lead with it: the verdict alone
    # left a CI log reader to find the cause among the rows and reasons below.
    cause = headline if headline is not None else saved_headline(body)
    if cause:
        print_sentence(console, cell(cause), indent=2, hanging=4)
    table_of = StatusTable(report) if report is not None and intervals is None else None
    rows, unclustered = [], False
    for index, item in enumerate(body.get("requirements", ())):
        given = intervals[index] if intervals is not None else None
        row, clustered = _requirement_row(item, given, table_of)
        rows.append(row)
        unclustered |= not clustered
    table = decision_table(rows, console.width, reason_column=reason_column)
    # Wide only framed and with each cell but a reason on one line (as the report's
    # table); else narrow or stacked, and the reasons follow it, each a whole line.
    reason_column = reason_column and "reason" in table_headers(table)
    explained = {row["explanation"] for row in rows} if reason_column else set()
    console.print(table)
    print_interval_note(console)
    if unclustered:
        print_sentence(
            console,
            "* not clustered by case: the decision keeps no per-case counts and the "
            "report it decided is not beside it; each result counted as independent, "
            "so the interval is too narrow when cases ran more than once",
            indent=2,
            hanging=4,
        )
    other = [reason for reason in body.get("reasons", ()) if reason not in explained]
    for reason in other[:20]:
        # Hanging under its dash, broken between clauses: "0 not measured" over "of 495".
        print_sentence(console, f"- {literal(shown_reason(reason))}", indent=2, hanging=4)
    if len(other) > 20:
        console.print(f"  … {len(other) - 20} more reasons")


def _requirement_row(
    item: Mapping[str, Any], given: tuple[float, float] | None, table: StatusTable | None
) -> tuple[dict[str, str], bool]:
    """A requirement's cells, as text to print, and whether its interval is clustered."""
    passed, failed = item.get("passed", 0), item.get("failed", 0)
    measured = passed + failed
    need = item.get("min_pass_rate")
    bounds, clustered = _interval(item, given, table)
    status = str(item.get("status"))
    style = _REQUIREMENT_STYLE.get(status)
    return {
        "check": cell(item.get("check")),
        "critical": "yes" if item.get("critical") else "no",
        "status": f"[{style}]{status}[/]" if style else literal(status),
        "rate": f"{rate_percent(passed / measured, _number(need))} ({passed} of {measured})"
        if measured
        else "n/a (none measured)",
        "interval": (interval_percent(*bounds) + ("" if clustered else " *")) if measured else "—",
        "threshold": requirement_threshold(item, literal),
        "cases": literal(item.get("cases", "")),
        "unmeasured": literal(item.get("unmeasured", "")),
        "reason": literal(shown_reason(str(item.get("explanation", "")))),
        "explanation": str(item.get("explanation")),
    }, clustered or not measured


def _interval(
    item: Mapping[str, Any], given: tuple[float, float] | None, table: StatusTable | None
) -> tuple[tuple[float, float], bool]:
    """A requirement's interval, and whether it is clustered by case. A saved decision
    carries it only for a ``min_lower_bound`` requirement; else it is made again from
    the report, and without one, Wilson over the results is the clustered interval only
    when each measured case has one result or every result is alike."""
    passed, failed = int(item.get("passed", 0)), int(item.get("failed", 0))
    stored = item.get("interval")
    if given is not None:
        return given, True
    if (
        isinstance(stored, list)
        and len(stored) == 2
        and all(_number(v) is not None for v in stored)
    ):
        return (float(stored[0]), float(stored[1])), True
    if table is not None and isinstance(item.get("matched"), list):
        return requirement_interval(table, tuple(map(str, item["matched"]))), True
    # One result per case, or all alike: no spread between cases, so Wilson is exact.
    alike = item.get("cases") == passed + failed or 0 in (passed, failed)
    return wilson_interval(passed, passed + failed), alike


def _number(value: object) -> float | None:
    """A threshold read from a record, None when it is not a number."""
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _decision(console: Console, record: Mapping[str, Any], items: Sequence[Any]) -> None:
    reports = [item for item in items if isinstance(item, EvaluationReport)]
    render_decision_body(console, record, report=next(iter(reports), None))


def _comparison(console: Console, record: Mapping[str, Any], items: Sequence[Any]) -> None:
    from onrecord.cli._compare_lines import print_comparison_header
    from onrecord.compare import Comparison

    # compare's own header ("2 paired trials  A: … vs  B: …"): show opened with another
    # wording of it ("2 pairs, 9 checks, …; A 5042dd6650e8 vs B …"). The file holds the
    # reports' digests only, so A and B are named by them, as compare names a side it
    # has no label for; then the comparison's own digest.
    comparison = Comparison.from_dict(record)
    print_comparison_header(console, comparison, None)
    print_sentence(
        console,
        f"saved comparison sha256:{str(record['digest'])[:16]}: "
        f"{counted(len(record['checks']), 'check')}, "
        f"{counted(len(record['measures']), 'measure')}; A and B by their reports' "
        "digests (the file holds no names for them)",
        indent=2,
    )
    render_comparison(console, comparison, header=False)


def _closed_loop(console: Console, records: Sequence[Any], episodes: Sequence[Any]) -> None:
    """One row per run. Its return and ending are its episode's, when the episodes were
    found beside the records; the steps are the episode's, else one per planned step."""
    found = {episode.digest: episode for episode in episodes}
    errors = any(record.get("model_error") for record in records)
    headers = ("model", "env", "seed", "steps", "return", "ended")
    table = _table(*headers, *(("model error",) if errors else ()))
    for record in records:
        episode = found.get(record.get("episode"))
        if episode is not None:
            steps = str(len(episode.attempts()))
            total = f"{sum(float(t['reward']) for t in episode.transitions()):.6g}"
            ended = _styled(str(episode.ended))
        else:
            steps, total, ended = str(len(record.get("predicted_returns", ()))), "—", "—"
        error = record.get("model_error")
        cells = [
            literal(record.get("model_id")),
            literal(record.get("env_id")),
            literal(record.get("seed")),
            steps,
            total,
            ended,
        ]
        if errors:
            cells.append(
                literal(f"step {error['step']}: {error['type']}: {error['message']}")
                if error
                else ""
            )
        table.add_row(*cells)
    console.print(table)
    if not found:
        console.print(
            "return and ending are the episodes', which are not beside these records "
            "(NAME.episodes.jsonl); steps: the steps planned"
        )


def _remittance_summary(console: Console, record: Mapping[str, Any], items: Sequence[Any]) -> None:
    """Agent × decision, as the suite prints it: tasks per decision, the failing checks
    (with how many tasks) and whether each task got the decision it must get; then what
    weaker graders accept."""
    table = _table(
        "agent", "decision", "accept", "reject", "indet.", "failing checks (tasks)", "as expected"
    )
    for name, row in record["agents"].items():
        decisions = row.get("task_decisions", {})
        counts = Counter(decisions.values())
        failing = Counter(c for checks in row.get("failing_checks", {}).values() for c in checks)
        checks = ", ".join(f"{c} ({failing[c]})" for c in sorted(failing, key=natural_key))
        wants = row.get("expected") or {}
        table.add_row(
            cell(name),
            _styled(str(row["decision"])),
            str(counts["accept"]),
            str(counts["reject"]),
            str(counts["indeterminate"]),
            cell(checks or "—"),
            "—"
            if not wants
            else "yes"
            if all(decisions.get(task) == want for task, want in wants.items())
            else "[red]no[/]",
        )
    console.print(table)
    rows = [row for row in record.get("ablation", ()) if isinstance(row, Mapping)]
    graders = (
        [k.removesuffix("_decision") for k in rows[0] if k.endswith("_decision")] if rows else []
    )
    if graders:
        ablation = _table(
            "agent",
            "episodes",
            *(f"{g.replace('_', ' ')}: accepted (violating) → decision" for g in graders),
            title="ablation: what weaker graders accept",
        )
        for row in rows:
            cells = [
                literal(f"{row.get(g)} ({row.get(f'{g}_violating')}) → {row.get(f'{g}_decision')}")
                for g in graders
            ]
            ablation.add_row(cell(row.get("agent")), literal(row.get("episodes")), *cells)
        console.print(ablation)
    for mismatch in record.get("mismatches", ()):
        print_sentence(console, f"[red]not as expected:[/] {literal(mismatch)}")


def _ledger_summary(console: Console, record: Mapping[str, Any], items: Sequence[Any]) -> None:
    """Each attempt's decision under each grader and the one it must get (``✗`` where
    the full policy's differs), then the classic runs; then what weaker graders accept."""
    table = _table("episode", "final answer", "final posting", "full policy", "required")
    for row in record["episodes"]:
        decisions = row["decisions"]
        full = str(decisions.get("full_policy"))
        mark = "" if full == row["expected"] else " [red]✗[/]"
        table.add_row(
            cell(row["name"]),
            literal(decisions.get("final_answer", "")),
            literal(decisions.get("final_posting", "")),
            _styled(full) + mark,
            literal(row["expected"]),
        )
    for row in record["classic"]:
        mark = "" if row["decision"] == row.get("expected") else " [red]✗[/]"
        table.add_row(
            f"classic {cell(row['name'])}",
            "",
            "",
            _styled(row["decision"]) + mark,
            literal(row.get("expected", "")),
        )
    console.print(table)
    rows = [row for row in record.get("ablation", ()) if isinstance(row, Mapping)]
    if rows:
        console.print(ablation_table(rows))
    if record.get("ok") is False:
        console.print("[red]not every decision is the one required[/]")


_OWN_HEADER = frozenset({"onrecord.comparison/v1"})
"""Records whose view opens with a header of its own, not the line ``verify`` prints."""

_VIEWS: dict[str, View] = {
    "onrecord.decision/v1": _decision,
    "onrecord.ledger-decision/v1": _decision,
    "onrecord.comparison/v1": _comparison,
    "onrecord.closed-loop/v1": _closed_loop,
    "onrecord.remittance-summary/v1": _remittance_summary,
    "onrecord.ledger-summary/v1": _ledger_summary,
}
