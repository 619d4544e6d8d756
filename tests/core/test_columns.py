"""The step columns capture splices in as bytes: exactly what decoding and re-encoding
would have written, for every kind of number and observation the recorder meets."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from gymnasium import spaces
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import onrecord._splice as splice
from onrecord._canonical import canonical_bytes
from onrecord.episode import EpisodeEvidence
from onrecord.errors import CaptureError
from tests.core.envs import GenericEnv, capture_generic

_NUMPY = orjson.OPT_SERIALIZE_NUMPY


def _float32_sweep(count: int, seed: int) -> np.ndarray:
    """float32 values spread over every exponent, random mantissas and signs."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**32, size=count, dtype=np.uint64).astype(np.uint32)
    values = bits.view(np.float32)
    return values[np.isfinite(values)]


def test_every_unstable_float32_notation_is_detected() -> None:
    values = _float32_sweep(300_000, seed=1)
    raw = orjson.dumps(values, option=_NUMPY)
    rewritten = orjson.dumps(orjson.loads(raw))
    pairs = list(zip(raw[1:-1].split(b","), rewritten[1:-1].split(b","), strict=True))
    changed = [token for token, again in pairs if token != again]
    assert changed, "the sweep must meet float32 forms that a double writes differently"
    assert all(splice.unstable_notation(token) for token in changed)


def test_doubles_never_use_the_float32_notation_for_small_numbers() -> None:
    doubles = _float32_sweep(100_000, seed=2).astype(np.float64) * np.pi
    raw = orjson.dumps(doubles.tolist())
    assert b"0.00000" not in raw
    assert orjson.dumps(orjson.loads(raw)) == raw


def test_the_installed_orjson_passes_the_probe() -> None:
    # Otherwise capture would silently take the slow path everywhere.
    assert splice.splicing_is_exact()


def test_list_fragment_decodes_what_it_cannot_splice() -> None:
    stable = [b'{"a":[0.5,1]}', b'{"a":null}']
    spliced = splice.list_fragment(stable)
    assert isinstance(spliced, splice.Spliced)
    assert splice.dumps_spliced({"x": spliced}) == b'{"x":[{"a":[0.5,1]},{"a":null}]}'
    unstable = [orjson.dumps(np.float32(7.630131e-6), option=_NUMPY)]
    assert splice.list_fragment(unstable) == [pytest.approx(7.630131e-6, rel=1e-6)]
    terminated = splice.list_fragment([b"1,", b"2,"], terminated=True)
    assert splice.dumps_spliced([terminated]) == b"[[1,2]]"
    columns = {"x": terminated}
    splice.resolve_spliced(columns)
    assert columns == {"x": [1, 2]}
    assert splice.list_fragment([]) == []


@pytest.mark.parametrize(
    "dtype", ["float16", "float32", "float64", "int8", "uint8", "int64", "uint64", "bool"]
)
def test_array_fragment_writes_what_tolist_would(dtype: str) -> None:
    rng = np.random.default_rng(3)
    array = (
        rng.normal(0, 1e3, (40, 3)) if dtype.startswith("float") else rng.integers(0, 2, (40, 3))
    ).astype(dtype)
    fragment = splice.array_fragment(array)
    assert splice.dumps_spliced([fragment]) == canonical_bytes([array.tolist()])


def _box_env(observations: list[Any], space: spaces.Box) -> GenericEnv:
    queue = iter(observations)
    return GenericEnv(
        lambda env, action: (next(queue), 0.5, False, False, {}), observation_space=space
    )


def _walk(count: int) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(count):
            env.step(0)

    return interact


@pytest.mark.parametrize("dtype", ["float32", "float64", "uint8", "int64"])
def test_box_observations_are_recorded_exactly(dtype: str, tmp_path: Path) -> None:
    space = spaces.Box(0 if dtype == "uint8" else -100, 100, (2, 3), dtype=dtype)
    native = [space.sample() for _ in range(5)]
    episode = capture_generic(_box_env([o.copy() for o in native], space), _walk(5), max_steps=5)
    episode.save_json(tmp_path / "episode.json")
    reloaded = EpisodeEvidence.load(tmp_path / "episode.json")
    assert [t["observation"] for t in reloaded.transitions()] == [o.tolist() for o in native]
    decoded = space.from_jsonable([t["observation"] for t in reloaded.transitions()])
    for expected, got in zip(native, decoded, strict=True):
        assert np.array_equal(expected, got)
        assert expected.dtype == got.dtype


def test_observations_off_the_declared_box_keep_their_own_values() -> None:
    # A float32 Box whose environment returns float64 and a wrong shape: recorded as
    # returned, never reinterpreted through the declared dtype.
    space = spaces.Box(-1, 1, (2,), dtype=np.float32)
    returned = [
        np.array([0.1, 0.2], dtype=np.float32),
        np.array([0.1, 0.2], dtype=np.float64),
        np.array([[0.3], [0.4]], dtype=np.float32),
    ]
    episode = capture_generic(_box_env(returned, space), _walk(3), max_steps=3)
    observed = [t["observation"] for t in episode.transitions()]
    assert observed[0] == np.array([0.1, 0.2], dtype=np.float32).tolist()
    assert observed[1] == [0.1, 0.2]  # the float64 values, not float32 roundings
    assert observed[2] == returned[2].tolist()  # its own shape, not the declared one


