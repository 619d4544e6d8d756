"""Closed-loop summaries: returns with paired bootstrap intervals, the score normalized
between a random model and the oracle, and the planner's prediction gap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from onrecord.dynamics._closed_loop import ClosedLoopRun
from onrecord.errors import InputError

__all__ = ["closed_loop_summary", "prediction_gap"]


def _rewards(run: ClosedLoopRun) -> np.ndarray:
    return np.array([t["reward"] for t in run.episode.transitions()], dtype=np.float64)


def prediction_gap(run: ClosedLoopRun) -> float | None:
    """Mean of (predicted − realized) return over the planning horizon, over decisions
    whose realized horizon is known (not cut off by the step cap)."""
    rewards = _rewards(run)
    length = int(run.record["budget"]["length"])
    terminated = run.episode.ended == "terminated"
    gaps = []
    for step, predicted in enumerate(run.record["predicted_returns"][: len(rewards)]):
        window = rewards[step : step + length]
        if len(window) == length or terminated:
            gaps.append(predicted - float(window.sum()))
    return float(np.mean(gaps)) if gaps else None


def closed_loop_summary(
    runs: Sequence[ClosedLoopRun],
    *,
    random_model: str,
    oracle_model: str,
    draws: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """One row per model: steps, return (mean and 95% paired bootstrap interval), share
    reaching the step cap, normalized score with its interval, and prediction gap.

    A run that failed (the model raised, see ``ClosedLoopRun.failed``) is counted in
    ``failed_runs`` and its model gets no return or score: a crash is not a measurement.
    Normalization needs the random and oracle models free of failures and a nonzero span
    between them; intervals need at least two seeds. Otherwise the value is None.
    """
    _check_same_conditions(runs)
    by_model = _by_model(runs)
    for needed in (random_model, oracle_model):
        if needed not in by_model:
            raise InputError(f"closed_loop_summary needs runs of {needed!r} to normalize")
    seeds = sorted(by_model[oracle_model])
    if any(sorted(m) != seeds for m in by_model.values()):
        raise InputError(
            "every model must run on the same seeds; found "
            + ", ".join(f"{m}: {sorted(r)}" for m, r in sorted(by_model.items()))
        )
    returns = {m: np.array([_rewards(r[s]).sum() for s in seeds]) for m, r in by_model.items()}
    failed = {m: sum(r[s].failed for s in seeds) for m, r in by_model.items()}
    rng = np.random.default_rng(seed)
    index = rng.integers(0, len(seeds), (draws, len(seeds)))
    scale = None
    if not failed[random_model] and not failed[oracle_model]:
        scale = (returns[random_model], returns[oracle_model])
    rows = []
    for model_id, per_seed in sorted(by_model.items()):
        row = _row(per_seed, seeds, returns[model_id], index, scale, failed[model_id])
        rows.append({"model_id": model_id, **row})
    return rows


def _by_model(runs: Sequence[ClosedLoopRun]) -> dict[str, dict[int, ClosedLoopRun]]:
    by_model: dict[str, dict[int, ClosedLoopRun]] = {}
    for run in runs:
        model_id, seed = run.record["model_id"], run.record["seed"]
        per_seed = by_model.setdefault(model_id, {})
        if seed in per_seed:
            # Keeping either one silently would make the summary depend on list order.
            raise InputError(
                f"runs holds two runs of {model_id!r} on seed {seed}; pass one run per "
                "model and seed (run_closed_loop with distinct seeds)"
            )
        per_seed[seed] = run
    return by_model


def _check_same_conditions(runs: Sequence[ClosedLoopRun]) -> None:
    """Returns are comparable only under the same environment, planner budget and step
    cap: a run capped at fewer steps ends early and earns less for it, and runs of two
    environments under one model id (``random-walk/v1`` exists for each) would be
    paired seed by seed as if they were one model's."""
    for field in ("env_id", "budget", "max_steps"):
        found = {str(run.record.get(field)) for run in runs}
        if len(found) > 1:
            raise InputError(
                f"every run must share its {field}; found {sorted(found)}: summarize the "
                f"runs of each {field} separately, or re-run them with one {field}"
            )


def _row(
    per_seed: dict[int, ClosedLoopRun],
    seeds: list[int],
    returns: np.ndarray,
    index: np.ndarray,
    scale: tuple[np.ndarray, np.ndarray] | None,
    failed: int,
) -> dict[str, Any]:
    steps = np.array([len(per_seed[s].episode.transitions()) for s in seeds])
    cap = int(per_seed[seeds[0]].record["max_steps"])
    ok = [s for s in seeds if not per_seed[s].failed]
    gaps = [g for g in (prediction_gap(per_seed[s]) for s in ok) if g is not None]
    row: dict[str, Any] = {
        "seeds": len(seeds),
        "budget": per_seed[seeds[0]].record["budget"],
        "steps": steps.tolist(),
        "mean_steps": float(steps.mean()),
        # Cut off by max_steps or by the environment's own time limit (which comes first
        # when max_steps is larger): either way the run lasted as long as it could.
        "reached_cap": sum(
            bool(n >= cap or per_seed[s].episode.ended == "truncated")
            for n, s in zip(steps, seeds, strict=True)
        ),
        "failed_runs": failed,
        "mean_return": None,
        "return_ci": None,
        "normalized_score": None,
        "normalized_ci": None,
        "prediction_gap": float(np.mean(gaps)) if gaps else None,
    }
    if failed:
        return row
    row["mean_return"] = float(returns.mean())
    resampled = returns[index].mean(axis=1)
    # One seed resamples to itself: a zero-width "interval" would claim certainty.
    intervals = len(seeds) > 1
    if intervals:
        row["return_ci"] = _interval(resampled)
    if scale is None:
        return row
    floor, top = scale
    point_span = float(top.mean() - floor.mean())
    if point_span == 0.0:
        return row
    row["normalized_score"] = float((returns.mean() - floor.mean()) / point_span)
    span = top[index].mean(axis=1) - floor[index].mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        normalized = (resampled - floor[index].mean(axis=1)) / span
    finite = normalized[np.isfinite(normalized)]
    if intervals and len(finite):
        row["normalized_ci"] = _interval(finite)
    return row


def _interval(values: np.ndarray) -> list[float]:
    return [float(v) for v in np.quantile(values, [0.025, 0.975])]
