"""A report's lock says which environment settings each repeat ran in, so two reports whose
cases swapped environments are not paired as if comparable (equal locks must mean
pairable trials)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord import compare_reports
from onrecord._canonical import content_digest, record_bytes
from onrecord.errors import ComparisonRefused
from onrecord.report import CheckResult, EvaluationReport, Trial

DIGEST = "f" * 64


def trial(case_id: str, environment: str, status: str = "pass", repeat: int = 0) -> Trial:
    return Trial(
        {"case_id": case_id, "content_digest": DIGEST},
        repeat,
        {"kind": "test"},
        (CheckResult("a", "v1", status, status),),  # type: ignore[arg-type]
        settings={"environment_id": environment, "seed": repeat},
    )


def test_cases_that_swapped_environments_are_refused_not_paired() -> None:
    # Before the fix both locks listed the environments {easy, hard} and the same seeds:
    # equal locks, and x (easy in A, hard in B) was paired as a regression.
    a = EvaluationReport.from_trials([trial("x", "easy"), trial("y", "hard", "fail")])
    b = EvaluationReport.from_trials([trial("x", "hard", "fail"), trial("y", "easy")])
    assert a.lock != b.lock
    with pytest.raises(ComparisonRefused) as refused:
        compare_reports(a, b)
    (reason,) = refused.value.reasons
    assert "2 cases ran in other environment settings in A than in B" in reason
    assert "(x, y)" in reason  # named plainly, not as a Python list


def test_a_report_of_one_environment_keeps_its_lock_form() -> None:
    # Only a report of several environment settings records an index per repeat.
    report = EvaluationReport.from_trials([trial("x", "env", repeat=r) for r in range(2)])
    assert report.lock["cases"][0]["trials"] == [[0, 0], [1, 1]]


def test_a_repeat_records_the_index_of_its_environment() -> None:
    report = EvaluationReport.from_trials([trial("x", "hard"), trial("x", "easy", repeat=1)])
    environments = [env["environment_id"] for env in report.lock["environments"]]
    indices = {entry[0]: entry[2] for entry in report.lock["cases"][0]["trials"]}
    assert {repeat: environments[index] for repeat, index in indices.items()} == {
        0: "hard",
        1: "easy",
    }


def test_a_report_of_several_environments_round_trips_and_merges(tmp_path: Path) -> None:
    easy = EvaluationReport.from_trials([trial("x", "easy"), trial("y", "easy")])
    hard = EvaluationReport.from_trials([trial("z", "hard")])
    merged = EvaluationReport.merge([easy, hard])
    loaded = EvaluationReport.load(merged.save_json(tmp_path / "report.json"))
    assert loaded.lock == merged.lock
    assert compare_reports(merged, loaded).pairs == 3


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["e1", "e2", "e3"]), min_size=1, max_size=6),
    st.randoms(use_true_random=False),
)
def test_the_lock_depends_on_what_ran_where_not_on_trial_order(
    environments: list[str], rng: random.Random
) -> None:
    trials = [trial(f"case-{i}", env) for i, env in enumerate(environments)]
    shuffled = trials[:]
    rng.shuffle(shuffled)
    assert EvaluationReport.from_trials(shuffled).lock == EvaluationReport.from_trials(trials).lock
    moved = environments[1:] + environments[:1]  # each case in its neighbour's environment
    other = EvaluationReport.from_trials(trial(f"case-{i}", env) for i, env in enumerate(moved))
    if moved != environments:
        with pytest.raises(ComparisonRefused):
            compare_reports(EvaluationReport.from_trials(trials), other)


def saved_by_an_earlier_onrecord(report: EvaluationReport, path: Path) -> Path:
    """``report`` saved as onrecord wrote it before each repeat's environment was in the
    lock (``[repeat, seed]`` entries), with a valid digest."""
    data = report.to_dict()
    del data["digest"]
    for case in data["lock"]["cases"]:
        case["trials"] = [entry[:2] for entry in case["trials"]]
    path.write_bytes(record_bytes({**data, "digest": content_digest(data)}))
    return path


def test_a_report_saved_before_the_environment_index_still_loads(tmp_path: Path) -> None:
    # Every remittance run's report is of 33 environment settings: refusing the earlier
    # form would have made every saved run's report unreadable.
    report = EvaluationReport.from_trials([trial("x", "easy"), trial("y", "hard", "fail")])
    old = EvaluationReport.load(saved_by_an_earlier_onrecord(report, tmp_path / "old.json"))
    assert old.trials == report.trials
    assert [len(entry) for case in old.lock["cases"] for entry in case["trials"]] == [2, 2]


def test_an_earlier_lock_and_a_new_one_are_refused_saying_how_to_pair_them(
    tmp_path: Path,
) -> None:
    report = EvaluationReport.from_trials([trial("x", "easy"), trial("y", "hard", "fail")])
    old = EvaluationReport.load(saved_by_an_earlier_onrecord(report, tmp_path / "old.json"))
    for a, b, side in ((old, report, "A"), (report, old, "B")):
        with pytest.raises(ComparisonRefused) as refused:
            compare_reports(a, b)
        (reason,) = refused.value.reasons
        assert reason.startswith(f"{side}'s lock was saved by an earlier onrecord")
        assert "onrecord regrade RUN" in reason
    rebuilt = EvaluationReport.from_trials(old.trials)
    assert compare_reports(rebuilt, report).pairs == 2


def test_two_earlier_locks_are_paired_only_where_the_trials_ran_alike(tmp_path: Path) -> None:
    a = EvaluationReport.from_trials([trial("x", "easy"), trial("y", "hard", "fail")])
    b = EvaluationReport.from_trials([trial("x", "hard", "fail"), trial("y", "easy")])
    old_a = EvaluationReport.load(saved_by_an_earlier_onrecord(a, tmp_path / "a.json"))
    old_b = EvaluationReport.load(saved_by_an_earlier_onrecord(b, tmp_path / "b.json"))
    assert old_a.lock == old_b.lock  # the earlier form cannot tell them apart...
    with pytest.raises(ComparisonRefused) as refused:  # ...their trials can
        compare_reports(old_a, old_b)
    assert "2 cases ran in other environment settings in A than in B" in str(refused.value)
    assert compare_reports(old_a, old_a).pairs == 2
