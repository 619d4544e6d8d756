"""Issue 2, items 1, 3 and 4: NumPy values in ``options`` are recorded losslessly *and*
reach the environment natively; evidence given to ``from_dict`` with a value JSON cannot
hold is refused with its path, never verified as something it is not."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from onrecord import EvalCase
from onrecord._canonical import from_portable
from onrecord.episode import EpisodeEvidence
from onrecord.errors import EvidenceError
from onrecord.integrations.gymnasium import capture_episode
from tests.core.envs import GenericEnv


class _OptionsEnv(GenericEnv):
    """Remembers the options its reset received."""

    received: Any = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        self.received = options
        return super().reset(seed=seed, options=options)


def _capture(env: GenericEnv, options: dict[str, Any] | None) -> EpisodeEvidence:
    return capture_episode(
        lambda: env,
        lambda env, observation, info: env.step(0),
        case=EvalCase("options"),
        environment_id="e",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=2,
        options=options,
    )


def _ends(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    return env.observation_space.sample(), 0.0, True, False, {}


def test_numpy_options_reach_reset_as_arrays_and_are_recorded_losslessly() -> None:
    start = np.array([[1, 2], [3, 4]], dtype=np.int16)
    env = _OptionsEnv(_ends)
    episode = _capture(env, {"start": start, "scale": np.float32(0.1), "name": "x"})
    received = env.received
    assert isinstance(received["start"], np.ndarray)
    assert received["start"].dtype == np.int16
    assert np.array_equal(received["start"], start)
    assert received["scale"] == float(np.float32(0.1))
    assert received["name"] == "x"
    assert received["start"] is not start  # a detached copy of what was recorded
    recorded = from_portable(EpisodeEvidence.from_dict(episode.data).environment["options"])
    assert recorded["start"].dtype == np.int16
    assert np.array_equal(recorded["start"], start)


def test_plain_and_absent_options_reach_reset_unchanged() -> None:
    env = _OptionsEnv(_ends)
    _capture(env, {"difficulty": 3, "map": ["SF", "HG"]})
    assert env.received == {"difficulty": 3, "map": ["SF", "HG"]}
    env = _OptionsEnv(_ends)
    _capture(env, None)
    assert env.received is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_from_dict_refuses_a_non_finite_number_naming_its_path(
    goal_episode: EpisodeEvidence, bad: float
) -> None:
    data = goal_episode.data
    assert data["final_observer_error"] is None  # written as null: the digest still matches
    data["final_observer_error"] = bad
    with pytest.raises(EvidenceError, match=r"\$\.final_observer_error"):
        EpisodeEvidence.from_dict(data)


def test_from_dict_accepts_tuples_where_lists_were_saved(goal_episode: EpisodeEvidence) -> None:
    data = goal_episode.data
    data["coverage_issues"] = tuple(data["coverage_issues"])
    assert EpisodeEvidence.from_dict(data) == goal_episode
