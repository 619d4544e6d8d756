"""A requirement naming a check without a glob character is looked up, not compared with
every check (a policy with a requirement per check of 2,000 took seconds): the checks it
matches, and the decisions, are the same as matching every name."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._policy_rules import matched_names, matches
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.errors import InputError
from onrecord.report import CheckResult, EvaluationReport, Trial
from onrecord.runner._policy_names import refuse_unmatched_requirements

_ALPHABET = st.sampled_from([*"ab/*?[]!\\-é", "\u0301"])  # and a combining accent
_NAMES = st.lists(st.text(_ALPHABET, min_size=1, max_size=6), max_size=8, unique=True)


@given(st.text(_ALPHABET, min_size=1, max_size=6), _NAMES)
def test_the_matched_names_are_those_every_name_compared_gives(
    pattern: str, names: list[str]
) -> None:
    every = tuple(name for name in names if matches(pattern, name))
    assert matched_names(pattern, names) == every
    assert matched_names(pattern, names, set(names)) == every


def test_a_policy_with_a_requirement_per_check_decides_as_each_alone() -> None:
    names = [f"check/{k}" for k in range(300)]
    trial = Trial(
        {"case_id": "c", "content_digest": "0" * 64},
        0,
        {"kind": "t"},
        tuple(
            CheckResult(n, "v1", "fail" if k % 50 == 3 else "pass", "r")
            for k, n in enumerate(names)
        ),
    )
    report = EvaluationReport.from_trials([trial])
    policy = AcceptancePolicy(
        (
            *(CheckRequirement(n) for n in names),
            CheckRequirement("check/1*"),
            CheckRequirement("nope"),
        )
    )
    decision = policy.evaluate(report)
    alone = [AcceptancePolicy((r,)).evaluate(report).outcomes[0] for r in policy.requirements]
    assert decision.outcomes == tuple(alone)
    # Six checks fail; the glob matches two of them (check/103, check/153) and fails too.
    assert [o.status for o in decision.outcomes].count("failed") == 7
    assert decision.outcomes[-2].matched == tuple(
        sorted(n for n in names if n.startswith("check/1"))
    )
    assert decision.outcomes[-1].status == "undecided"


def test_a_run_refuses_exactly_the_requirements_no_check_matches() -> None:
    checks = [
        OutcomeCheck(f"check/{k}", "v1", lambda e: OutcomeVerdict(True, "", {})) for k in range(500)
    ]
    wanted = [CheckRequirement(f"check/{k}") for k in range(500)]
    refuse_unmatched_requirements(AcceptancePolicy((*wanted, CheckRequirement("check/4?"))), checks)
    policy = AcceptancePolicy((*wanted, CheckRequirement("check/500"), CheckRequirement("x*")))
    with pytest.raises(InputError) as refused:
        refuse_unmatched_requirements(policy, checks)
    assert "requires 'check/500'" in str(refused.value)
    assert "'x*'" in str(refused.value)
    assert "'check/499'," not in str(refused.value).split("but no check")[0]
