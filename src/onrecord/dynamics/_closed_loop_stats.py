"""Closed-loop summaries: returns with paired bootstrap intervals, the score normalized
between a random model and the oracle, and the planner's prediction gap."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from onrecord.dynamics._closed_loop import ClosedLoopRun
from onrecord.errors import InputError

__all__ = [
    "closed_loop_summary",
    "closed_loop_summary_v1",
    "closed_loop_summary_v2",
    "prediction_gap",
]


def _rewards(run: ClosedLoopRun) -> np.ndarray:
    return np.array([t["reward"] for t in run.episode.transitions()], dtype=np.float64)


def prediction_gap(run: ClosedLoopRun) -> float | None:
    """Mean of (predicted − realized) return over the planning horizon, over decisions
    whose realized horizon is known (not cut off by the step cap). ``InputError`` when
    the run's planner recorded no horizon (``budget["length"]``)."""
    rewards = _rewards(run)
    length = run.record["budget"].get("length")
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        # A planner of your own may record no horizon: there is no window to compare.
        raise InputError(
            f"prediction_gap needs the planning horizon, the planner's budget 'length' "
            f"(a positive whole number), got {length!r:.40}; record it in your planner's "
            "budget"
        )
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
    ``failed_runs``, has no step count (None in ``steps``), and its model gets no mean
    steps, return, score or prediction gap: a crash is not a measurement, and the other
    seeds alone would be a survivor sample. ``prediction_gap`` is the mean of the seeds'
    ``prediction_gap(run)``; ``prediction_gap_undefined`` counts the seeds left out of it
    because every decision's horizon was cut off by the step cap (None with failed runs).
    Normalization needs the random and oracle models free of
    failures and a nonzero span between them; intervals need at least two seeds.
    Otherwise the value is None. Bootstrap draws whose oracle–random span is zero leave
    the score undefined: ``normalized_ci_undefined`` counts them and the interval is
    widened to hold wherever they lie, or None when they are more than 2.5 % of the draws.
    """
    return _summary(runs, random_model, oracle_model, draws, seed, version=3)


def closed_loop_summary_v1(
    runs: Sequence[ClosedLoopRun],
    *,
    random_model: str,
    oracle_model: str,
    draws: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The summary as onrecord computed it before analysis v2, kept so that runs saved
    then still replay: steps of failed runs counted, and the normalized interval taken
    over the defined draws only, without saying how many were left out."""
    return _summary(runs, random_model, oracle_model, draws, seed, version=1)


def closed_loop_summary_v2(
    runs: Sequence[ClosedLoopRun],
    *,
    random_model: str,
    oracle_model: str,
    draws: int = 2000,
    seed: int = 0,
) -> list[dict[str, Any]]:
    """The summary as analysis v2 computed it, kept so that runs saved then still
    replay: a model with failed runs still got a prediction gap, averaged over its
    surviving seeds (a survivor sample), and no count of the seeds without a gap."""
    return _summary(runs, random_model, oracle_model, draws, seed, version=2)


def _summary(
    runs: Sequence[ClosedLoopRun],
    random_model: str,
    oracle_model: str,
    draws: int,
    seed: int,
    *,
    version: int,
) -> list[dict[str, Any]]:
    _check_bootstrap(draws, seed)
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
        row = _row(per_seed, seeds, failed[model_id], version=version)
        if not failed[model_id]:
            row.update(_scores(returns[model_id], index, scale, legacy=version == 1))
        rows.append({"model_id": model_id, **row})
    return rows


