"""Review round 56, item 5: a wrapper's (or ``gymnasium.make``'s) setting that is not
portable JSON was recorded by its name only (``unportable_kwargs: ['dtype']``), so
``DtypeObservation(env, np.float16)`` and ``DtypeObservation(env, np.float64)``, or two
``TransformObservation`` functions, recorded the same environment and ``compare``
paired them. Each setting is now described too (``described_kwargs``): differently for
different settings, alike for the same code in every process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.wrappers import DtypeObservation, TransformObservation

from onrecord import EvalCase, compare_reports
from onrecord._canonical import content_digest
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, evaluate_episodes
from onrecord.errors import ComparisonRefused
from onrecord.integrations.gymnasium import capture_episode

ROOT = Path(__file__).resolve().parents[2]
ENDED = OutcomeCheck("ended", "v1", lambda e: OutcomeVerdict(e.ended != "returned", "", {}))
CASES = ("pole-a", "pole-b")


def _episode(make: Callable[[], Any], case_id: str = "pole-a") -> EpisodeEvidence:
    def interact(env: Any, observation: Any, info: Any) -> None:
        for _ in range(3):
            env.step(0)

    with warnings.catch_warnings():  # Box casting notes of DtypeObservation(float16)
        warnings.simplefilter("ignore")
        return capture_episode(
            make,
            interact,
            case=EvalCase("balance", case_id=case_id, completion="either"),
            environment_id="CartPole-v1",
            observer_id="none",
            observe=dict,
            seed=0,
            max_steps=5,
        )


def _wrapper(make: Callable[[], Any]) -> dict[str, Any]:
    (wrapper,) = _episode(make).environment["spec"]["additional_wrappers"]
    return wrapper  # type: ignore[no-any-return]


def _cartpole() -> Any:
    return gym.make("CartPole-v1")


def _transform(func: Callable[[Any], Any]) -> Callable[[], Any]:
    return lambda: TransformObservation(_cartpole(), func, None)


def test_dtype_observation_records_which_dtype() -> None:
    half = _wrapper(lambda: DtypeObservation(_cartpole(), np.float16))
    double = _wrapper(lambda: DtypeObservation(_cartpole(), np.float64))
    as_dtype = _wrapper(lambda: DtypeObservation(_cartpole(), np.dtype(">f4")))
    assert half["unportable_kwargs"] == ["dtype"]  # named as before
    assert half["described_kwargs"] == {"dtype": {"class": "numpy.float16"}}
    assert double["described_kwargs"] == {"dtype": {"class": "numpy.float64"}}
    assert as_dtype["described_kwargs"] == {"dtype": {"numpy_dtype": ">f4"}}
    # Before: all three recorded kwargs {} and unportable_kwargs ['dtype'], nothing else.
    assert half != double
    assert half != as_dtype


def test_two_transform_functions_record_different_specs() -> None:
    zero = _wrapper(_transform(lambda o: o * 0))
    two = _wrapper(_transform(lambda o: o * 2))
    assert zero["unportable_kwargs"] == ["func"]
    assert zero["kwargs"] == {"observation_space": None}
    func_zero, func_two = zero["described_kwargs"]["func"], two["described_kwargs"]["func"]
    assert func_zero["function"].endswith(".<locals>.<lambda>")
    assert func_zero["function"] == func_two["function"]  # the same name: the code tells
    assert func_zero["code"] != func_two["code"]
    # A named function by its module and name, with no digest.
    named = _wrapper(_transform(np.negative))
    assert named["described_kwargs"]["func"] == {"builtin": "numpy.negative"}


def test_a_comparison_across_wrapper_settings_is_refused_naming_the_setting() -> None:
    def report(make: Callable[[], Any]) -> Any:
        return evaluate_episodes([_episode(make, case) for case in CASES], [ENDED])

    half = report(lambda: DtypeObservation(_cartpole(), np.float16))
    double = report(lambda: DtypeObservation(_cartpole(), np.float64))
    with pytest.raises(ComparisonRefused) as refused:
        compare_reports(half, double)
    (reason,) = refused.value.reasons
    assert "environment settings differ" in reason
    assert "described_kwargs.dtype.class: 'numpy.float16' in A, 'numpy.float64' in B" in reason

    zero = report(_transform(lambda o: o * 0))
    two = report(_transform(lambda o: o * 2))
    with pytest.raises(ComparisonRefused, match=r"additional_wrappers\[0\]\.described_kwargs"):
        compare_reports(zero, two)
    # The same settings again still pair: the description is no new difference.
    assert compare_reports(half, report(lambda: DtypeObservation(_cartpole(), np.float16)))


_SCRIPT = textwrap.dedent(
    """
    import json, sys, warnings
    import gymnasium as gym
    import numpy as np
    from gymnasium.wrappers import DtypeObservation, TransformObservation
    from onrecord import EvalCase
    from onrecord.integrations.gymnasium import capture_episode

    SCALE = 2.5

    def scaled(k):
        return lambda o: o * k if str(o.dtype) in {"float16", "float32", "float64"} else o

    def make():
        env = DtypeObservation(gym.make("CartPole-v1"), np.float32)
        env = TransformObservation(env, scaled(SCALE), None)
        return TransformObservation(env, lambda o: (o + 1.5) * SCALE, None)

    warnings.simplefilter("ignore")
    episode = capture_episode(
        make, lambda env, o, i: None, case=EvalCase("x", case_id="x"),
        environment_id="cartpole", observer_id="none", observe=dict, seed=0, max_steps=3,
    )
    print(json.dumps(episode.environment["spec"], sort_keys=True))
    """
)


def test_the_same_functions_record_the_same_spec_in_two_processes(tmp_path: Path) -> None:
    script = tmp_path / "envspec_twice.py"
    script.write_text(_SCRIPT)
    specs = []
    for hash_seed in ("1", "2"):  # a set constant's order follows string hashing
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(ROOT / "src")}
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, env=env, check=True
        )
        specs.append(json.loads(done.stdout))
    assert specs[0] == specs[1]
    described = [wrapper["described_kwargs"] for wrapper in specs[0]["additional_wrappers"]]
    assert described[0] == {"dtype": {"class": "numpy.float32"}}
    assert described[1]["func"]["function"] == "__main__.scaled.<locals>.<lambda>"
    assert described[2]["func"]["function"] == "__main__.make.<locals>.<lambda>"
    assert len({described[1]["func"]["code"], described[2]["func"]["code"]}) == 2
    assert "0x" not in json.dumps(specs[0])  # no memory address


def test_lambdas_made_in_a_loop_are_not_confused_with_another_lambda() -> None:
    looped = [_wrapper(_transform(lambda o: o + 1)) for _ in range(2)]
    other = _wrapper(_transform(lambda o: o - 1))
    assert looped[0] == looped[1]  # the same code, made twice: the same environment
    assert looped[0]["described_kwargs"]["func"] != other["described_kwargs"]["func"]
    # A loop's value bound as a default, or closed over by a factory, tells them apart.
    bound = [_wrapper(_transform(lambda o, k=k: o * k)) for k in (1, 2)]
    assert bound[0] != bound[1]

    def scaled(k: float) -> Callable[[Any], Any]:
        return lambda o: o * k

    assert _wrapper(_transform(scaled(2.0))) != _wrapper(_transform(scaled(3.0)))
    assert _wrapper(_transform(scaled(2.0))) == _wrapper(_transform(scaled(2.0)))


def test_a_counter_the_function_keeps_does_not_make_each_episode_another_environment() -> None:
    calls = 0

    def counting(o: Any) -> Any:
        nonlocal calls
        calls += 1
        return o

    first = _wrapper(_transform(counting))
    second = _wrapper(_transform(counting))
    assert calls > 0
    assert first == second
    assert first["described_kwargs"]["func"]["function"].endswith(".<locals>.counting")
    assert "code" in first["described_kwargs"]["func"]


class _Scaler:
    def __init__(self, factor: float) -> None:
        self.factor = factor

    def __call__(self, o: Any) -> Any:
        return o * self.factor


def test_other_objects_are_described_by_type_never_by_address() -> None:
    wrapper = _wrapper(_transform(_Scaler(2.0)))
    assert wrapper["described_kwargs"]["func"] == {"instance": f"{__name__}._Scaler"}
    method = _wrapper(_transform(_Scaler(3.0).__call__))
    assert method["described_kwargs"]["func"] == {
        "method": {"function": f"{__name__}._Scaler.__call__"},
        "of": f"{__name__}._Scaler",
    }
    assert "0x" not in json.dumps([wrapper, method])


def _with_callback(callback: Any = None, label: str = "") -> gym.Env[Any, Any]:
    return gym.make("CartPole-v1").unwrapped


def test_make_kwargs_that_are_not_portable_are_described() -> None:
    env_id = "onrecord-test/Round56Callback-v0"
    if env_id not in gym.registry:
        gym.register(env_id, entry_point=_with_callback, max_episode_steps=5)
    # len, not print: a Ray test earlier in this worker (tqdm_ray) rebinds builtins.print
    measured = _episode(lambda: gym.make(env_id, callback=len, label="kept"))
    summed = _episode(lambda: gym.make(env_id, callback=sum, label="kept"))
    spec = measured.environment["spec"]
    assert spec["kwargs"] == {"label": "kept"}
    assert spec["unportable_kwargs"] == ["callback"]
    assert spec["described_kwargs"] == {"callback": {"builtin": "builtins.len"}}
    assert summed.environment["spec"]["described_kwargs"]["callback"] == {"builtin": "builtins.sum"}


def test_a_record_written_before_descriptions_still_loads_and_verifies() -> None:
    episode = _episode(lambda: DtypeObservation(_cartpole(), np.float16))
    data = json.loads(json.dumps(episode.data))
    (wrapper,) = data["environment"]["spec"]["additional_wrappers"]
    assert wrapper.pop("described_kwargs") == {"dtype": {"class": "numpy.float16"}}
    data["digest"] = content_digest(data)  # as an older onrecord wrote it
    old = EpisodeEvidence.from_dict(data)
    assert old.environment["spec"]["additional_wrappers"][0]["unportable_kwargs"] == ["dtype"]
    # Compared with a new report of the same stack it is refused: the new one says more.
    with pytest.raises(ComparisonRefused, match="described_kwargs"):
        compare_reports(evaluate_episodes([old], [ENDED]), evaluate_episodes([episode], [ENDED]))
