"""Environment resolution probes: ``module:factory`` factories that raise or cannot be
imported, Gymnasium ids that cannot be made, and ``register_environment`` arguments."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from gymnasium.error import DependencyNotInstalled

from onrecord.errors import InputError
from onrecord.runner import plan_run, register_environment
from onrecord.runner._registry import resolve_environment

MODULE = "tests.runner.test_registry_probe3"


def raising_factory(**config: Any) -> Any:
    """A ``module:factory`` whose own code fails."""
    raise RuntimeError("the simulator licence expired")


def factory_with_inner_type_error(size: int = 1) -> Any:
    """Takes the config it is given, then fails with a TypeError of its own."""
    return len(size)  # type: ignore[arg-type]


def _needs_an_extra(**kwargs: Any) -> Any:
    raise DependencyNotInstalled('Box2D is not installed: pip install "gymnasium[box2d]"')


@pytest.fixture
def extra_gym_id() -> Iterator[str]:
    """A Gymnasium id whose environment needs an extra that is not installed."""
    name = "Probe3NeedsExtra-v0"
    gym.register(name, entry_point=_needs_an_extra)
    yield name
    del gym.registry[name]


def test_a_factory_that_raises_is_bad_input_naming_it() -> None:
    # Was the RuntimeError itself: a traceback and exit 1 (read by CI as reject).
    with pytest.raises(InputError, match=r"raising_factory\(\*\*\{\}\) raised RuntimeError: the"):
        plan_run(f"{MODULE}:raising_factory", "random")


def test_a_type_error_inside_a_factory_is_not_blamed_on_the_config() -> None:
    with pytest.raises(InputError, match="raised TypeError") as caught:
        plan_run(f"{MODULE}:factory_with_inner_type_error", "random")
    assert "does not accept" not in str(caught.value)
    with pytest.raises(InputError, match=r"does not accept the config \['colour'\]"):
        resolve_environment(f"{MODULE}:factory_with_inner_type_error", {"colour": 1})


def test_a_factory_module_that_fails_to_import_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "probe3_broken_env.py").write_text(
        "import probe3_missing_dependency\n\ndef make(**config):\n    pass\n"
    )
    (tmp_path / "probe3_good_env.py").write_text("def make(**config):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    # Was "unknown environment ...: not an importable 'module:factory'", hiding the cause.
    with pytest.raises(InputError, match="No module named 'probe3_missing_dependency'"):
        plan_run("probe3_broken_env:make", "random")
    with pytest.raises(InputError, match="has no attribute 'nothing'"):
        plan_run("probe3_good_env:nothing", "random")


def test_a_gymnasium_id_that_cannot_be_made_fails_the_plan(extra_gym_id: str) -> None:
    # Was a plan that succeeded, then every episode a setup error: exit 2, not 3.
    with pytest.raises(InputError, match=r"DependencyNotInstalled: Box2D is not installed"):
        plan_run(extra_gym_id, "random")
    with pytest.raises(InputError, match="unexpected keyword argument 'bogus'"):
        plan_run("CartPole-v1", "random", environment_config={"bogus": 5})
    assert plan_run("CartPole-v1", "random", environment_config={"max_episode_steps": 5})


@pytest.mark.parametrize(
    ("name", "factory", "message"),
    [
        (" padded", f"{MODULE}:raising_factory", "surrounding spaces"),
        ("probe3", 5, "got int"),
        ("probe3", "no_colon", "must be an import path"),
        ("probe3", functools.partial(raising_factory), "module-level function"),
    ],
)
def test_register_environment_refuses_what_workers_cannot_import(
    name: str, factory: Any, message: str
) -> None:
    # A partial or an int crashed with AttributeError; "no_colon" was accepted and
    # failed only when a run named it.
    with pytest.raises(InputError, match=message):
        register_environment(name, factory)