def test_observation_changed_in_place_after_the_step_keeps_its_recorded_value() -> None:
    buffer = np.zeros(2, dtype=np.float32)

    def step(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        buffer[:] = env.steps_taken  # the environment reuses one array
        return buffer, 0.0, False, False, {}

    env = GenericEnv(step, observation_space=spaces.Box(-9, 9, (2,), np.float32))
    episode = capture_generic(env, _walk(3), max_steps=3)
    assert [t["observation"] for t in episode.transitions()] == [[1, 1], [2, 2], [3, 3]]


_scalars = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False),
    st.floats(allow_nan=False, allow_infinity=False, width=32).map(np.float32),
    st.floats(allow_nan=False, allow_infinity=False).map(np.float64),
    st.integers(-(2**63), 2**63 - 1),
    st.booleans(),
    st.none(),
    st.text(max_size=5),
)
_states = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=12,
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(states=st.lists(_states, min_size=1, max_size=4))
def test_spliced_and_decoded_records_are_identical(
    states: list[Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    def capture() -> EpisodeEvidence:
        queue = iter(states)
        env = GenericEnv(
            lambda env, action: (env.observation_space.sample(), 1.0, False, False, {})
        )
        current: dict[str, Any] = {}

        def interact(wrapped: Any, observation: Any, info: Any) -> None:
            for state in queue:
                current["state"] = state
                wrapped.step(0)

        return capture_generic(
            env, interact, observe=lambda: current.get("state"), max_steps=len(states)
        )

    spliced = capture()
    with monkeypatch.context() as patched:
        patched.setattr(splice, "splicing_is_exact", lambda: False)
        decoded = capture()
    assert spliced.states() == decoded.states()
    # Same bytes for every column but the wall times, which differ between two runs.
    for column in ("state", "observation", "info", "reward", "status"):
        assert canonical_bytes(spliced.data["steps"][column]) == canonical_bytes(
            decoded.data["steps"][column]
        )
    path = tmp_path / "episode.json"
    spliced.save_json(path)
    assert EpisodeEvidence.load(path).states() == spliced.states()


@pytest.mark.parametrize("fixture", ["cartpole_episode", "goal_episode"])
def test_captured_evidence_reads_as_its_own_bytes(
    fixture: str, request: pytest.FixtureRequest
) -> None:
    # capture keeps what it built and decodes only the spliced columns on first read;
    # every accessor must agree with a record parsed from the sealed bytes.
    captured: EpisodeEvidence = request.getfixturevalue(fixture)
    fresh = EpisodeEvidence.from_dict(orjson.loads(captured.to_bytes()))
    for accessor in ("states", "attempts", "transitions", "actions", "failures"):
        assert getattr(captured, accessor)() == getattr(fresh, accessor)(), accessor
    for attribute in ("initial", "case", "environment", "final_state", "measures", "ended"):
        assert getattr(captured, attribute) == getattr(fresh, attribute), attribute
    assert captured.data == fresh.data


def test_sparse_infos_and_the_final_flags_line_up_with_their_steps() -> None:
    def step(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        n = env.steps_taken
        info = {"step": n} if n % 2 else {}
        return env.observation_space.sample(), float(n), n == 4, n == 4, info

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        wrapped.step(0)
        with pytest.raises(CaptureError):
            wrapped.step(7)  # refused: not in Discrete(2); no transition, no info
        for _ in range(3):
            wrapped.step(1)
        with pytest.raises(CaptureError):
            wrapped.step(0)  # after the end

    episode = capture_generic(GenericEnv(step), interact, max_steps=10)
    transitions = episode.transitions()
    assert [t["info"] for t in transitions] == [{"step": 1}, {}, {"step": 3}, {}]
    assert [t["reward"] for t in transitions] == [1.0, 2.0, 3.0, 4.0]
    assert [(t["terminated"], t["truncated"]) for t in transitions] == [(False, False)] * 3 + [
        (True, True)
    ]
    assert [a["status"] for a in episode.attempts()] == [
        "ok",
        "invalid_action",
        "ok",
        "ok",
        "ok",
        "lifecycle",
    ]
    assert episode.ended == "terminated"
    assert EpisodeEvidence.from_dict(episode.data).transitions() == transitions


def test_box_descriptions_are_cached_by_value_and_handed_out_as_copies() -> None:
    from onrecord.integrations.gymnasium._spaces import describe_space

    first = describe_space(spaces.Box(-1, 1, (2,), np.float32))
    again = describe_space(spaces.Box(-1, 1, (2,), np.float32))
    assert (
        first
        == again
        == {
            "repr": repr(spaces.Box(-1, 1, (2,), np.float32)),
            "type": "Box",
            "layout": "list",
        }
    )
    first["repr"] = "changed by a caller"
    assert describe_space(spaces.Box(-1, 1, (2,), np.float32))["repr"] != "changed by a caller"
    for other in (
        spaces.Box(-1, 2, (2,), np.float32),
        spaces.Box(-1, 1, (2,), np.float64),
        spaces.Box(-1, 1, (1, 2), np.float32),
    ):
        assert describe_space(other)["repr"] == repr(other)


@pytest.mark.parametrize("size", [16_384 - 7, 16_384 - 3, 16_384, 2 * 16_384 - 1, 40_000])
def test_the_windowed_scan_finds_a_float32_notation_anywhere(size: int) -> None:
    # The long needle is searched in overlapping windows: one straddling a window's
    # border, or at either end of the column, must still be found.
    clean = b"1.25," * (size // 5 + 2)
    assert not splice.unstable_notation(clean)
    for start in (0, size - 7, size - 3, size, len(clean) - 7):
        dirty = clean[:start] + b"0.00000" + clean[start + 7 :]
        assert splice.unstable_notation(dirty), start
    assert splice.unstable_notation(clean[:size] + b"+")


def _rewarded(rewards: list[Any]) -> EpisodeEvidence:
    queue = iter(rewards)
    env = GenericEnv(lambda env, action: (env.observation_space.sample(), next(queue), *_GO_ON))
    return capture_generic(env, _walk(len(rewards)), max_steps=len(rewards))


_GO_ON = (False, False, {})


@pytest.mark.parametrize(
    "rewards",
    [
        [1.0] * 50,  # CartPole
        [-1.0] * 50,  # MountainCar, Acrobot
        [0.1] * 7,  # a return fsum must round once, not per step
        [1, 1.0, np.float64(1.0), True],  # equal values of several types, all 1.0
        [0.0, -0.0, 0.0],  # equal, yet written differently: never one repeated value
        [-0.0, -0.0],
        [0.5, 0.25, 0.5],
        [np.float32(0.1), np.float32(0.1)],
    ],
)
def test_the_reward_column_and_return_match_the_rewards(rewards: list[Any], tmp_path: Path) -> None:
    episode = _rewarded(rewards)
    floats = [float(r) for r in rewards]
    assert canonical_bytes(episode.data["steps"]["reward"]) == canonical_bytes(floats)
    assert [t["reward"] for t in episode.transitions()] == floats
    assert episode.measures["return"] == math.fsum(floats)
    episode.save_json(tmp_path / "episode.json")  # load re-derives the return: must agree
    assert EpisodeEvidence.load(tmp_path / "episode.json").data == episode.data


def test_states_of_fresh_evidence_are_detached_copies() -> None:
    # Captured evidence hands out its states by decoding the recorded bytes, before and
    # after anything decodes the column for good; changing a copy changes nothing.
    counter = {"n": 0}

    def observe() -> Any:
        counter["n"] += 1
        return {"n": counter["n"], "nested": [[counter["n"], "a,b"], {"x": None}]}

    env = GenericEnv(lambda env, action: (env.observation_space.sample(), 1.0, False, False, {}))
    captured = capture_generic(env, _walk(4), observe=observe, max_steps=4)
    parsed = EpisodeEvidence.from_dict(orjson.loads(captured.to_bytes()))
    expected = parsed.states()
    assert [state["n"] for state in expected] == [1, 2, 3, 4, 5, 6]
    transitions = captured.transitions()  # from the recorded bytes, nothing decoded
    assert transitions == parsed.transitions()
    transitions[0]["observation"].append(99)
    transitions[0]["state"]["nested"].clear()
    assert captured.transitions() == parsed.transitions()
    first = captured.states()
    assert first == expected
    first[1]["nested"][0].append(99)
    first.clear()
    assert captured.states() == expected
    assert [a["state"] for a in captured.attempts()] == expected[1:-1]  # decodes the column
    assert captured.states() == expected


def test_arrays_inside_tuple_actions_and_observations_are_detached() -> None:
    # The agent changes its action array after the step, the environment its
    # observation buffer: the record keeps what was sent and returned at the time.
    box = spaces.Box(-9, 9, (2,), np.float32)
    buffer = np.zeros(2, dtype=np.float32)

    def step(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        buffer[:] = env.steps_taken
        return (1, buffer), 0.0, False, False, {}

    env = GenericEnv(
        step,
        action_space=spaces.Tuple((spaces.Discrete(2), box)),
        observation_space=spaces.Tuple((spaces.Discrete(2), box)),
    )

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        for value in (1.0, 2.0):
            action = (0, np.full(2, value, dtype=np.float32))
            wrapped.step(action)
            action[1][:] = -1.0

    episode = capture_generic(env, interact)
    assert [t["action"] for t in episode.transitions()] == [[0, [1.0, 1.0]], [0, [2.0, 2.0]]]
    assert [t["observation"] for t in episode.transitions()] == [[1, [1.0, 1.0]], [1, [2.0, 2.0]]]
