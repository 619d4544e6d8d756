"""The step-order rules of verification, checked with list operations, decide exactly as
the rule written out step by step: property-tested over arbitrary attempt sequences."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord.episode._verify import _verify_order
from onrecord.errors import ConsistencyError

STATUSES = ["ok", "env_error", "invalid_action", "lifecycle", "step_limit"]


def _reference(steps: dict[str, Any], max_steps: int) -> bool:
    """The rule, one step at a time: only refusals after the end, and ``step_limit``
    exactly on the attempts past ``max_steps``."""
    ended_at = None
    for position, index in enumerate(steps["transition_index"]):
        if steps["terminated"][position] or steps["truncated"][position]:
            ended_at = index
            break
    for index, value in enumerate(steps["status"]):
        after_end = ended_at is not None and index > ended_at
        if after_end and value != "lifecycle":
            return False
        if not after_end and (value == "step_limit") != (index >= max_steps):
            return False
    return True


_FLAG = st.one_of(st.booleans(), st.sampled_from([0, 1, 2, "yes", None]))


@st.composite
def _steps(draw: Any) -> tuple[dict[str, Any], int]:
    status = draw(st.lists(st.sampled_from(STATUSES), max_size=12))
    succeeded = [i for i, value in enumerate(status) if value == "ok"]
    plain = draw(st.booleans())  # mostly real bools; sometimes anything truthy or not
    flag = st.booleans() if plain else _FLAG
    terminated = draw(st.lists(flag, min_size=len(succeeded), max_size=len(succeeded)))
    truncated = draw(st.lists(flag, min_size=len(succeeded), max_size=len(succeeded)))
    steps = {
        "status": status,
        "transition_index": succeeded,
        "terminated": terminated,
        "truncated": truncated,
    }
    return steps, draw(st.integers(0, 14))


@settings(max_examples=600, deadline=None)
@given(_steps())
def test_list_operations_decide_as_the_step_by_step_rule(case: tuple[dict[str, Any], int]) -> None:
    steps, max_steps = case
    if _reference(steps, max_steps):
        _verify_order(steps, max_steps)
    else:
        with pytest.raises(ConsistencyError, match=r"^step \d+ has status"):
            _verify_order(steps, max_steps)
