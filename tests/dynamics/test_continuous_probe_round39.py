"""Round 39: a continuous-control researcher's walk through docs/world-models.md.

* Coordinates that do not fit the reference's state (Pendulum's internal state is two
  numbers; one or three coordinates declared) are the caller's ``InputError`` naming
  ``coordinates``, not the reference's ``simulator_error`` (which blamed the
  environment and, in a report, read as "reference failed").
* The experiment's headline ``ratio`` (blind over action-conditioned action-effect
  error) is taken over the pairs both models forecast without error (analysis v5),
  not over two different sets of pairs; runs of v4 replay the ratio they saved, and a
  model without an effect error gives no ratio instead of a TypeError.

The headline tests reuse the smoke run of ``test_effect_pairs_round38`` and make real
``model_error`` forecasts of the blind model (its model raising) for some pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    Coordinate,
    ForecastEvidence,
    capture_forecast,
    capture_forecasts,
    capture_plan,
    get_simulator,
)
from onrecord.dynamics.experiment._analyze import load_evidence
from onrecord.dynamics.experiment._protocol import ANALYSIS
from onrecord.dynamics.experiment._store import load_episodes, read_json
from onrecord.dynamics.experiment._tables import Evidence, compute_tables
from onrecord.errors import InputError
from tests.dynamics.test_effect_pairs_round38 import run

__all__ = ["run"]  # the imported fixture, which pytest finds by its name here

ACTION, BLIND = "bayes-linear/v1", "bayes-linear-blind/v1"
V4 = "onrecord.worldmodel-analysis/v4"


def _pendulum_references() -> tuple[Any, list[Any], list[list[Any]]]:
    pendulum = get_simulator("Pendulum-v1")
    plans = [
        list(np.random.default_rng(s).uniform(-2, 2, (6, 1)).astype(np.float32)) for s in (1, 2)
    ]
    episodes = [
        capture_plan(pendulum, plan, case_id=f"pendulum-{n}", seed=n)
        for n, plan in enumerate(plans)
    ]
    return pendulum, episodes, plans


def _persistence(request: dict[str, Any]) -> dict[str, Any]:
    return {"states": [request["initial_state"]] * len(request["actions"])}


def _persist_batch(states: Any, actions: Any) -> dict[str, Any]:
    return {"mean": np.repeat(states[:, None, :], actions.shape[1], axis=1)}


@pytest.mark.parametrize("coordinates", [{"theta": "rad"}, {"a": "rad", "b": "1", "c": "1"}])
def test_coordinates_that_do_not_fit_the_state_are_the_callers_error(
    coordinates: dict[str, str],
) -> None:
    pendulum, episodes, plans = _pendulum_references()
    common = {"model_id": "p/v1", "contract": pendulum.contract, "horizons": [1, 6]}
    with pytest.raises(InputError, match=r"coordinates declare .* state of 2 numbers"):
        capture_forecast(
            episodes[0], _persistence, coordinates=coordinates, planned_actions=plans[0], **common
        )
    with pytest.raises(InputError, match=r"coordinates declare .* state of 2 numbers"):
        capture_forecasts(
            episodes, _persist_batch, coordinates=coordinates, planned_actions=plans, **common
        )
    # Declared as the state is, the same references are forecast.
    forecasts = capture_forecasts(
        episodes, _persist_batch, coordinates=pendulum.coordinates, planned_actions=plans, **common
    )
    assert [f.status for f in forecasts] == ["ok", "ok"]


def _failed(forecast: ForecastEvidence, episodes: dict[str, Any]) -> ForecastEvidence:
    """The same forecast, made again by a model that raises: a real ``model_error``."""

    def raises(request: dict[str, Any]) -> dict[str, Any]:
        raise RuntimeError("state outside the training range")

    coordinates = [
        Coordinate(name, unit, name in forecast.angular)
        for name, unit in forecast.coordinates.items()
    ]
    failed = capture_forecast(
        episodes[forecast.episode_digest],
        raises,
        model_id=forecast.model_id,
        contract=forecast.contract,
        coordinates=coordinates,
        horizons=forecast.horizons,
        planned_actions=forecast.data["request"]["actions"],
    )
    assert failed.status == "model_error"
    return failed


def _with_failures(
    run: dict[str, Any], model: str, pairs: range
) -> tuple[dict[str, Any], Evidence]:
    root = run["dir"]
    protocol = read_json(root / "protocol.json")
    evidence = load_evidence(root, protocol)
    episodes = {e.digest: e for e in load_episodes(root / "data" / "interventions.episodes.jsonl")}
    base = evidence.interventions[model][0]
    for n in pairs:
        base[n] = _failed(base[n], episodes)
    return protocol, evidence


def _h1_error(base: list[ForecastEvidence], variant: list[ForecastEvidence]) -> float:
    """Mean |predicted − real| cart-velocity effect at h1, from the recorded states."""
    j = list(base[0].coordinates).index("cart_velocity")
    real = np.array([v.truth[0, j] - b.truth[0, j] for b, v in zip(base, variant, strict=True)])
    predicted = np.array([v.mean[0, j] - b.mean[0, j] for b, v in zip(base, variant, strict=True)])
    return float(np.abs(predicted - real).mean())


@pytest.mark.slow
def test_the_headline_ratio_compares_the_models_on_the_same_pairs(run: dict[str, Any]) -> None:
    protocol, evidence = _with_failures(run, BLIND, range(3))
    tables = compute_tables({**protocol, "analysis": ANALYSIS}, evidence)
    headline = tables["headline"]
    # Each model's own error still rests on the pairs it forecast (17 and 20 of 20) ...
    assert headline["cart_velocity_h1_action_effect_pairs"][BLIND]["skipped_pairs"] == 3
    assert headline["cart_velocity_h1_action_effect_pairs"][ACTION]["skipped_pairs"] == 0
    # ... but the ratio divides errors over the pairs both forecast, computed here again.
    total = protocol["pairs"]["interventions"]
    common = range(3, total)
    errors = {
        model: _h1_error(*[[arm[n] for n in common] for arm in evidence.interventions[model]])
        for model in (ACTION, BLIND)
    }
    ratio = headline["cart_velocity_h1_action_effect_error"]["ratio"]
    assert ratio == pytest.approx(errors[BLIND] / errors[ACTION], rel=1e-9)
    own = headline["cart_velocity_h1_action_effect_error"]
    assert ratio != pytest.approx(own[BLIND] / own[ACTION], rel=1e-9)  # different sets
    assert headline["cart_velocity_h1_action_effect_ratio_pairs"] == {
        "pairs": total - 3,
        "skipped_pairs": 3,
    }


@pytest.mark.slow
def test_a_run_without_failed_pairs_keeps_its_ratio(run: dict[str, Any]) -> None:
    """Where both models forecast every pair (every run so far), v5's ratio is v4's."""
    root = run["dir"]
    protocol = read_json(root / "protocol.json")
    evidence = load_evidence(root, protocol)
    new = compute_tables({**protocol, "analysis": ANALYSIS}, evidence)["headline"]
    old = compute_tables({**protocol, "analysis": V4}, evidence)["headline"]
    key = "cart_velocity_h1_action_effect_error"
    assert new[key] == old[key]
    assert "cart_velocity_h1_action_effect_ratio_pairs" not in old
    assert new["cart_velocity_h1_action_effect_ratio_pairs"]["skipped_pairs"] == 0


@pytest.mark.slow
def test_v4_keeps_its_ratio_and_a_model_without_an_effect_error_gives_none(
    run: dict[str, Any],
) -> None:
    protocol, evidence = _with_failures(run, BLIND, range(3))
    v4 = compute_tables({**protocol, "analysis": V4}, evidence)["headline"]
    own = v4["cart_velocity_h1_action_effect_error"]
    assert own["ratio"] == own[BLIND] / own[ACTION]  # as v4 runs saved it, byte for byte
    assert "cart_velocity_h1_action_effect_ratio_pairs" not in v4
    total = protocol["pairs"]["interventions"]
    protocol, evidence = _with_failures(run, BLIND, range(total))
    for analysis in (V4, ANALYSIS):  # the blind model failed every pair: no error
        errors = compute_tables({**protocol, "analysis": analysis}, evidence)["headline"]
        assert errors["cart_velocity_h1_action_effect_error"][BLIND] is None
        assert errors["cart_velocity_h1_action_effect_error"]["ratio"] is None
