"""Model-predictive planners that use any ``WorldModel``.

Every planner scores candidate action sequences by the environment's own reward rule
applied to the model's predicted states (plus a tiny tie-break that never outweighs one
step of reward), executes the first action of the best sequence and plans again. The
``budget`` property records exactly how many predicted transitions one decision costs,
so "same planner, same budget" can be checked from saved evidence.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._envs import Simulator
from onrecord.dynamics._protocol import FloatArray, Prediction, WorldModel, summarize_particles
from onrecord.dynamics._references import fresh_action, whole_number
from onrecord.dynamics._response import (
    ModelError,
    answer_kind,
    check_deviation,
    numeric_array,
    read_answer,
)
from onrecord.errors import CaptureError, InputError

__all__ = [
    "CrossEntropyPlanner",
    "ExhaustivePlanner",
    "NonFinitePrediction",
    "PlanChoice",
    "Planner",
    "RandomShootingPlanner",
    "score_plans",
]

_SHAPING_WEIGHT = 1e-3


class NonFinitePrediction(CaptureError):
    """The model predicted NaN or infinite states for every candidate plan, so no plan
    can be chosen (the closed loop records this as the model's error)."""


@dataclass(frozen=True)
class PlanChoice:
    """What a planner decided at one step."""

    action: Any
    """First action of the chosen plan, in the environment's encoding."""
    plan: tuple[int, ...]
    """Indices into ``Simulator.actions`` of the whole chosen plan."""
    predicted_return: float
    """Return the model predicts for the chosen plan over the planning horizon."""


class Planner(Protocol):
    """Chooses the next action for a fully observed state."""

    name: str

    @property
    def budget(self) -> dict[str, Any]:
        """Portable description of the search and its cost per decision."""
        ...

    def plan(
        self, model: WorldModel, simulator: Simulator, state: FloatArray, rng: np.random.Generator
    ) -> PlanChoice:
        """The next action for ``state``."""
        ...


def score_plans(
    model: WorldModel, simulator: Simulator, state: FloatArray, plans: NDArray[np.int64]
) -> tuple[FloatArray, FloatArray]:
    """Predicted return and planner score of ``[P, L]`` plans of action indices.

    Rewards stop after the first predicted termination, as they do in the environment.
    A plan whose predicted states are not all finite scores ``-inf`` (never chosen while
    any plan is finite) and predicts a NaN return. An answer that is not a prediction of
    ``[plans, actions, coordinates]`` real numbers, or whose standard deviation (which
    planning does not ask for) is not positive and finite where the states are, is the
    model's error (``ModelError``), never scored.
    """
    actions = np.asarray([simulator.actions[i] for i in range(len(simulator.actions))])
    answer = model.predict(
        np.repeat(state[None], len(plans), axis=0), actions[plans], uncertainty=False
    )
    expected = (len(plans), plans.shape[1], len(state))
    names = [c.name for c in simulator.coordinates]
    predicted = read_answer(_predicted_states, answer, expected, names)
    before = np.concatenate(
        [np.repeat(state[None, None], len(plans), axis=0), predicted[:, :-1]], axis=1
    )
    # Non-finite states are scored below as never chosen: NumPy's warnings about the
    # arithmetic on them (inf * 0 in the rewards) would only say the same thing, noisily.
    with np.errstate(invalid="ignore", over="ignore"):
        reward, done = simulator.reward_of(before, plans, predicted)
        alive = np.concatenate(
            [
                np.ones((len(plans), 1), dtype=bool),
                ~np.logical_or.accumulate(done, axis=1)[:, :-1],
            ],
            axis=1,
        )
        returns: FloatArray = (reward * alive).sum(axis=1)
        shaping = (simulator.shaping_of(predicted) * alive).sum(axis=1)
        scores: FloatArray = returns + _SHAPING_WEIGHT * shaping
    # NaN compares false with everything: a single NaN plan would otherwise leave no
    # "best" plan at all, and a NaN return cannot be saved as evidence.
    broken = ~np.isfinite(predicted).all(axis=(1, 2)) | ~np.isfinite(scores)
    if broken.any():
        returns = np.where(broken, np.nan, returns)
        scores = np.where(broken, -np.inf, scores)
    return returns, scores


_FIELDS = frozenset({"mean", "standard_deviation", "samples", "metadata"})


def _predicted_states(answer: Any, expected: tuple[int, int, int], names: list[str]) -> FloatArray:
    """The mean states of a ``predict`` answer, read as ``capture_forecasts`` reads it:
    real numbers (not text, booleans, complex or masked values), the fields it knows,
    particles ``[plans, S, actions, coordinates]`` and a usable deviation when given.

    A bare array (or anything else) would otherwise fail as an unrelated NumPy
    ``TypeError`` in the run's record, without saying what ``predict`` must return; and
    a negative, zero or NaN deviation was never looked at, so a model whose forecasts
    were all refused for it still planned, and scored, as if nothing were wrong.
    """
    sampled = False
    mean: Any
    std: Any
    if isinstance(answer, Prediction):
        mean, std, sampled = answer.mean, answer.std, answer.samples is not None
    elif isinstance(answer, Mapping) and (
        answer.get("mean") is not None or answer.get("samples") is not None
    ):
        unknown = sorted(set(map(str, answer)) - _FIELDS)
        if unknown:
            # A misspelt "std" was ignored here while every forecast refused it.
            raise ModelError(
                f"predict returned unknown fields {unknown}; allowed are {sorted(_FIELDS)}"
            )
        mean, std = answer.get("mean"), answer.get("standard_deviation")
        if answer.get("samples") is not None:
            particles = _particles(answer["samples"], expected)
            if mean is None:
                mean, std = summarize_particles(particles)
                sampled = True
    else:
        raise ModelError(
            f"predict returned {answer_kind(answer)}; a WorldModel's predict must return "
            "a Prediction, e.g. onrecord.dynamics.Prediction(mean) with mean "
            "[plans, actions, coordinates] (or a mapping with 'mean' or 'samples')"
        )
    predicted = _planned_array(mean, "mean", expected)
    if std is not None:
        _check_deviation(std, predicted, expected, names, sampled=sampled)
    return predicted


def _planned_array(value: Any, name: str, expected: tuple[int, int, int]) -> FloatArray:
    array = numeric_array(value, name)
    if array.shape != expected:
        # One step short (or long) would otherwise score every plan over the wrong
        # horizon without a word, and other shapes failed inside NumPy's concatenate.
        what = "states" if name == "mean" else name
        raise ModelError(
            f"the model predicted {what} of shape {list(array.shape)} for {expected[0]} "
            f"plans of {expected[1]} actions from a {expected[2]}-number state; predict "
            f"must return [plans, actions, coordinates] = {list(expected)}"
        )
    return array


def _particles(value: Any, expected: tuple[int, int, int]) -> FloatArray:
    samples = numeric_array(value, "samples")
    count, steps, dim = expected
    if samples.ndim != 4 or samples.shape[0] != count or samples.shape[2:] != (steps, dim):
        raise ModelError(
            f"samples has shape {list(samples.shape)}, expected [{count}, S, {steps}, {dim}] "
            "(plans, particles, actions, coordinates)"
        )
    if samples.shape[1] == 0:
        raise ModelError("samples holds no particles; give at least one per plan")
    return samples


def _check_deviation(
    value: Any,
    predicted: FloatArray,
    expected: tuple[int, int, int],
    names: list[str],
    *,
    sampled: bool,
) -> None:
    """A deviation must be finite and positive (0 only where particles agree exactly),
    as every forecast's is, wherever the plan's states are finite (a plan with NaN
    states is already never chosen)."""
    std = _planned_array(value, "standard_deviation", expected)
    rows = np.asarray(np.isfinite(predicted).all(axis=(1, 2)))
    check_deviation(
        std,
        ("plan", "horizon"),
        names,
        allow_zero=sampled,
        where=np.broadcast_to(rows[:, None, None], std.shape),
        fix=(
            "fix the model's uncertainty, or return none (Prediction(mean)) when predict "
            "is called with uncertainty=False, as planners call it"
        ),
    )


def _choose(
    simulator: Simulator,
    plans: NDArray[np.int64],
    returns: FloatArray,
    scores: FloatArray,
    rng: np.random.Generator,
) -> PlanChoice:
    # Ties are broken at random: a model that cannot tell plans apart must not get a
    # systematic preference for action 0 from the search order.
    if not np.isfinite(scores).any():
        raise NonFinitePrediction(
            f"the model predicted non-finite states for all {len(plans)} candidate plans"
        )
    best = np.flatnonzero(scores >= scores.max() - 1e-12)
    pick = int(best[rng.integers(len(best))]) if len(best) > 1 else int(best[0])
    plan = tuple(int(i) for i in plans[pick])
    return PlanChoice(fresh_action(simulator, plan[0]), plan, float(returns[pick]))


def _check_length(value: Any) -> int:
    length = whole_number(value, "length")
    if not 1 <= length <= 16:
        raise InputError(f"planning horizon must be between 1 and 16 steps, got {length}")
    return length


def _check_count(name: str, value: Any) -> int:
    count = whole_number(value, name)
    if count < 1:
        raise InputError(f"{name} must be a whole number >= 1, got {count!r}")
    return count


def _check_smoothing(smoothing: Any) -> float:
    valid = isinstance(smoothing, int | float | np.integer | np.floating) and not isinstance(
        smoothing, bool | np.bool_
    )
    if not valid or not 0.0 <= float(smoothing) <= 1.0:
        raise InputError(f"smoothing must be a number between 0 and 1, got {smoothing!r}")
    return float(smoothing)


class ExhaustivePlanner:
    """Scores every sequence of ``length`` actions (``|A| ** length`` plans)."""

    name = "exhaustive"

    def __init__(self, length: int = 8) -> None:
        self.length = _check_length(length)
        self._plans: dict[int, NDArray[np.int64]] = {}

    @property
    def budget(self) -> dict[str, Any]:
        return {"planner": self.name, "length": self.length}

    def plan(
        self, model: WorldModel, simulator: Simulator, state: FloatArray, rng: np.random.Generator
    ) -> PlanChoice:
        count = len(simulator.actions)
        if count not in self._plans:
            self._plans[count] = np.array(list(itertools.product(range(count), repeat=self.length)))
        plans = self._plans[count]
        returns, scores = score_plans(model, simulator, state, plans)
        return _choose(simulator, plans, returns, scores, rng)


class RandomShootingPlanner:
    """Scores ``samples`` uniformly random sequences of ``length`` actions."""

    name = "random-shooting"

    def __init__(self, length: int = 6, samples: int = 256) -> None:
        self.length = _check_length(length)
        self.samples = _check_count("samples", samples)

    @property
    def budget(self) -> dict[str, Any]:
        return {"planner": self.name, "length": self.length, "samples": self.samples}

    def plan(
        self, model: WorldModel, simulator: Simulator, state: FloatArray, rng: np.random.Generator
    ) -> PlanChoice:
        plans = rng.integers(0, len(simulator.actions), (self.samples, self.length))
        returns, scores = score_plans(model, simulator, state, plans)
        return _choose(simulator, plans, returns, scores, rng)


class CrossEntropyPlanner:
    """Cross-entropy method over per-step categorical action distributions."""

    name = "cross-entropy"

    def __init__(
        self,
        length: int = 6,
        population: int = 64,
        elites: int = 8,
        iterations: int = 3,
        smoothing: float = 0.1,
    ) -> None:
        self.length = _check_length(length)
        self.population = _check_count("population", population)
        self.iterations = _check_count("iterations", iterations)
        self.elites = whole_number(elites, "elites")
        if not 0 < self.elites <= self.population:
            raise InputError(f"elites must be in 1..population ({population}), got {elites}")
        self.smoothing = _check_smoothing(smoothing)

    @property
    def budget(self) -> dict[str, Any]:
        return {
            "planner": self.name,
            "length": self.length,
            "population": self.population,
            "elites": self.elites,
            "iterations": self.iterations,
            "smoothing": self.smoothing,
        }

    def plan(
        self, model: WorldModel, simulator: Simulator, state: FloatArray, rng: np.random.Generator
    ) -> PlanChoice:
        count = len(simulator.actions)
        probs = np.full((self.length, count), 1.0 / count)
        best: tuple[float, PlanChoice] | None = None
        for _ in range(self.iterations):
            cumulative = probs.cumsum(axis=1)
            draws = rng.random((self.population, self.length, 1))
            plans = (draws > cumulative[None]).sum(axis=2).clip(0, count - 1)
            returns, scores = score_plans(model, simulator, state, plans)
            choice = _choose(simulator, plans, returns, scores, rng)
            if best is None or scores.max() > best[0]:
                best = (float(scores.max()), choice)
            elite = plans[np.argsort(-scores, kind="stable")[: self.elites]]
            counts = (elite[..., None] == np.arange(count)).mean(axis=0)
            probs = (1 - self.smoothing) * counts + self.smoothing / count
        assert best is not None
        return best[1]
