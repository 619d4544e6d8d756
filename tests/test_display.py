"""Reports, decisions, comparisons and episode evidence as tables in rich
(``__rich__``) and in notebooks (``_repr_html_``), from real FrozenLake and CartPole
episodes: the numbers shown are the objects' own, and record text stays text."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from rich.console import Console

from onrecord import AcceptancePolicy, CheckRequirement, compare_reports
from onrecord._numbers import shown_reason
from onrecord.compare import Comparison
from onrecord.episode import EpisodeEvidence
from onrecord.examples import CARTPOLE_AGENTS, cartpole_task, run_gym_task
from onrecord.policy import PolicyDecision
from onrecord.report import EvaluationReport
from tests.display_helpers import HOSTILE, Tables, hostile_report, lake_episodes, lake_report


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _text(obj: object, width: int = 120) -> str:
    console = Console(record=True, width=width)
    console.print(obj)
    return console.export_text()


def _flat(text: str) -> str:
    """Whitespace collapsed: a long reason wraps onto indented lines."""
    return " ".join(text.split())


def _cells(text: str, first: str) -> list[str]:
    """The cells of the table line whose first cell is ``first``."""
    for line in text.splitlines():
        cells = [part.strip() for part in line.split("│")[1:-1]]
        if cells and cells[0] == first:
            return cells
    raise AssertionError(f"no row {first!r} in\n{text}")


@pytest.fixture(scope="module")
def mixed() -> EvaluationReport:
    """Two repeats reach the goal, one walks into a hole: pass rates of 2 in 3."""
    return lake_report(("walks_to_goal", "walks_to_goal", "walks_into_hole"))


@pytest.fixture(scope="module")
def holes() -> EvaluationReport:
    return lake_report(("walks_into_hole", "walks_into_hole", "walks_into_hole"))


@pytest.fixture(scope="module")
def decision(mixed: EvaluationReport) -> PolicyDecision:
    policy = AcceptancePolicy(
        (CheckRequirement("reached_goal"), CheckRequirement("no_hole_visited", min_pass_rate=0.5))
    )
    return policy.evaluate(mixed)


@pytest.fixture(scope="module")
def comparison(mixed: EvaluationReport, holes: EvaluationReport) -> Comparison:
    return compare_reports(mixed, holes)


def test_report_in_rich_shows_each_checks_own_numbers(mixed: EvaluationReport) -> None:
    text = _text(mixed)
    summary = mixed.summary()
    assert f"pass rate {_pct(summary.pass_rate or 0)}" in text
    assert f"sha256:{mixed.digest[:16]}" in text
    for check in summary.checks:
        assert check.pass_rate is not None
        assert 0 < check.pass_rate < 1
        low, high = check.interval
        assert _cells(text, check.name) == [
            check.name,
            mixed.lock["checks"][check.name],
            str(check.passed),
            str(check.failed),
            str(check.unmeasured),
            str(check.errors),
            _pct(check.pass_rate),
            f"{_pct(low)} – {_pct(high)}",
            f"{check.coverage * 100:.0f}%",
        ]
    for measure in summary.measures:  # every measure, as `show --all-measures`
        assert _cells(text, measure.name)[1] == str(measure.trials)


def test_rich_lays_the_table_out_at_the_width_it_is_given(mixed: EvaluationReport) -> None:
    """At 60 columns the check table is narrow or stacked, as `show` picks it there."""
    wide, narrow = _text(mixed, 120), _text(mixed, 60)
    assert max(map(len, narrow.splitlines())) <= 60
    assert max(map(len, wide.splitlines())) > 60
    for check in mixed.summary().checks:
        assert check.name in narrow


def test_decision_in_rich_shows_verdict_requirements_and_reasons(
    decision: PolicyDecision,
) -> None:
    assert decision.decision == "reject"
    assert decision.reasons
    text = _text(decision)
    assert re.search(r"^decision: reject$", text, re.M)
    for outcome in decision.outcomes:
        measured = outcome.passed + outcome.failed
        cells = _cells(text, outcome.requirement.check)
        assert cells[2] == outcome.status
        assert cells[3] == f"{_pct(outcome.passed / measured)} ({outcome.passed} of {measured})"
    for reason in decision.reasons:
        assert _flat(shown_reason(reason)) in _flat(text)  # as every view shows it


def test_comparison_in_rich_shows_its_mcnemar_p(comparison: Comparison) -> None:
    text = _text(comparison)
    for check in comparison.checks:
        cells = _cells(text, check.name)
        assert cells[1:6] == [
            str(n)
            for n in (
                check.both_pass,
                check.only_a,
                check.only_b,
                check.both_fail,
                check.unmeasured,
            )
        ]
        assert cells[6] == f"{check.p_value:.4g}"
    assert comparison.checks[0].p_value < 1  # two pairs differ: a p-value of its own


def test_evidence_in_rich_and_html_is_a_short_summary() -> None:
    (gives_up,) = lake_episodes(("gives_up_early",))
    pole = run_gym_task(cartpole_task(), CARTPOLE_AGENTS["always_left"](), seed=7)
    for evidence in (gives_up, pole):
        _check_evidence(evidence)
    assert gives_up.coverage_issues  # its issue is listed, not only counted


def _check_evidence(evidence: EpisodeEvidence) -> None:
    text = _text(evidence, 140)
    parsed = Tables(evidence._repr_html_())
    rows: dict[str, list[str]] = {}
    for _, cells in parsed.rows[1:]:
        rows.setdefault(cells[0], []).append(cells[1])
    expected = {
        "case": [evidence.case["case_id"]],
        "ended": [evidence.ended],
        "attempts": [str(len(evidence))],
        "sha256": [evidence.digest],
        "coverage": list(evidence.coverage_issues) or None,
    }
    for label, values in expected.items():
        assert rows.get(label) == values, label
        for value in values or ():
            assert _cells(text, label)[1] == value
    assert rows["failures"] == [str(len(evidence.failures())) if evidence.failures() else "none"]


def test_report_html_cells_are_the_reports_numbers(mixed: EvaluationReport) -> None:
    parsed = Tables(mixed._repr_html_())
    summary = mixed.summary()
    for check in summary.checks:
        low, high = check.interval
        assert parsed.row("data-check", check.name) == [
            check.name,
            mixed.lock["checks"][check.name],
            str(check.passed),
            str(check.failed),
            str(check.unmeasured),
            str(check.errors),
            _pct(check.pass_rate or 0),
            f"{_pct(low)} – {_pct(high)}",
            _pct(check.coverage),
        ]
    headers = [cells for _, cells in parsed.rows if cells and cells[0] == "pass^1"]
    (head,) = headers
    body = parsed.rows[[cells for _, cells in parsed.rows].index(head) + 1][1]
    assert body == [f"{summary.pass_hat_k[k]:.3f}" for k in range(1, len(head) + 1)]
    assert summary.measures  # FrozenLake's return and steps
    for measure in summary.measures:  # every measure, as in the rich view
        cells = parsed.row("data-measure", measure.name)
        assert cells[:2] == [measure.name, str(measure.trials)]


def test_decision_html_lists_requirements_and_every_reason(decision: PolicyDecision) -> None:
    parsed = Tables(decision._repr_html_())
    assert ("b", {}) in parsed.tags
    for outcome in decision.outcomes:
        measured = outcome.passed + outcome.failed
        cells = parsed.row("data-requirement", outcome.requirement.check)
        assert cells[2] == outcome.status
        assert cells[3] == f"{_pct(outcome.passed / measured)} ({outcome.passed} of {measured})"
    assert parsed.items == [shown_reason(reason) for reason in decision.reasons]
    assert f"decision: {decision.decision}" in _flat(re.sub("<[^>]+>", "", decision._repr_html_()))


def test_comparison_html_holds_the_mcnemar_p(comparison: Comparison) -> None:
    parsed = Tables(comparison._repr_html_())
    p_cells = [attrs for attrs in parsed.cell_data if attrs.get("data-field") == "p_value"]
    assert [float(attrs["data-value"] or "nan") for attrs in p_cells] == [
        check.p_value for check in comparison.checks
    ]
    for check in comparison.checks:
        assert parsed.row("data-check", check.name)[6] == f"{check.p_value:.4g}"


def test_record_text_is_never_markup() -> None:
    report = hostile_report()
    decision = AcceptancePolicy((CheckRequirement(HOSTILE),)).evaluate(report)
    comparison = compare_reports(report, report)
    for obj in (report, decision, comparison):
        fragment = obj._repr_html_()
        parsed = Tables(fragment)
        tags = {tag for tag, _ in parsed.tags}
        assert not tags & {"img", "script", "style", "link", "iframe"}, tags
        assert not any(k.startswith("on") for _, attrs in parsed.tags for k in attrs)
        texts = [cell for _, cells in parsed.rows for cell in cells] + parsed.items
        assert any(HOSTILE in text for text in texts)
        # In rich too: "[bold]" in a reason prints as written.
        assert HOSTILE in _text(obj, 200)


def test_repr_is_unchanged_and_import_loads_no_rich(mixed: EvaluationReport) -> None:
    assert repr(mixed) == (f"EvaluationReport(trials=3, checks=2, digest={mixed.digest[:12]!r})")
    code = (
        "import sys, onrecord, onrecord.report, onrecord.policy, onrecord.compare, "
        "onrecord.episode, onrecord.dynamics_metrics; "
        "from onrecord.dynamics import ForecastEvidence, Transitions; "
        "print(sorted(m for m in sys.modules "
        "if m == 'rich' or m.startswith(('onrecord._display', 'onrecord.html'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_notebook_fragments_carry_no_element_ids(
    decision: PolicyDecision, comparison: Comparison
) -> None:
    """The fragments reuse the report pages' sections, whose ids (``id="reasons"``,
    ``id="checks"``…) two decisions shown in one notebook page repeated."""
    for fragment in (decision._repr_html_(), comparison._repr_html_()):
        assert Tables(fragment).tags  # a fragment with tables
        assert [tag for tag, attrs in Tables(fragment).tags if "id" in attrs] == []


def test_an_ascii_console_gets_ascii_tables(
    mixed: EvaluationReport, decision: PolicyDecision, comparison: Comparison
) -> None:
    """On a console writing ASCII (a notebook's log, a CI step), the tables were drawn
    in UTF-8 and reached it as ``\\u250f`` escapes, rows with ``≥`` one column wider
    than their border."""
    import io

    texts = []
    for shown in (mixed, decision, comparison):
        raw = io.BytesIO()
        stream = io.TextIOWrapper(raw, encoding="ascii", errors="backslashreplace")
        Console(file=stream, width=100).print(shown)
        stream.flush()
        text = raw.getvalue().decode("ascii")
        assert "\\u" not in text
        assert "\\x" not in text
        assert any(line.startswith("+--") for line in text.splitlines()), text  # ASCII boxes
        for block in re.findall(r"(?m)(?:^[+|].*\n?)+", text):  # each table: one width
            assert len({len(line) for line in block.splitlines()}) == 1, block
        texts.append(text)
    assert ">= 100.0%" in texts[1]  # the decision's threshold, substituted
