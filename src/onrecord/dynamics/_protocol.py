"""The ``WorldModel`` protocol and the arrays it exchanges.

A world model is fitted on transitions and predicts, in one batched call, the state
trajectories that follow ``N`` initial states under ``N`` action sequences of length
``H``: a mean ``[N, H, d]`` with either a standard deviation ``[N, H, d]`` or particles
``[N, S, H, d]``. Nothing else is part of the contract.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from onrecord._async import is_async_callable
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord.episode import EpisodeEvidence

__all__ = [
    "Prediction",
    "Transitions",
    "WorldModel",
    "refuse_async",
    "refuse_class",
    "state_vector",
    "summarize_particles",
]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class Prediction:
    """A batch of forecast trajectories."""

    mean: FloatArray
    """Predicted states ``[N, H, d]``; step ``k`` is the state after ``k + 1`` actions."""
    std: FloatArray | None = None
    """Marginal standard deviations ``[N, H, d]``, or None when the model has none."""
    samples: FloatArray | None = None
    """Particles ``[N, S, H, d]`` when the model propagates samples."""

    @classmethod
    def from_samples(cls, samples: FloatArray) -> Prediction:
        """Summarize particles by their mean and (sample) standard deviation."""
        mean, std = summarize_particles(samples)
        return cls(mean, std, samples)


def summarize_particles(samples: Any) -> tuple[FloatArray, FloatArray | None]:
    """Mean and sample deviation over axis 1 of ``[N, S, H, d]`` particles (no deviation
    for one particle). Where the particles agree exactly, the mean is their common value
    and the deviation exactly 0: summed in floating point, three particles at 0.1 have
    the mean 0.1 + 1e-17 and a spread of 1e-17, a point mass that would otherwise keep a
    "deviation" and score an absurd density."""
    # Non-finite particles give a non-finite mean or deviation, which every reader of
    # a prediction refuses by name: NumPy's warning (inf - inf) would only repeat it.
    with np.errstate(invalid="ignore", over="ignore"):
        mean = samples.mean(axis=1)
        if samples.shape[1] < 2:
            return mean, None
        std = samples.std(axis=1, ddof=1)
    same = (samples == samples[:, :1]).all(axis=1)
    if same.any():
        mean = np.where(same, samples[:, 0], mean)
        std = np.where(same, 0.0, std)
    return mean, std


@dataclass(frozen=True)
class Transitions:
    """Observed ``(state, action, next state)`` triples to fit a model on."""

    states: FloatArray
    """``[M, d]`` states before the action."""
    actions: NDArray[Any]
    """``[M]`` discrete actions or ``[M, a]`` continuous ones, in the environment encoding."""
    next_states: FloatArray
    """``[M, d]`` states after the action."""

    def __post_init__(self) -> None:
        count = len(self.states)
        if self.states.ndim != 2 or self.next_states.shape != self.states.shape:
            raise InputError(
                "Transitions.states and next_states must both be [M, d] arrays "
                f"of one shape, got {self.states.shape} and "
                f"{self.next_states.shape}"
            )
        if len(self.actions) != count or count == 0:
            raise InputError(
                f"Transitions needs at least one transition and one action per "
                f"state, got {count} states and {len(self.actions)} actions"
            )

    def __len__(self) -> int:
        return len(self.states)

    @classmethod
    def from_episodes(
        cls, episodes: Iterable[EpisodeEvidence], *, state_key: str = "state"
    ) -> Transitions:
        """Successful steps of captured episodes whose observer returned ``{state_key: [...]}``.

        Steps whose before- or after-state was not observed are left out, never guessed.
        """
        before: list[Any] = []
        acts: list[Any] = []
        after: list[Any] = []
        episodes = list(episodes)
        for episode in episodes:
            previous = state_vector(episode.initial.get("state"), state_key)
            for step in episode.transitions():
                current = state_vector(step.get("state"), state_key)
                if previous is not None and current is not None:
                    before.append(previous)
                    acts.append(step["action"])
                    after.append(current)
                previous = current
        if not before:
            # Otherwise the shape check below would report "(0,) and (0,)" arrays.
            ended = sorted({str(getattr(e, "ended", None)) for e in episodes})
            raise InputError(
                f"the {len(episodes)} episodes hold no transition with an observed "
                f"{state_key!r} vector before and after the action (they ended: "
                f"{', '.join(ended) or 'no episodes given'}); check that they ran and that "
                f"the observer returns {{{state_key!r}: [numbers]}}"
            )
        _check_one_source(episodes)
        try:
            return cls(
                np.asarray(before, dtype=np.float64),
                np.asarray(acts),
                np.asarray(after, dtype=np.float64),
            )
        except ValueError as exc:  # ragged: NumPy refuses to stack vectors of unlike length
            raise InputError(
                f"the episodes' {state_key!r} vectors or actions differ in length ({exc}); "
                "fit on episodes whose observer returns one state layout and whose actions "
                "share one shape"
            ) from None

    def resample(self, rng: np.random.Generator) -> Transitions:
        """A bootstrap resample of the same size."""
        index = rng.integers(0, len(self), len(self))
        return Transitions(self.states[index], self.actions[index], self.next_states[index])


def _check_one_source(episodes: list[Any]) -> None:
    """Transitions of two environments or two observers are two different contracts:
    pooled, a model would be fitted to a mixture of dynamics that no forecast asks about
    (CartPole and Acrobot states are both 4 numbers, so nothing else would notice)."""
    sources = {
        (str(env.get("environment_id")), str(env.get("observer_id")))
        for env in (episode.environment for episode in episodes)
    }
    if len(sources) > 1:
        listed = ", ".join(f"{e} observed by {o}" for e, o in sorted(sources))
        raise InputError(
            f"episodes come from {len(sources)} environment/observer pairs ({listed}); "
            "build Transitions from the episodes of one environment and observer"
        )


def state_vector(observed: Any, key: str) -> list[float] | None:
    """The state vector ``observed[key]`` (or ``observed`` itself) as floats; None when
    it is missing, empty or holds anything but real numbers (the state is unobserved)."""
    if isinstance(observed, Mapping):
        observed = observed.get(key)
    if (
        isinstance(observed, list)
        and observed
        and all(
            isinstance(value, int | float) and not isinstance(value, bool) for value in observed
        )
    ):
        return [float(value) for value in observed]
    return None


@runtime_checkable
class WorldModel(Protocol):
    """What the dynamics tools need from a model."""

    # A read-only property, so a class attribute, a plain or frozen-dataclass field and
    # a property all satisfy it (a bare ``model_id: str`` would demand a settable one).
    @property
    def model_id(self) -> str:
        """Stable name of the model and its configuration, e.g. ``bayes-linear/v1``."""
        ...

    def fit(self, transitions: Transitions) -> None:
        """Learn from observed transitions (a no-op for models that do not learn)."""

    def predict(
        self, initial_states: FloatArray, actions: NDArray[Any], *, uncertainty: bool = True
    ) -> Prediction:
        """Trajectories for ``[N, d]`` initial states under ``[N, H]`` (or ``[N, H, a]``)
        actions; ``uncertainty=False`` lets planners skip std and particles."""
        ...

    def describe(self) -> dict[str, Any]:
        """Portable description of the fitted model (parameters, configuration)."""
        ...


def refuse_class(value: Any, argument: str, role: str = "model") -> None:
    """``InputError`` when ``value`` is a class (``LinearDelta``) where an instance
    (``LinearDelta(...)``) was meant. A class has ``model_id``, ``fit``, ``predict`` and
    ``describe`` too and is callable, so it passed for a model or a predict function, and
    every forecast then failed on the missing ``self``, one ``model_error`` at a time."""
    if isinstance(value, type) and hasattr(value, "predict" if role == "model" else "plan"):
        raise InputError(
            f"{argument} is the class {value.__name__}, not a {role}: pass an instance "
            f"({value.__name__}(...)), built with the arguments it takes"
        )


def refuse_async(value: Any, argument: str) -> None:
    """``InputError`` when the predict that would be called (``value.predict`` of a model,
    else ``value`` itself) is an ``async def`` or a generator function. Every call is
    synchronous: each would hand back a coroutine or a generator instead of a forecast,
    and every forecast and closed-loop run failed one at a time, as the model's error."""
    problem = async_problem(value)
    if problem is not None:
        subject = (
            argument
            if _predict_of(value) is value
            else f"{argument}: {type(value).__name__}.predict"
        )
        raise InputError(f"{subject} {problem}")


def async_problem(value: Any) -> str | None:
    """Why ``value``'s predict (see ``refuse_async``) cannot be called for a forecast,
    worded to follow its name; None when it is a plain function."""
    target = _predict_of(value)
    call = (
        target
        if inspect.isroutine(target)
        else inspect.getattr_static(type(target), "__call__", None)
    )
    if is_async_callable(target) or inspect.isasyncgenfunction(call):
        return (
            "is an async function (async def): forecasts and planners call it "
            "synchronously and would get a coroutine, not a prediction; make it a plain "
            "function that returns the prediction (run the async work inside it, e.g. "
            "with asyncio.run)"
        )
    if inspect.isgeneratorfunction(call):
        return (
            "is a generator function (it yields): forecasts and planners would get a "
            "generator, not a prediction; return the Prediction instead of yielding it"
        )
    return None


def _predict_of(value: Any) -> Any:
    """A model's ``predict``; a predict function (anything else) itself."""
    if inspect.isroutine(value) or isinstance(value, type):
        return value
    try:
        return value.predict if isinstance(value, WorldModel) else value
    except Exception:  # a property that raises: the call itself will say what is wrong
        return value
