"""Integers too long to print (Python refuses str() of more than 4300 digits) are
refused as any out-of-range integer is: a PortabilityError naming the field, never a
ValueError raised while the message was being written."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import to_portable
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode


@given(digits=st.integers(min_value=21, max_value=20_000), negative=st.booleans())
def test_an_integer_of_any_length_is_refused_naming_its_field(digits: int, negative: bool) -> None:
    value = (-1 if negative else 1) * 10 ** (digits - 1)
    with pytest.raises(PortabilityError) as caught:
        to_portable({"order": {"amount": value}}, "$.args")
    message = str(caught.value)
    assert message.startswith("$.args.order.amount is "), message
    assert "beyond the 64-bit range" in message
    assert len(message) < 300, message  # its size, not its 20,000 digits
    if digits > 4300:  # the ones str() refuses
        assert f"about {digits:,} digits" in message, message


def test_an_observer_returning_a_huge_integer_is_an_observer_error() -> None:
    def observe() -> Any:
        return {"count": 10**5000}

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    episode = capture_episode(
        lambda: gym.make("FrozenLake-v1", is_slippery=False),
        interact,
        case=EvalCase("walk", case_id="huge"),
        environment_id="FrozenLake-v1",
        observer_id="huge/v1",
        observe=observe,
        seed=0,
        max_steps=3,
    )
    # Before: "ValueError: Exceeds the limit (4300 digits) for integer string conversion".
    said = "PortabilityError: $.state.count is an integer of about 5,001 digits, beyond"
    assert episode.data["initial"]["observer_error"].startswith(said)
    assert episode.data["steps"]["observer_error"][0].startswith(said)
    assert episode.data["final_observer_error"].startswith(said)