def _check_bootstrap(draws: Any, seed: Any) -> None:
    """Bad ``draws`` or ``seed`` failed deep in NumPy (``draws=0`` as an IndexError from
    an empty quantile), naming neither."""
    for name, value, least in (("draws", draws, 1), ("seed", seed, 0)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < least:
            raise InputError(
                f"closed_loop_summary {name} must be an integer of at least {least}, "
                f"not {value!r:.40}"
            )


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
    per_seed: dict[int, ClosedLoopRun], seeds: list[int], failed: int, *, version: int
) -> dict[str, Any]:
    """Everything but the return and score statistics (``_scores`` adds those)."""
    legacy = version == 1
    ok = [s for s in seeds if not per_seed[s].failed]
    counted = seeds if legacy else ok
    steps = {s: len(per_seed[s].episode.transitions()) for s in counted}
    cap = int(per_seed[seeds[0]].record["max_steps"])
    row: dict[str, Any] = {
        "seeds": len(seeds),
        "budget": per_seed[seeds[0]].record["budget"],
        "steps": [steps.get(s) for s in seeds],
        # Like the return: a mean over the surviving seeds would hide the crashes.
        "mean_steps": float(np.mean(list(steps.values()))) if legacy or not failed else None,
        # Cut off by max_steps or by the environment's own time limit (which comes first
        # when max_steps is larger): either way the run lasted as long as it could.
        "reached_cap": sum(
            bool(n >= cap or per_seed[s].episode.ended == "truncated") for s, n in steps.items()
        ),
        "failed_runs": failed,
        "mean_return": None,
        "return_ci": None,
        "normalized_score": None,
        "normalized_ci": None,
        **_gap(per_seed, ok, failed, version),
    }
    if not legacy:
        row["normalized_ci_undefined"] = None
    return row


def _gap(
    per_seed: dict[int, ClosedLoopRun], ok: list[int], failed: int, version: int
) -> dict[str, Any]:
    """The mean prediction gap over the seeds where it is defined and, from v3, how
    many seeds it leaves out; None for a model with failed runs (as its return is)."""
    found = [prediction_gap(per_seed[s]) for s in ok]
    gaps = [g for g in found if g is not None]
    mean = float(np.mean(gaps)) if gaps else None
    if version < 3:
        # v1 and v2 averaged the surviving seeds of a model that had failed runs.
        return {"prediction_gap": mean}
    if failed:
        return {"prediction_gap": None, "prediction_gap_undefined": None}
    return {"prediction_gap": mean, "prediction_gap_undefined": len(found) - len(gaps)}


def _scores(
    returns: np.ndarray,
    index: np.ndarray,
    scale: tuple[np.ndarray, np.ndarray] | None,
    *,
    legacy: bool,
) -> dict[str, Any]:
    """Mean return, its interval and the normalized score of a model without failures."""
    out: dict[str, Any] = {"mean_return": float(returns.mean())}
    resampled = returns[index].mean(axis=1)
    # One seed resamples to itself: a zero-width "interval" would claim certainty.
    intervals = index.shape[1] > 1
    if intervals:
        out["return_ci"] = _interval(resampled)
    if scale is None:
        return out
    floor, top = scale
    point_span = float(top.mean() - floor.mean())
    if point_span == 0.0:
        return out
    out["normalized_score"] = float((returns.mean() - floor.mean()) / point_span)
    if not intervals:
        return out
    span = top[index].mean(axis=1) - floor[index].mean(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        normalized = (resampled - floor[index].mean(axis=1)) / span
    finite = normalized[np.isfinite(normalized)]
    if legacy:
        out["normalized_ci"] = _interval(finite) if len(finite) else None
        return out
    out["normalized_ci_undefined"] = len(normalized) - len(finite)
    out["normalized_ci"] = _bounded_interval(finite, len(normalized))
    return out


def _interval(values: np.ndarray) -> list[float]:
    return [float(v) for v in np.quantile(values, [0.025, 0.975])]


def _bounded_interval(finite: np.ndarray, draws: int) -> list[float] | None:
    """The 95 % percentile interval of ``draws`` bootstrap draws of which only ``finite``
    are defined, valid wherever the undefined ones lie: each end moves inward by their
    number of ranks (as if all of them lay beyond it), and with more of them than the
    2.5 % of draws an end leaves out, that end could be anywhere (None)."""
    undefined = draws - len(finite)
    tail = 0.025 * draws
    if undefined > tail:
        return None
    if not undefined:
        return _interval(finite)
    # The lower end is the value with ``tail`` draws below it; undefined draws below it
    # would leave ``tail - undefined`` finite ones there (and symmetrically above).
    level = (tail - undefined) / len(finite)
    return [float(v) for v in np.quantile(finite, [level, 1 - level])]
