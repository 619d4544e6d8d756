"""Capture across the breadth of real Gymnasium: every registered environment that
makes without extra packages, common wrappers and every space type. Each episode is
checked against what the environment returned and the agent sent, against a bare replay
with the same seed and actions, after a save and a load, and against a second capture."""

from __future__ import annotations

import copy
import tempfile
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium import wrappers as gw
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import to_portable
from onrecord.episode import EpisodeEvidence
from onrecord.errors import InvalidActionError
from onrecord.integrations.gymnasium import capture_episode, decode_sample

Make = Callable[[], gym.Env[Any, Any]]
# Gymnasium's own advice (an outdated CartPole-v0, a Box bound cast to float16) is not
# what these tests probe.
pytestmark = pytest.mark.filterwarnings(
    "ignore::UserWarning:gymnasium.*", "ignore::DeprecationWarning:gymnasium.*"
)


def _makes(env_id: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            gym.make(env_id).close()
    except Exception:  # needs Box2D, MuJoCo, JAX, the old gym ...
        return False
    return True


REGISTERED = sorted(env_id for env_id in gym.envs.registry if _makes(env_id))


def _same(got: Any, want: Any) -> bool:
    """Equal values; arrays with their dtype and shape (a 0-d array stands for a NumPy
    scalar, an np.int64 for an int: what ``from_jsonable`` gives back)."""
    if isinstance(got, np.ndarray) and got.shape == () and isinstance(want, np.generic):
        return got.dtype == want.dtype and got.item() == want.item()
    if isinstance(want, int | np.integer) and not isinstance(want, bool | np.bool_):
        return isinstance(got, int | np.integer) and int(got) == int(want)
    if isinstance(got, np.ndarray) or isinstance(want, np.ndarray):
        return (
            isinstance(got, np.ndarray)
            and isinstance(want, np.ndarray)
            and (got.dtype, got.shape) == (want.dtype, want.shape)
            and np.array_equal(got, want)
        )
    if isinstance(want, dict):
        return (
            isinstance(got, dict)
            and got.keys() == want.keys()
            and all(_same(got[key], want[key]) for key in want)
        )
    if isinstance(want, tuple | list):
        return (
            isinstance(got, tuple | list)
            and len(got) == len(want)
            and all(_same(a, b) for a, b in zip(got, want, strict=True))
        )
    return bool(got == want)


def _state(env: gym.Env[Any, Any]) -> Any:
    """A plain read of the simulator's own state, where the environment has one."""
    inner = env.unwrapped
    for name in ("state", "s"):
        value = getattr(inner, name, None)
        if value is not None:
            return to_portable(np.asarray(value).tolist(), "$")
    if hasattr(inner, "player"):  # Blackjack
        return {"player": [int(c) for c in inner.player], "dealer": [int(c) for c in inner.dealer]}
    return {"t": getattr(inner, "t", None)}


class Played:
    """What the environment really returned and the agent really sent."""

    def __init__(self) -> None:
        self.initial: Any = None
        self.actions: list[Any] = []
        self.results: list[tuple[Any, ...]] = []
        self.refused = 0


def _agent(seed: int, played: Played, invalid: Any = None, steps: int = 200) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        played.initial = copy.deepcopy(observation)
        space = copy.deepcopy(env.action_space)
        space.seed(seed + 1)
        for turn in range(steps):
            if invalid is not None and turn % 3 == 2:
                with pytest.raises(InvalidActionError):
                    env.step(invalid)
                played.refused += 1
                continue
            action = space.sample()
            result = env.step(action)
            played.actions.append(copy.deepcopy(action))
            played.results.append(copy.deepcopy(result))
            if result[2] or result[3]:
                return

    return interact


def _capture(make: Make, seed: int, invalid: Any = None, max_steps: int = 300) -> Any:
    holder: dict[str, Any] = {}
    played = Played()

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = make()
        return holder["env"]

    steps = max_steps if invalid is None else (max_steps * 2) // 3
    episode = capture_episode(
        factory,
        _agent(seed, played, invalid, steps),
        case=EvalCase("probe", case_id="breadth", completion="either"),
        environment_id="breadth/v1",
        observer_id="state/v1",
        observe=lambda: {"state": _state(holder["env"])},
        seed=seed,
        max_steps=max_steps,
    )
    return episode, played, holder["env"]


def _check(make: Make, seed: int, tmp_path: Path, invalid: Any = None) -> EpisodeEvidence:
    episode, played, env = _capture(make, seed, invalid)
    loaded = EpisodeEvidence.load(episode.save_json(tmp_path / "episode.json"))
    assert loaded == episode
    assert loaded.data == episode.data
    assert [a["status"] for a in episode.attempts()].count("invalid_action") == played.refused
    transitions = loaded.transitions()
    assert len(transitions) == len(played.results) == episode.measures["steps"]
    # every observation and action decodes to what was returned and sent
    obs_space, act_space = env.observation_space, env.action_space
    assert _same(decode_sample(obs_space, loaded.initial["observation"]), played.initial)
    for step, sent, result in zip(transitions, played.actions, played.results, strict=True):
        assert _same(decode_sample(act_space, step["action"]), sent)
        assert _same(decode_sample(obs_space, step["observation"]), result[0])
    # rewards, flags, info and states match a bare replay with the same seed and actions
    bare = make()
    bare.action_space.seed(seed)
    bare.observation_space.seed(seed)
    bare.reset(seed=seed)
    assert loaded.initial["state"] == {"state": _state(bare)}
    for step, sent in zip(transitions, played.actions, strict=True):
        _, reward, terminated, truncated, info = bare.step(sent)
        assert (step["reward"], step["terminated"], step["truncated"]) == (
            float(reward),
            terminated,
            truncated,
        )
        assert _timeless(step["info"]) == _timeless(to_portable(info, "$"))
        assert step["state"] == {"state": _state(bare)}
    bare.close()
    ended = "terminated" if played.results and played.results[-1][2] else None
    if played.results and played.results[-1][3] and not ended:
        ended = "truncated"
    assert episode.ended == (ended or "returned")
    assert (not episode.coverage_issues) == (ended is not None and not played.refused)
    # the same seed and actions give the same evidence, wall times apart
    again, _, _ = _capture(make, seed, invalid)
    assert _without_wall_times(again) == _without_wall_times(episode)
    return episode


def _without_wall_times(episode: EpisodeEvidence) -> dict[str, Any]:
    data = episode.data
    del data["digest"], data["steps"]["wall_time_ns"]
    data["steps"]["info"] = [_timeless(info) for info in data["steps"]["info"]]
    return data


def _timeless(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` without RecordEpisodeStatistics' wall time, the one value a replay
    cannot reproduce."""
    if "episode" not in info:
        return info
    return {**info, "episode": {k: v for k, v in info["episode"].items() if k != "t"}}


@pytest.mark.parametrize("env_id", REGISTERED)
def test_every_registered_environment_is_recorded_exactly(env_id: str, tmp_path: Path) -> None:
    assert {"CartPole-v1", "Taxi-v4", "Blackjack-v1", "FrozenLake8x8-v1"} <= set(REGISTERED)
    for seed in (0, 5):
        _check(lambda: gym.make(env_id), seed, tmp_path)
    space = gym.make(env_id).action_space
    invalid = int(space.n) + 3 if isinstance(space, spaces.Discrete) else np.zeros(7, np.float32)
    _check(lambda: gym.make(env_id, max_episode_steps=40), 1, tmp_path, invalid)
    _check(lambda: gym.make(env_id, render_mode="rgb_array", max_episode_steps=5), 2, tmp_path)


WRAPPED: dict[str, Make] = {
    "statistics": lambda: gw.RecordEpisodeStatistics(gym.make("FrozenLake-v1"), 50),
    "time-limit-1": lambda: gw.TimeLimit(gym.make("CartPole-v1"), 1),
    "time-limits-nested": lambda: gw.TimeLimit(gw.TimeLimit(gym.make("CartPole-v1"), 50), 7),
    "flatten-taxi-blob": lambda: gw.FlattenObservation(gym.make("Taxi-v4")),
    "flatten-blackjack": lambda: gw.FlattenObservation(gym.make("Blackjack-v1")),
    "normalize": lambda: gw.NormalizeObservation(gym.make("Pendulum-v1")),
    "transform": lambda: gw.TransformObservation(gym.make("CartPole-v1"), lambda o: o * 2, None),
    "clip-rescale": lambda: gw.ClipAction(gw.RescaleAction(gym.make("Pendulum-v1"), -1.0, 1.0)),
    "frame-stack-blob": lambda: gw.FrameStackObservation(gym.make("CartPole-v1"), 100),
    "frame-stack-tuple": lambda: gw.FrameStackObservation(gym.make("Blackjack-v1"), 2),
    "time-aware-dict": lambda: gw.TimeAwareObservation(gym.make("CartPole-v1"), flatten=False),
    "float16": lambda: gw.DtypeObservation(gym.make("CartPole-v1"), np.float16),
    "max-and-skip": lambda: gw.MaxAndSkipObservation(gym.make("CartPole-v1"), 2),
    "repeat-action": lambda: gw.RepeatAction(gym.make("CartPole-v1"), 3),
    "sticky-action": lambda: gw.StickyAction(gym.make("CartPole-v1"), 0.5),
    "discretize-action": lambda: gw.DiscretizeAction(gym.make("Pendulum-v1"), 5),
}


@pytest.mark.parametrize("name", sorted(WRAPPED))
def test_wrapped_environments_are_recorded_exactly(name: str, tmp_path: Path) -> None:
    # Before: a frame-skipping wrapper above gym.make's TimeLimit (MaxAndSkipObservation,
    # RepeatAction) made every honest episode read as bypassed, hence incomplete.
    episode = _check(WRAPPED[name], 3, tmp_path)
    assert episode.data["events"] == []
    assert bool(episode.blobs) == name.endswith("-blob")


def test_a_bypass_above_one_step_wrappers_is_still_detected() -> None:
    holder: dict[str, Any] = {}

    def factory() -> gym.Env[Any, Any]:
        holder["env"] = gw.RecordEpisodeStatistics(gym.make("CartPole-v1"))
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)
        holder["env"].env.step(0)  # around capture, into the TimeLimit

    episode = capture_episode(
        factory,
        interact,
        case=EvalCase("probe", case_id="bypass"),
        environment_id="e",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=5,
    )
    assert any("TimeLimit counted 2 steps" in issue for issue in episode.coverage_issues)


class _SpaceEnv(gym.Env[Any, Any]):
    """Samples its observation space; ends after ``length`` steps."""

    def __init__(self, observation_space: Any, action_space: Any, length: int = 4) -> None:
        self.observation_space, self.action_space, self.length = (
            observation_space,
            action_space,
            length,
        )

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        super().reset(seed=seed)
        self.observation_space.seed(seed)
        self.t = 0
        return self.observation_space.sample(), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        assert self.action_space.contains(action)
        self.t += 1
        return self.observation_space.sample(), 0.25 * self.t, self.t >= self.length, False, {}


_DTYPES = (np.float16, np.float32, np.float64, np.uint8, np.int8, np.int64, np.uint64, np.bool_)


def _box(dtype: Any, shape: tuple[int, ...]) -> spaces.Box:
    if dtype is np.bool_:
        return spaces.Box(0, 1, shape, dtype)
    low = 0 if np.issubdtype(dtype, np.unsignedinteger) else -5
    return spaces.Box(low, 5, shape, dtype)


# A sample of shape (1, 0, n) is [[]] in to_jsonable's nested lists, whatever n:
# Gymnasium's layout cannot give its shape back, so a 0 is only tried as the last size.
_SHAPES = st.lists(st.integers(0, 3), max_size=3).map(tuple).filter(lambda s: 0 not in s[:-1])
_LEAVES = st.one_of(
    st.builds(_box, st.sampled_from(_DTYPES), _SHAPES),
    st.builds(
        lambda n, start: spaces.Discrete(n, start=start), st.integers(1, 5), st.integers(-3, 3)
    ),
    st.builds(spaces.MultiDiscrete, st.lists(st.integers(1, 4), min_size=1, max_size=3)),
    st.builds(spaces.MultiBinary, st.integers(1, 4)),
    st.builds(spaces.Text, st.integers(1, 5)),
)
# OneOf holds leaves only: gymnasium's own OneOf cannot round-trip a Dict or Tuple part.
_SPACES = st.recursive(
    _LEAVES,
    lambda parts: st.one_of(
        st.builds(lambda xs: spaces.Tuple(tuple(xs)), st.lists(parts, min_size=1, max_size=3)),
        st.builds(
            spaces.Dict,
            st.dictionaries(st.sampled_from(["a", "$blob", "é"]), parts, min_size=1, max_size=3),
        ),
        st.builds(spaces.Sequence, parts),
        st.builds(lambda xs: spaces.OneOf(tuple(xs)), st.lists(_LEAVES, min_size=1, max_size=2)),
    ),
    max_leaves=6,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(space=_SPACES, seed=st.integers(0, 2**32 - 1))
def test_every_space_type_is_recorded_exactly(space: Any, seed: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        _check(lambda: _SpaceEnv(space, spaces.Discrete(2)), seed, Path(folder))
        _check(lambda: _SpaceEnv(spaces.Discrete(2), space), seed, Path(folder), object())


@pytest.mark.parametrize(
    "space",
    [
        spaces.Box(-1, 1, (40, 40), np.float16),  # a blob
        spaces.Box(0, 255, (20, 20, 3), np.uint8),  # a blob
        spaces.Box(0, 1, (2000,), np.bool_),  # a blob
        spaces.Box(0, np.iinfo(np.uint64).max, (3,), np.uint64),
        spaces.Graph(spaces.Box(-1, 1, (3,), np.float32), spaces.Discrete(4)),
        spaces.Graph(spaces.Discrete(5), None),
        spaces.Sequence(spaces.Box(-1, 1, (2,), np.float32), stack=True),
    ],
    ids=repr,
)
def test_large_and_structured_spaces_are_recorded_exactly(space: Any, tmp_path: Path) -> None:
    episode = _check(lambda: _SpaceEnv(space, spaces.Discrete(2)), 4, tmp_path)
    assert bool(episode.blobs) == (isinstance(space, spaces.Box) and space.shape[0] >= 20)
    _check(lambda: _SpaceEnv(spaces.Discrete(2), space), 4, tmp_path, invalid="not an action")


class _GrowingGraph(gym.Env[Any, Any]):
    """Keeps one node buffer and returns it in every GraphInstance, updated in place."""

    observation_space = spaces.Graph(spaces.Box(-9, 9, (2,), np.float32), None)
    action_space = spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        self.nodes = np.zeros((3, 2), np.float32)
        return spaces.GraphInstance(self.nodes, None, np.array([[0, 1]], np.int32)), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.nodes += 1
        graph = spaces.GraphInstance(self.nodes, None, np.array([[0, 1]], np.int32))
        return graph, 0.0, bool(self.nodes[0, 0] >= 3), False, {}


def test_a_graph_updated_in_place_keeps_each_steps_nodes() -> None:
    # Before: a GraphInstance was kept by reference, so every step read the last nodes.
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(3):
            env.step(0)

    episode = capture_episode(
        _GrowingGraph,
        interact,
        case=EvalCase("probe", case_id="graph"),
        environment_id="e",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=5,
    )
    space = _GrowingGraph.observation_space
    nodes = [decode_sample(space, step["observation"]).nodes for step in episode.transitions()]
    assert [float(n[0, 0]) for n in nodes] == [1.0, 2.0, 3.0]


class _ArrayTuples(gym.Env[Any, Any]):
    """A Tuple space whose samples are given as arrays, which Tuple.contains accepts."""

    observation_space = spaces.Tuple((spaces.Discrete(3), spaces.Discrete(4)))
    action_space = spaces.Tuple((spaces.Discrete(2), spaces.Discrete(3)))

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, Any]:
        return np.array([0, 1]), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return np.array([action[0], action[1] + 1]), 1.0, True, False, {}


def test_tuple_samples_given_as_arrays_are_recorded() -> None:
    # Before: the whole episode was refused with PortabilityError ("not a sample of
    # Tuple(...)") although the space accepted the action and the environment ran it.
    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(np.array([1, 2]))

    episode = capture_episode(
        _ArrayTuples,
        interact,
        case=EvalCase("probe", case_id="tuple"),
        environment_id="e",
        observer_id="o",
        observe=dict,
        seed=0,
        max_steps=5,
    )
    assert episode.ended == "terminated"
    assert not episode.coverage_issues
    (step,) = episode.transitions()
    assert decode_sample(_ArrayTuples.action_space, step["action"]) == (1, 2)
    assert decode_sample(_ArrayTuples.observation_space, step["observation"]) == (1, 3)
    assert decode_sample(_ArrayTuples.observation_space, episode.initial["observation"]) == (0, 1)


def test_a_sequence_of_dicts_with_a_blob_key_is_no_blob_reference(tmp_path: Path) -> None:
    # Before: one sample of this space, {"$blob": [...]}, read as a blob reference, so
    # capture wrote a record that load refused ("malformed blob reference").
    space = spaces.Sequence(spaces.Dict({"$blob": spaces.MultiBinary(1)}))
    episode = _check(lambda: _SpaceEnv(space, spaces.Discrete(2)), 0, tmp_path)
    assert not episode.blobs
    _check(lambda: _SpaceEnv(spaces.Discrete(2), space), 0, tmp_path, invalid="not an action")


@pytest.mark.parametrize(
    ("space", "invalid"),
    [
        (spaces.Box(0, 1, (), np.bool_), object()),  # anything converts to bool
        (spaces.Box(0, 1, (2,), np.bool_), [object(), None]),
        (spaces.Box(-1, 1, (), np.float32), "0.5"),  # NumPy parses the text
        (spaces.Tuple((spaces.Discrete(2), spaces.Box(0, 1, (), np.bool_))), (1, object())),
        (spaces.Dict({"on": spaces.Box(0, 1, (), np.bool_)}), {"on": object()}),
    ],
    # Named, not repr'd: an object's repr holds its address, and pytest-xdist refuses
    # workers that collect different test ids.
    ids=["bool scalar", "bool vector", "float text", "tuple part", "dict part"],
)
def test_an_action_that_box_contains_only_by_conversion_is_invalid(
    space: Any, invalid: Any, tmp_path: Path
) -> None:
    # Before: Box.contains said yes, the action reached the environment, and the episode
    # could not be sealed (an action JSON cannot hold) instead of recording the refusal.
    assert space.contains(invalid)
    _check(lambda: _SpaceEnv(spaces.Discrete(2), space), 0, tmp_path, invalid)
