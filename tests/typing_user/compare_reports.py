"""docs/comparison.md and docs/reports-and-policies.md (annotated); frozen-dataclass WorldModel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, assert_type

import numpy as np
from numpy.typing import NDArray

from onrecord import (
    AcceptancePolicy,
    CheckRequirement,
    Comparison,
    EvalCase,
    EvaluationReport,
    compare_reports,
)
from onrecord.dynamics import Prediction, Transitions, WorldModel
from onrecord.report import CheckResult, Trial


def trial(case_id: str, passed: bool) -> Trial:
    result = CheckResult("posted_once", "v1", "pass" if passed else "fail", "why")
    return Trial(EvalCase("task", case_id=case_id).to_dict(), 0, {"kind": "test"}, (result,))


report_a: EvaluationReport = EvaluationReport.from_trials([trial(f"c{i}", True) for i in range(6)])
report_b: EvaluationReport = EvaluationReport.from_trials(
    [trial(f"c{i}", i % 2 == 0) for i in range(6)]
)
comparison: Comparison = compare_reports(report_a, report_b)
for check in comparison.checks:
    p: float | None = check.p_value
    print(check.name, check.only_a, check.only_b, p, check.discordant)
for measure in comparison.measures:
    print(measure.name, measure.mean_difference, measure.interval)
policy = AcceptancePolicy(
    (
        CheckRequirement("posted_once", critical=True),
        CheckRequirement("style", critical=False, min_pass_rate=0.9),
    )
)
decision = policy.evaluate(report_b)
summary = report_b.summary()
rate: float | None = summary.pass_rate
print(decision.decision, decision.exit_code, rate, summary.interval, summary.outcomes)
assert_type(comparison.checks[0].p_value, float)
assert_type(summary.checks[0].pass_rate, float | None)


@dataclass(frozen=True)
class Persistence:
    model_id: str = "persistence/mine-v1"

    def fit(self, transitions: Transitions) -> None:
        return None

    def predict(
        self,
        initial_states: NDArray[np.float64],
        actions: NDArray[Any],
        *,
        uncertainty: bool = True,
    ) -> Prediction:
        h = actions.shape[1]
        return Prediction(np.repeat(initial_states[:, None, :], h, axis=1))

    def describe(self) -> dict[str, Any]:
        return {"kind": "persistence"}


model: WorldModel = Persistence()
print(model.model_id, model.predict(np.zeros((1, 2)), np.zeros((1, 3))).mean.shape)
