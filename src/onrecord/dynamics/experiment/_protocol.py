"""The experiment's frozen protocol: written first, before any data exists."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from onrecord.errors import SchemaError

__all__ = [
    "ANALYSIS",
    "ANALYSIS_V1",
    "ANALYSIS_V2",
    "ANALYSIS_V3",
    "ANALYSIS_V4",
    "HORIZONS",
    "analysis_of",
    "build_protocol",
]

# How tables are computed from the evidence. v2: one same-cohort set of references for
# every model, closed-loop steps without failed runs, and the count of undefined
# normalized-score draws. v3: no closed-loop prediction gap for a model with failed runs
# (v2 averaged its surviving seeds), the count of seeds without a defined gap, and the
# headline's closed-loop `failed_runs` (its `reached_cap` of `seeds` left failed seeds
# unexplained); v1's own-cohort rows keep counting as `censored` every successful
# forecast, cohort or not (aggregate_metrics now counts the cohort only). v4: every
# intervention and persistence row carries its model's `skipped_pairs` (pairs left out
# because either arm's forecast failed: `pairs` alone made a model that failed on most
# pairs read as measured on fewer by chance), and the headline gives each action-effect
# error's `pairs` and `skipped_pairs` beside it. v5: the headline's action-effect
# `ratio` (blind over action-conditioned error) is taken over the pairs both models
# forecast without error (v4 divided errors over whichever pairs each model had left,
# two different sets when either skipped some), with those pairs counted beside it. A
# protocol without the field was written before v2 (v1). A run's tables are recomputed
# the way its protocol names, so saved runs keep replaying.
ANALYSIS = "onrecord.worldmodel-analysis/v5"
ANALYSIS_V4 = "onrecord.worldmodel-analysis/v4"
ANALYSIS_V3 = "onrecord.worldmodel-analysis/v3"
ANALYSIS_V2 = "onrecord.worldmodel-analysis/v2"
ANALYSIS_V1 = "onrecord.worldmodel-analysis/v1"
KNOWN = (ANALYSIS_V1, ANALYSIS_V2, ANALYSIS_V3, ANALYSIS_V4, ANALYSIS)

HORIZONS = [1, 4, 8, 16, 32]
_SIZES = {  # (full, smoke)
    "train_episodes": (200, 40),
    "development_references": (50, 10),
    "heldout_references": (200, 40),
    "intervention_pairs": (100, 20),
    "persistence_pairs": (100, 20),
    "planning_seeds": (10, 3),
    "other_env_train": (60, 15),
    "other_env_heldout": (60, 15),
}


def _seeds(start: int, count: int) -> list[int]:
    return list(range(start, start + count))


def build_protocol(*, smoke: bool, user_models: Sequence[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """Every choice of the experiment, fixed before any environment is run.

    ``user_models`` are the records of ``--model`` models (spec, model_id, describe,
    other_envs): their ids follow the built-in ones in ``models``. Without any, the
    protocol has no ``user_models`` field, as before ``--model`` existed.
    """
    size = {key: pair[1 if smoke else 0] for key, pair in _SIZES.items()}
    protocol: dict[str, Any] = {
        "schema": "onrecord.worldmodel-protocol/v1",
        "analysis": ANALYSIS,
        "smoke": smoke,
        "env_id": "CartPole-v1",
        "horizons": HORIZONS,
        "reference_plan_length": 32,
        "train_plan_length": 60,
        "seeds": {
            "train": _seeds(10_000, size["train_episodes"]),
            "development": _seeds(20_000, size["development_references"]),
            "heldout": _seeds(30_000, size["heldout_references"]),
            "interventions": 40_000,
            "persistence": 50_000,
            "planning": _seeds(60_000, size["planning_seeds"]),
            "other_train": _seeds(70_000, size["other_env_train"]),
            "other_heldout": _seeds(80_000, size["other_env_heldout"]),
        },
        "pairs": {
            "interventions": size["intervention_pairs"],
            "persistence": size["persistence_pairs"],
            "length": 8,
            "horizons": [1, 2, 4, 8],
            "persistence_offset": [0.0, 0.0, 0.01, 0.0],
        },
        # Absolute-error tolerances per coordinate and horizon, in each coordinate's unit.
        "tolerances": {
            "cart_position": {"h1": 0.001, "h4": 0.005, "*": 0.05},
            "cart_velocity": {"h1": 0.01, "h4": 0.02, "h8": 0.05, "*": 0.2},
            "pole_angle": {"h1": 0.001, "h4": 0.005, "h8": 0.01, "*": 0.05},
            "pole_angular_velocity": {"h1": 0.02, "h4": 0.05, "h8": 0.1, "*": 0.5},
        },
        "policies": {
            "full-horizon": ["dynamics/pole_angle/*", "dynamics/cart_velocity/*"],
            "next-step-angle": ["dynamics/pole_angle/h1"],
            "short-horizon": ["dynamics/*/h1", "dynamics/*/h4"],
        },
        "models": [
            "persistence/v1",
            "bayes-linear/v1",
            "bayes-linear-blind/v1",
            "bootstrap-ensemble/v1",
            "random-walk/v1",
            "oracle/CartPole-v1",
        ],
        "random_model": "random-walk/v1",
        "oracle_model": "oracle/CartPole-v1",
        "planner": {"planner": "exhaustive", "length": 8},
        "max_steps": 500,
        "other_envs": ["Pendulum-v1", "Acrobot-v1"],
        "bootstrap": {"draws": 2000, "seed": 0},
    }
    if user_models:
        protocol["models"] += [record["model_id"] for record in user_models]
        protocol["user_models"] = [dict(record) for record in user_models]
    return protocol


def analysis_of(protocol: Mapping[str, Any]) -> str:
    """The analysis version a protocol's tables are computed with (v1 when absent)."""
    analysis = protocol.get("analysis", ANALYSIS_V1)
    if analysis not in KNOWN:
        raise SchemaError(
            f"protocol.json analysis is {analysis!r:.60}, which this version of onrecord "
            f"does not know (it knows {', '.join(map(repr, KNOWN))}); replay the run "
            "with the onrecord version that wrote it, or a newer one"
        )
    return str(analysis)
