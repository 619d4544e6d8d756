"""ForecastEvidence storage under attack: hand-made records with a correct digest,
single-byte tampering, round trips, and ``verify_reference`` against other episodes."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import canonical_bytes, digest_bytes, load_record_bytes
from onrecord.dynamics import ForecastEvidence
from onrecord.dynamics_metrics import forecast_case_result
from onrecord.errors import (
    ConsistencyError,
    EvidenceError,
    InputError,
    OnrecordError,
    SchemaError,
)
from onrecord.integrations.gymnasium import capture_episode
from tests.dynamics.test_capture import ACTIONS, capture, persistence, seed_reference


@pytest.fixture(scope="module")
def reference() -> Any:
    return seed_reference()


@pytest.fixture(scope="module")
def forecast(reference: Any) -> ForecastEvidence:
    return capture(
        reference,
        lambda r: {
            "states": [r["initial_state"]] * 4,
            "standard_deviation": [[0.1] * 4] * 4,
        },
    )


def resealed(forecast: ForecastEvidence, change: Callable[[dict[str, Any]], Any]) -> dict[str, Any]:
    """The record after ``change``, with a digest that matches its new content."""
    data = forecast.data
    data.pop("digest")
    change(data)
    data["digest"] = digest_bytes(canonical_bytes(data))
    return data


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _drop(path: tuple[Any, ...]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return change


def _empty_plan(data: dict[str, Any]) -> None:
    data["action_scope"] = "observed_prefix"
    data["request"]["actions"] = []
    data["reference"]["states"] = []
    data["response"]["states"] = []
    data["response"]["standard_deviation"] = []


def _model_error(data: dict[str, Any]) -> None:
    data["status"] = "model_error"
    data["error"] = {"type": "ModelError", "message": "boom"}


MALFORMED = {
    "reference is a list": _set(("reference",), []),
    "request lacks actions": _drop(("request", "actions")),
    "response lacks states": _drop(("response", "states")),
    "horizons are text": _set(("horizons",), "ab"),
    "horizon beyond the plan": _set(("horizons",), [1, 9]),
    "model_id is a number": _set(("model_id",), 3),
    "angular is text": _set(("coordinates", 0, "angular"), "yes"),
    "coordinate names repeat": _set(("coordinates", 1, "name"), "x"),
    "episode is a number": _set(("episode",), 5),
    "unknown action_scope": _set(("action_scope",), "whenever"),
    "metadata is a list": _set(("response", "metadata"), [1]),
    "model error keeps a response": _model_error,
    "error is text": lambda d: (_model_error(d), d.update(error="x", response=None)),
    "horizon 0 on a model error": lambda d: (
        _model_error(d),
        d.update(response=None, horizons=[0]),
    ),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_hand_made_records_with_a_valid_digest_are_refused(
    forecast: ForecastEvidence, name: str
) -> None:
    # The digest proves self-consistency only; the shape must still be checked so a
    # crafted record fails at load, not as a KeyError inside the metrics.
    # The resealing itself is sound: an unchanged record resealed loads, so a refusal
    # below comes from the shape check and not from a digest that no longer matches.
    assert ForecastEvidence.from_dict(resealed(forecast, lambda d: None)).digest == (
        forecast.digest
    )
    data = resealed(forecast, MALFORMED[name])
    with pytest.raises((SchemaError, ConsistencyError)) as raised:
        ForecastEvidence.from_dict(data)
    assert isinstance(raised.value, EvidenceError)


def test_a_zero_action_forecast_with_deviations_loads(forecast: ForecastEvidence) -> None:
    # An empty deviation list used to crash the loader with min() of an empty sequence.
    data = resealed(forecast, _empty_plan)
    assert ForecastEvidence.from_dict(data).digest == data["digest"]


def test_every_single_byte_change_is_detected(forecast: ForecastEvidence) -> None:
    raw = forecast.to_bytes()
    for i in range(0, len(raw), 3):
        for replacement in {raw[i] ^ 1, ord("0") if raw[i] != ord("0") else ord("1")}:
            changed = bytearray(raw)
            changed[i] = replacement
            with pytest.raises(OnrecordError):
                ForecastEvidence.from_dict(load_record_bytes(bytes(changed), "tampered"))


finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    offsets=st.lists(st.lists(finite, min_size=4, max_size=4), min_size=4, max_size=4),
    std=st.one_of(st.none(), st.floats(1e-300, 1e6)),
    metadata=st.dictionaries(
        st.text(max_size=5), st.integers(-(2**63), 2**63 - 1) | st.text(max_size=5), max_size=3
    ),
)
def test_round_trip_is_exact_for_any_valid_answer(
    reference: Any, offsets: list[list[float]], std: float | None, metadata: dict[str, Any]
) -> None:
    def model(request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = {"states": offsets, "metadata": metadata}
        if std is not None:
            answer["standard_deviation"] = [[std] * 4] * 4
        return answer

    forecast = capture(reference, model)
    assert forecast.status == "ok"
    again = ForecastEvidence.from_dict(load_record_bytes(forecast.to_bytes(), "round trip"))
    assert again.digest == forecast.digest
    assert again.to_bytes() == forecast.to_bytes()
    assert again.metadata == forecast.metadata
    forecast_case_result(again, {"x": 0.1})


def _episode(observe: Callable[[Any], dict[str, Any]], case_id: str) -> Any:
    holder: dict[str, Any] = {}

    def factory() -> Any:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in ACTIONS:
            env.step(action)

    return capture_episode(
        factory,
        interact,
        case=EvalCase("probe", case_id=case_id),
        environment_id="CartPole-v1/native",
        observer_id="native-state/v1",
        observe=lambda: observe(holder["env"]),
        seed=3,
        max_steps=len(ACTIONS),
    )


def test_verify_reference_with_a_custom_state_key() -> None:
    episode = _episode(lambda env: {"native": list(env.unwrapped.state)}, "custom-key")
    forecast = capture(episode, persistence, state_key="native")
    assert forecast.status == "ok"
    forecast.verify_reference(episode, state_key="native")
    with pytest.raises(ConsistencyError, match="state_key"):
        forecast.verify_reference(episode)


def test_verify_reference_accepts_the_rows_capture_left_out() -> None:
    calls = {"n": 0}

    def observe(env: Any) -> dict[str, Any]:
        calls["n"] += 1
        state = list(env.unwrapped.state)
        return {"state": state[:3] if calls["n"] == 3 else state}  # one short vector

    episode = _episode(observe, "short-row")
    forecast = capture(episode, persistence, horizons=[1, 2, 3, 4])
    assert forecast.status == "ok"
    assert forecast.data["reference"]["states"][1] is None
    forecast.verify_reference(episode)


def test_verify_reference_refuses_another_episode_and_non_episodes(
    forecast: ForecastEvidence,
) -> None:
    with pytest.raises(ConsistencyError, match="references episode"):
        forecast.verify_reference(seed_reference(seed=8))
    with pytest.raises(InputError, match="EpisodeEvidence"):
        forecast.verify_reference("episode.json")
