"""Controls: matched interventions and state persistence, as paired references.

Both compare two real episodes that differ in one controlled way and start from
*identical internal simulator states*: either the first action differs (matched
intervention) or the initial state is offset (state persistence); every later action is
shared. The real effect is the difference between the two actual trajectories; a model's
predicted effect is the difference between its two forecasts. CartPole's positions only
respond one step after an action, so action effects show at h=1 on velocities and at
h>=2 everywhere.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from onrecord.dynamics._angles import wrap_angles
from onrecord.dynamics._envs import Simulator
from onrecord.dynamics._evidence import ForecastEvidence
from onrecord.dynamics._metrics import portable_number
from onrecord.dynamics._protocol import FloatArray
from onrecord.dynamics._references import (
    capture_plan,
    check_seed,
    check_start_state,
    fresh_action,
    random_plan,
)
from onrecord.errors import InputError

if TYPE_CHECKING:
    from onrecord._display import Printed

__all__ = ["EffectTable", "PairedReference", "capture_pairs", "effect_table"]


@dataclass(frozen=True)
class PairedReference:
    """Two real episodes from one internal state that differ in one controlled way."""

    kind: str
    """``action`` (first action differs) or ``offset`` (initial state offset)."""
    base: Any
    """EpisodeEvidence of the base arm."""
    variant: Any
    """EpisodeEvidence of the variant arm."""
    base_plan: list[Any]
    """Actions of the base arm."""
    variant_plan: list[Any]
    """Actions of the variant arm."""


def capture_pairs(
    simulator: Simulator,
    start_states: Sequence[Sequence[float]],
    *,
    kind: str,
    length: int,
    seed: int,
    offset: Sequence[float] | None = None,
) -> list[PairedReference]:
    """Capture one pair per start state.

    ``kind="action"``: the arms start with ``actions[0]`` and ``actions[1]``, then share a
    random plan. ``kind="offset"``: the variant starts at ``state + offset``; both follow
    one random plan.
    """
    if kind not in ("action", "offset"):
        raise InputError(f"kind must be 'action' or 'offset', got {kind!r}")
    if kind == "offset" and (offset is None or len(offset) != simulator.dimension):
        raise InputError(f"an offset control needs offset= with {simulator.dimension} numbers")
    if isinstance(length, bool) or not isinstance(length, int | np.integer) or length < 1:
        raise InputError(
            f"length must be a whole number >= 1 (the first, controlled action and the "
            f"shared ones after it), got {length!r}"
        )
    # Each arm's seed is seed * 100_000 + n, which reset must still take.
    seed = check_seed(seed, below=2**64 // 100_000)
    starts = list(start_states)
    for start in starts:  # all of them before any episode runs
        check_start_state(simulator, start)
        if kind == "offset":
            shifted = [s + o for s, o in zip(start, offset or (), strict=True)]
            check_start_state(simulator, shifted, "start state + offset")
    rng = np.random.default_rng(seed)
    pairs = []
    for n, start in enumerate(starts):
        follow = random_plan(simulator, length - 1, rng)
        base_start, variant_start = list(start), list(start)
        if kind == "action":
            base_plan = [fresh_action(simulator, 0), *follow]
            variant_plan = [fresh_action(simulator, 1), *copy.deepcopy(follow)]
        else:
            base_plan = [fresh_action(simulator, 0), *follow]
            variant_plan = copy.deepcopy(base_plan)  # one arm's plan is not the other's
            variant_start = [s + o for s, o in zip(start, offset or (), strict=True)]
        arm_seed = seed * 100_000 + n
        base = capture_plan(
            simulator,
            base_plan,
            case_id=f"{kind}-{seed}-{n}-base",
            seed=arm_seed,
            start_state=base_start,
        )
        variant = capture_plan(
            simulator,
            variant_plan,
            case_id=f"{kind}-{seed}-{n}-variant",
            seed=arm_seed,
            start_state=variant_start,
        )
        pairs.append(PairedReference(kind, base, variant, base_plan, variant_plan))
    return pairs


@dataclass(frozen=True)
class EffectTable:
    """Real versus predicted effects per coordinate × horizon, arrays ``[H, d]``."""

    model_id: str
    coordinates: dict[str, str]
    horizons: tuple[int, ...]
    pairs: NDArray[np.int64]
    """Pairs measured in both arms (and forecast without error by the model)."""
    real_effect: FloatArray
    """Mean absolute real effect."""
    predicted_effect: FloatArray
    """Mean absolute predicted effect."""
    effect_error: FloatArray
    """Mean absolute difference between predicted and real effect."""
    skipped_pairs: int = 0
    """Pairs left out because either arm's forecast is not ``ok`` (a ``model_error`` or
    a ``simulator_error``): ``pairs`` counts only the others, so a model that failed on
    most pairs is measured on the few it forecast. Every row of ``rows()`` carries it."""

    def rows(self) -> list[dict[str, Any]]:
        """One portable row per coordinate × horizon."""
        out = []
        for j, (name, unit) in enumerate(self.coordinates.items()):
            for i, h in enumerate(self.horizons):
                out.append(
                    {
                        "model_id": self.model_id,
                        "coordinate": name,
                        "unit": unit,
                        "horizon": h,
                        "pairs": int(self.pairs[i, j]),
                        "real_effect": portable_number(self.real_effect[i, j]),
                        "predicted_effect": portable_number(self.predicted_effect[i, j]),
                        "effect_error": portable_number(self.effect_error[i, j]),
                        # The model's count, beside each row's `pairs`: a row of 3
                        # pairs reads otherwise as if only 3 had been asked.
                        "skipped_pairs": self.skipped_pairs,
                    }
                )
        return out

    def __rich__(self) -> Printed:
        """A table, one row per coordinate × horizon (``rich.print``, IPython with rich)."""
        from onrecord._display_dynamics import effect_view

        return effect_view(self)

    def _repr_html_(self) -> str:
        """The same table for Jupyter: names escaped, no script."""
        from onrecord._display_dynamics_html import effect_html

        return effect_html(self)


def _at_horizons(forecast: ForecastEvidence, values: FloatArray) -> FloatArray:
    index = np.asarray(forecast.horizons) - 1
    out = np.full(
        (len(index), values.shape[1] if values.ndim == 2 else len(forecast.coordinates)), np.nan
    )
    usable = index < len(values)
    out[usable] = values[index[usable]]
    return out


def effect_table(
    base: Sequence[ForecastEvidence], variant: Sequence[ForecastEvidence]
) -> EffectTable:
    """Compare predicted and real effects over paired forecasts of one model."""
    if len(base) != len(variant) or not base:
        raise InputError(
            "effect_table needs two equally long, non-empty lists of forecasts "
            "(base arm and variant arm, pair by pair)"
        )
    first = base[0]
    signature = (first.model_id, first.contract, first.horizons, first.coordinates)
    real, predicted = [], []
    skipped = 0
    for b, v in zip(base, variant, strict=True):
        # Every pair against the first, not only the arms against each other: pairs of
        # another contract or in other units would otherwise be averaged together.
        for forecast in (b, v):
            if (
                forecast.model_id,
                forecast.contract,
                forecast.horizons,
                forecast.coordinates,
            ) != signature:
                raise InputError(
                    f"forecast {forecast.digest[:12]} differs from {first.digest[:12]} in "
                    "model, contract, coordinates, units or horizons; an effect table "
                    "compares the pairs of one model and one state contract"
                )
        if b.status != "ok" or v.status != "ok":
            skipped += 1
            continue
        steps = min(b.observed_steps, v.observed_steps)
        real.append(_at_horizons(b, wrap_angles(v.truth[:steps] - b.truth[:steps], b.angular_mask)))
        # Forecasts of the observed prefix (no planned_actions) are as long as their arm
        # ran, so the two arms' forecasts can differ in length.
        length = min(len(b.mean), len(v.mean))
        predicted.append(
            _at_horizons(b, wrap_angles(v.mean[:length] - b.mean[:length], b.angular_mask))
        )
    shape = (len(first.horizons), len(first.coordinates))
    if not real:
        nan = np.full(shape, np.nan)
        return EffectTable(
            first.model_id,
            first.coordinates,
            first.horizons,
            np.zeros(shape, np.int64),
            nan,
            nan,
            nan,
            skipped,
        )
    real_a, predicted_a = np.array(real), np.array(predicted)
    measured = ~np.isnan(real_a)
    counts = measured.sum(axis=0)
    with np.errstate(invalid="ignore"):

        def mean_abs(values: FloatArray) -> FloatArray:
            result: FloatArray = np.where(measured, np.abs(values), 0).sum(axis=0) / counts
            return result

        return EffectTable(
            first.model_id,
            first.coordinates,
            first.horizons,
            counts,
            mean_abs(real_a),
            mean_abs(predicted_a),
            # Both effects are wrapped, so their difference can be up to 2*pi for an
            # angle: an effect of pi - 0.01 predicted as -pi + 0.01 is 0.02 off, not 6.26.
            mean_abs(wrap_angles(predicted_a - real_a, first.angular_mask)),
            skipped,
        )
