"""Save → load round trips of reports and policies (hypothesis), and truncated files."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.errors import EvidenceError
from onrecord.report import STATUSES, CheckResult, EvaluationReport, Trial
from tests.core.test_policy_report_probe import DIGEST, REQUIRE_A, SAMPLE


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.data())
def test_any_truncation_is_refused(tmp_path: Path, data: st.DataObject) -> None:
    raw = SAMPLE.to_bytes()
    cut = data.draw(st.integers(min_value=0, max_value=len(raw) - 2))
    path = tmp_path / "truncated.json"
    path.write_bytes(raw[:cut])
    with pytest.raises(EvidenceError):
        EvaluationReport.load(path)
    policy_raw = REQUIRE_A.to_dict()
    policy_bytes = orjson.dumps(policy_raw, option=orjson.OPT_SORT_KEYS)
    path.write_bytes(policy_bytes[: cut % len(policy_bytes)])
    with pytest.raises(EvidenceError):
        AcceptancePolicy.load(path)


# --- round trips -------------------------------------------------------------------

TEXT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12
).filter(str.strip)
FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)
INTEGERS = st.integers(-(2**63), 2**63 - 1)
REASON = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8)

requirements = st.builds(
    CheckRequirement,
    TEXT,
    critical=st.booleans(),
    min_pass_rate=st.one_of(
        st.just(1), st.floats(min_value=0, max_value=1, exclude_min=True, allow_nan=False)
    ),
)
policies = st.builds(
    AcceptancePolicy, st.lists(requirements, min_size=1, max_size=5).map(tuple), name=TEXT
)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(policies)
def test_policy_save_load_round_trip(tmp_path: Path, policy: AcceptancePolicy) -> None:
    path = policy.save_json(tmp_path / "policy.json")
    loaded = AcceptancePolicy.load(path)
    assert loaded == policy
    assert loaded.digest == policy.digest
    assert loaded.evaluate(SAMPLE).to_dict() == policy.evaluate(SAMPLE).to_dict()


@st.composite
def reports(draw: st.DrawFn) -> EvaluationReport:
    checks = draw(st.lists(TEXT, min_size=0, max_size=4, unique=True))
    cases = draw(st.lists(TEXT, min_size=0, max_size=4, unique=True))
    trials = []
    for case_id in cases:
        for repeat in range(draw(st.integers(min_value=1, max_value=3))):
            results = tuple(
                CheckResult(
                    name,
                    "v1",
                    draw(st.sampled_from(STATUSES)),
                    draw(REASON),
                    draw(st.dictionaries(TEXT, st.one_of(FINITE, INTEGERS), max_size=2)),
                )
                for name in checks
                if draw(st.booleans()) or name == checks[0]
            )
            measures = draw(st.dictionaries(TEXT, FINITE, max_size=2))
            issues = tuple(draw(st.lists(TEXT, max_size=2)))
            trials.append(trial_of(case_id, repeat, results, issues, measures))
    return EvaluationReport.from_trials(trials)


def trial_of(
    case_id: str,
    repeat: int,
    results: tuple[CheckResult, ...],
    issues: tuple[str, ...],
    measures: dict[str, float],
) -> Trial:
    return Trial(
        {"case_id": case_id, "content_digest": DIGEST},
        repeat,
        {"kind": "test"},
        results,
        coverage_issues=issues,
        measures=measures,
        settings={"environment_id": "env", "seed": repeat},
    )


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(reports())
def test_report_save_load_round_trip(tmp_path: Path, rep: EvaluationReport) -> None:
    path = rep.save_json(tmp_path / "report.json")
    loaded = EvaluationReport.load(path)
    assert loaded.digest == rep.digest
    assert loaded.to_bytes() == path.read_bytes()
    assert loaded.summary() == rep.summary()
    assert REQUIRE_A.evaluate(loaded) == REQUIRE_A.evaluate(rep)
