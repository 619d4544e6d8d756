"""Bad input to the remittance tools: rejected with a clear message, state unchanged,
never a harness crash."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.domains.remittance import (
    TOOLS,
    WRITE_TOOLS,
    RemittanceEnvironment,
    load_tasks,
)
from onrecord.envkit import ToolWorld

TASK = next(t for t in load_tasks() if t.task_id == "partial-02")


@pytest.fixture(scope="module")
def env() -> Iterator[RemittanceEnvironment]:
    environment = RemittanceEnvironment(TASK)
    yield environment
    environment.close()


def _line(env: RemittanceEnvironment) -> dict[str, Any]:
    return dict(env.expectation["lines"][0])


def _call(world: ToolWorld, tool: Any, arguments: Any) -> dict[str, Any]:
    before = world.state_digest()
    event = world.call(tool, arguments)
    if event["status"] != "ok":
        assert world.state_digest() == before
    return event


def _message(world: ToolWorld, tool: str, arguments: Any) -> str:
    event = _call(world, tool, arguments)
    assert event["status"] == "rejected"
    return str(event["error"]["message"])


def test_amounts_that_are_not_money_are_rejected(env: RemittanceEnvironment) -> None:
    world = env.world
    world.reset()
    line = _line(env)
    base = {"remittance_line_id": line["rline_id"], "claim_line_id": line["targets"][0]}
    assert _message(world, "post_allocation", {**base, "amount_cents": 12.5}) == (
        "post_allocation: arguments.amount_cents must be an integer, got 12.5"
    )
    assert _message(world, "post_allocation", {**base, "amount_cents": "12.34"}) == (
        "post_allocation: arguments.amount_cents must be an integer, got '12.34'"
    )
    assert _message(world, "post_allocation", {**base, "amount_cents": True}) == (
        "post_allocation: arguments.amount_cents must be an integer, got True"
    )
    assert _message(world, "post_allocation", {**base, "amount_cents": -500}) == (
        "post_allocation: arguments.amount_cents must be at least 1, got -500"
    )


def test_unknown_ids_and_bad_dates_are_rejected(env: RemittanceEnvironment) -> None:
    world = env.world
    world.reset()
    line = _line(env)
    assert _message(world, "read_claim", {"claim_id": "CLM-NOPE"}) == (
        "unknown claim_id 'CLM-NOPE'; search first and use an id from the results"
    )
    assert _message(
        world,
        "post_allocation",
        {"remittance_line_id": "RL-0", "claim_line_id": line["targets"][0], "amount_cents": 100},
    ) == ("unknown remittance_line_id 'RL-0'; search first and use an id from the results")
    case = world.call(
        "open_case", {"claim_id": line["claim_id"], "kind": "other", "reason": "test"}
    )["result"]["case_id"]
    assert _message(
        world, "schedule_followup", {"case_id": case, "due_date": "12/01/2026", "action": "x"}
    ) == (
        "schedule_followup: arguments.due_date must match the pattern "
        "'^\\\\d{4}-\\\\d{2}-\\\\d{2}$', got '12/01/2026'"
    )
    assert _message(
        world, "schedule_followup", {"case_id": case, "due_date": "2026-02-30", "action": "x"}
    ) == ("due_date '2026-02-30' is not a calendar date; write it as YYYY-MM-DD, e.g. 2026-12-15")
    assert _message(
        world, "schedule_followup", {"case_id": case, "due_date": "2020-01-01", "action": "x"}
    ) == ("due_date 2020-01-01 is in the past (today is 2026-11-30); pick today or a later date")


def test_malformed_calls_from_an_agent_are_logged_not_raised(
    env: RemittanceEnvironment, tmp_path: Path
) -> None:
    calls: list[Any] = [
        "not a call",
        {"tool": 7},
        {"tool": "post_allocation"},
        {"tool": "read_remittance", "arguments": [1, 2]},
        {"tool": "finish", "arguments": {"message": "done"}},
    ]
    run = env.run(lambda observation: calls[observation["step"]], tmp_path / "ep")
    statuses = [e["status"] for e in run.episode.actions]
    assert statuses == ["rejected"] * 4 + ["ok"]
    assert run.episode.diff == {}


_VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True),
    st.text(max_size=12),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    tool=st.sampled_from([t.name for t in TOOLS] + ["drop_tables", ""]),
    arguments=st.one_of(
        _VALUES,
        st.dictionaries(
            st.sampled_from(
                [
                    "remittance_line_id",
                    "claim_line_id",
                    "amount_cents",
                    "claim_id",
                    "case_id",
                    "due_date",
                    "group_code",
                    "reason_code",
                    "allocation_id",
                    "kind",
                    "status",
                    "text",
                    "extra",
                ]
            ),
            _VALUES,
            max_size=6,
        ),
    ),
)
def test_random_tool_calls_never_crash_and_rejections_change_nothing(
    env: RemittanceEnvironment, tool: str, arguments: Any
) -> None:
    world = env.world
    world.reset()
    before = world.state_digest()
    event = world.call(tool, arguments)
    assert event["status"] in ("ok", "rejected")
    if event["status"] == "rejected":
        assert event["error"]["message"]
        assert world.state_digest() == before
    elif tool not in WRITE_TOOLS:
        assert world.state_digest() == before
