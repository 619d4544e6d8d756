"""A report built from something other than Trial objects is refused with an InputError
naming the item and the fix, not an AttributeError from inside the lock."""

from __future__ import annotations

from typing import Any

import pytest

from onrecord.errors import InputError
from onrecord.report import CheckResult, EvaluationReport, Trial

GOOD = Trial(
    {"case_id": "c", "content_digest": "a" * 64},
    0,
    {"kind": "test"},
    (CheckResult("a", "v1", "pass", "ok"),),
)


@pytest.mark.parametrize(
    ("trials", "message"),
    [
        ([GOOD.to_dict()], r"item #0 is dict .*Trial\.from_dict"),
        ([GOOD, None], "item #1 is NoneType"),
        (None, "iterable of Trial objects, got NoneType"),
        ("trial", "iterable of Trial objects, got str"),
    ],
)
def test_from_trials_names_the_item_that_is_not_a_trial(trials: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        EvaluationReport.from_trials(trials)
    with pytest.raises(InputError, match=message):
        EvaluationReport(trials, EvaluationReport.from_trials([GOOD]).lock)


@pytest.mark.parametrize("reports", [[None], [GOOD], None])
def test_merge_names_the_item_that_is_not_a_report(reports: Any) -> None:
    with pytest.raises(InputError, match=r"merge takes EvaluationReport objects; item #0"):
        EvaluationReport.merge(reports)


def test_trials_given_as_a_generator_still_make_a_report() -> None:
    report = EvaluationReport.from_trials(trial for trial in [GOOD])
    assert len(report.trials) == 1
