"""Intervals that are honest about repeats, thresholds on the interval, and a word on
bootstrap intervals from few pairs.

- A pass-rate interval is a Wilson interval clustered by case (Kish effective sample
  size): 12 failures from 4 of 33 tasks, 3 repeats each, are not 12 independent
  failures of 99. Plain Wilson when each case runs once; never narrower than Wilson.
- ``CheckRequirement(min_lower_bound=...)`` requires the interval's lower bound, not
  only the point estimate, to reach a value; a policy without it keeps its digest.
- ``compare`` says when a measure's percentile bootstrap interval rests on too few pairs.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._canonical import content_digest
from onrecord._stats import clustered_interval, design_effect, wilson_interval
from onrecord.errors import PolicyError
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord

DIGEST = "d" * 64


def _report(
    statuses: dict[tuple[str, int], str], measure: dict[str, float] | None = None
) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": case_id, "content_digest": DIGEST},
            repeat,
            {"kind": "test"},
            (CheckResult("posted", "v1", status, "why"),),
            measures={"return": (measure or {}).get(case_id, 0.0)},
            settings={"environment_id": "env"},
        )
        for (case_id, repeat), status in statuses.items()
    )


def _clustered_report() -> EvaluationReport:
    """99 episodes of 33 tasks × 3 repeats; every failure from 4 tasks (87 of 99)."""
    return _report(
        {(f"task-{t}", r): "fail" if t < 4 else "pass" for t in range(33) for r in range(3)}
    )


def _row(text: str, first: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"│ {first} "))
    return [cell.strip() for cell in line.strip("│").split("│")]


# --- the interval -------------------------------------------------------------------

cases = st.lists(
    st.integers(1, 6).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    min_size=1,
    max_size=40,
)


@given(cases)
def test_the_clustered_interval_is_a_proper_interval_never_narrower_than_wilson(
    per_case: list[tuple[int, int]],
) -> None:
    passes, results = sum(p for p, _ in per_case), sum(n for _, n in per_case)
    low, high = clustered_interval(per_case)
    plain_low, plain_high = wilson_interval(passes, results)
    assert 0.0 <= low <= passes / results <= high <= 1.0
    assert low <= plain_low + 1e-12
    assert high >= plain_high - 1e-12
    assert design_effect(per_case) >= 1.0


@given(st.lists(st.integers(0, 1), min_size=1, max_size=200))
def test_each_case_once_is_exactly_wilson(outcomes: list[int]) -> None:
    assert clustered_interval([(o, 1) for o in outcomes]) == wilson_interval(
        sum(outcomes), len(outcomes)
    )


def test_failures_from_few_tasks_widen_the_interval() -> None:
    per_case = [(0, 3)] * 4 + [(3, 3)] * 29
    assert wilson_interval(87, 99) == pytest.approx((0.8000, 0.9293), abs=1e-4)
    # Every task passes or fails all its repeats: the design effect is 3, the effective
    # sample 33 tasks, so the interval is Wilson's for 29 of 33.
    assert design_effect(per_case) == pytest.approx(3.0)
    assert clustered_interval(per_case) == pytest.approx(wilson_interval(29, 33))
    assert clustered_interval(per_case) == pytest.approx((0.7267, 0.9518), abs=1e-4)
    # Failures spread over tasks, one repeat each: the cases vary little, no widening.
    spread = [(2, 3)] * 12 + [(3, 3)] * 21
    assert clustered_interval(spread) == wilson_interval(87, 99)


def test_the_report_and_its_views_give_the_clustered_interval(tmp_path: Path) -> None:
    report = _clustered_report()
    summary = report.summary()
    assert summary.interval == pytest.approx((0.7267, 0.9518), abs=1e-4)
    assert summary.checks[0].interval == pytest.approx((0.7267, 0.9518), abs=1e-4)
    path = report.save_json(tmp_path / "report.json")
    policy = AcceptancePolicy((CheckRequirement("posted", min_pass_rate=0.85),)).save_json(
        tmp_path / "policy.json"
    )
    md, junit = tmp_path / "gate.md", tmp_path / "junit.xml"
    done = onrecord("gate", path, "--policy", policy, "--markdown", md, "--junit-xml", junit)
    assert done.returncode == 0, done.stderr
    assert _row(done.stdout, "posted")[3:5] == ["87.9% (87 of 99)", "72.7% – 95.2%"]
    assert "clustered by case" in done.stdout
    assert "| 95% interval, clustered by case |" in md.read_text()
    assert "95% interval 72.7% – 95.2%, clustered by case" in junit.read_text()
    saved = tmp_path / "decision.json"
    assert onrecord("gate", path, "--policy", policy, "--output", saved).returncode == 0
    shown = onrecord("show", saved)  # the report beside it gives the cases
    assert _row(shown.stdout, "posted")[3:5] == ["87.9% (87 of 99)", "72.7% – 95.2%"]
    shown = onrecord("show", path)
    assert "(95% interval 72.7% – 95.2%, clustered by case)" in shown.stdout
    html = onrecord("report", path, "-o", tmp_path / "r.html")
    assert html.returncode == 0, html.stderr
    assert "95% interval, clustered by case" in (tmp_path / "r.html").read_text()


# --- min_lower_bound ----------------------------------------------------------------


def test_a_rate_that_meets_the_threshold_can_fail_on_its_lower_bound(tmp_path: Path) -> None:
    # 19 of 20 meets 0.95; the interval's lower bound is 76.4 %.
    report = _report({(f"case-{i}", 0): "fail" if i == 0 else "pass" for i in range(20)})
    loose = AcceptancePolicy((CheckRequirement("posted", min_pass_rate=0.95),))
    assert loose.evaluate(report).decision == "accept"
    strict = AcceptancePolicy(
        (CheckRequirement("posted", min_pass_rate=0.95, min_lower_bound=0.9),), name="strict"
    )
    decision = strict.evaluate(report)
    assert decision.decision == "reject"
    (reason,) = decision.reasons
    assert "76.4% < min_lower_bound 0.9: the lower bound decided" in reason
    (item,) = decision.to_dict()["requirements"]
    assert item["min_lower_bound"] == 0.9
    assert item["interval"] == pytest.approx([0.7639, 0.9911], abs=1e-4)
    met = AcceptancePolicy(
        (CheckRequirement("posted", min_pass_rate=0.95, min_lower_bound=0.75),)
    ).evaluate(report)
    assert met.decision == "accept"
    assert "76.4% >= min_lower_bound 0.75" in met.outcomes[0].explanation
    # Saved, the decision verifies and is decided again from the policy beside it.
    path = report.save_json(tmp_path / "report.json")
    policy = strict.save_json(tmp_path / "policy.json")
    saved = tmp_path / "decision.json"
    done = onrecord("gate", path, "--policy", policy, "--output", saved)
    assert done.returncode == 1, done.stderr
    assert "lower bound ≥ 90.0%" in onrecord("gate", path, "--policy", policy).stdout
    verified = onrecord("verify", saved)
    assert verified.returncode == 0, verified.stderr
    assert "as policy.json decides" in verified.stdout


def test_the_lower_bound_is_clustered_by_case() -> None:
    # 87 of 99: plain Wilson's lower bound (80.0 %) would meet 0.78; clustered (72.7 %) not.
    policy = AcceptancePolicy(
        (CheckRequirement("posted", min_pass_rate=0.85, min_lower_bound=0.78),)
    )
    decision = policy.evaluate(_clustered_report())
    assert decision.decision == "reject"
    # Rejected by the lower bound, not by the rate (87.9% meets 0.85).
    (reason,) = decision.reasons
    assert "72.7% < min_lower_bound 0.78: the lower bound decided" in reason
    # The same 87 of 99 from 99 distinct cases run once: plain Wilson, computed here
    # by its formula, has its lower bound at 80.0%, so the same policy accepts.
    n, p, z = 99, 87 / 99, 1.959964
    low = (p + z * z / (2 * n) - z * (p * (1 - p) / n + z * z / (4 * n * n)) ** 0.5) / (
        1 + z * z / n
    )
    assert round(low, 3) == 0.800
    flat = _report({(f"case-{i}", 0): "fail" if i < 12 else "pass" for i in range(99)})
    assert policy.evaluate(flat).decision == "accept"


def test_a_policy_without_a_lower_bound_keeps_its_bytes_and_digest() -> None:
    policy = AcceptancePolicy((CheckRequirement("posted", min_pass_rate=0.9),), name="p")
    body = {
        "schema": "onrecord.policy/v1",
        "name": "p",
        "requirements": [{"check": "posted", "critical": True, "min_pass_rate": 0.9}],
    }
    assert policy.to_dict() == {**body, "digest": content_digest(body)}
    decision = policy.evaluate(_clustered_report()).to_dict()
    assert "interval" not in decision["requirements"][0]
    bounded = AcceptancePolicy(
        (CheckRequirement("posted", min_pass_rate=0.9, min_lower_bound=0.8),), name="p"
    )
    again = AcceptancePolicy.from_dict(orjson.loads(orjson.dumps(bounded.to_dict())))
    assert again == bounded
    assert again.digest == bounded.digest != policy.digest


@pytest.mark.parametrize(
    ("value", "shown"), [("1", "got 1"), ("0", "got 0"), ("true", "got True"), ('"0.9"', "'0.9'")]
)
def test_a_bad_lower_bound_in_a_policy_file_is_refused_by_name(
    tmp_path: Path, value: str, shown: str
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(f'[[requirements]]\ncheck = "posted"\nmin_lower_bound = {value}\n')
    report = _clustered_report().save_json(tmp_path / "report.json")
    done = onrecord("gate", report, "--policy", policy)
    assert done.returncode == 3
    assert "min_lower_bound must be in (0, 1)" in done.stderr
    assert shown in done.stderr
    with pytest.raises(PolicyError, match="min_lower_bound"):
        CheckRequirement("posted", min_lower_bound=float("nan"))


# --- bootstrap with few pairs -------------------------------------------------------


@pytest.mark.parametrize("surface", ["terminal", "markdown", "html"])
def test_a_bootstrap_interval_from_few_pairs_says_so(tmp_path: Path, surface: str) -> None:
    keys = [(f"case-{i}", 0) for i in range(8)]
    a = _report(dict.fromkeys(keys, "pass"), {f"case-{i}": 200.0 + i for i in range(8)})
    b = _report(dict.fromkeys(keys, "pass"), {f"case-{i}": 40.0 + 3 * i for i in range(8)})
    paths = a.save_json(tmp_path / "a.json"), b.save_json(tmp_path / "b.json")
    out = tmp_path / "out"
    option = {"terminal": [], "markdown": ["--markdown", out], "html": ["--html", out]}[surface]
    done = onrecord("compare", *paths, *option)
    assert done.returncode == 0, done.stderr
    text = (done.stdout if surface == "terminal" else out.read_text()).replace("\n", " ")
    assert "with pairs from fewer than 20 cases it is too narrow" in text
    assert "return (8 pairs)" in text


def test_enough_pairs_need_no_bootstrap_note(tmp_path: Path) -> None:
    keys = [(f"case-{i}", 0) for i in range(20)]
    a = _report(dict.fromkeys(keys, "pass"), {f"case-{i}": float(i) for i in range(20)})
    b = _report(dict.fromkeys(keys, "pass"), {f"case-{i}": 2.0 * i for i in range(20)})
    done = onrecord("compare", a.save_json(tmp_path / "a.json"), b.save_json(tmp_path / "b.json"))
    assert done.returncode == 0, done.stderr
    assert "too narrow" not in done.stdout
