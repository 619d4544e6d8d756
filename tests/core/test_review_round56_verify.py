"""Review round 56: episode evidence edited and sealed again (its digest made anew), that
loading accepted or failed on with a bare Python error.

* Without ``interact`` or ``final_observer_error`` (both may be null),
  ``EpisodeEvidence.from_dict`` and ``load`` raised KeyError; ``verify`` said only
  "malformed record".
* A step index held as ``0.0`` or ``true`` verified (``0.0 == 0``, ``True == 1``), and
  then ``transitions()`` raised TypeError and ``onrecord show`` printed a traceback.
* A field onrecord never writes (top level, ``environment``, ``initial``, ``cleanup``,
  ``steps``) was carried along unread, where a report refuses its unknown fields.

Each is now a SchemaError naming the field, and the commands exit 3 with it.
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import content_digest, record_bytes
from onrecord.episode import EpisodeEvidence
from onrecord.errors import CaptureError, OnrecordError, SchemaError
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord

INDEX_COLUMNS = ("action_index", "transition_index")


@pytest.fixture(scope="module")
def frozenlake() -> dict[str, Any]:
    """A FrozenLake episode walked to the goal: six steps, every attempt ``ok``."""
    return run_gym_task(frozenlake_task(), FROZENLAKE_AGENTS["walks_to_goal"](), seed=7).data


def _cartpole_with_refusals() -> dict[str, Any]:
    """A CartPole episode whose second and fourth attempts are refused actions: its
    ``action_index`` and ``transition_index`` skip them ([0, 2, 4, 5])."""

    def interact(env: Any, observation: Any, info: Any) -> None:
        for action in (0, 7, 1, 9, 0, 1):
            with contextlib.suppress(CaptureError):  # a refused action
                env.step(action)

    return capture_episode(
        lambda: gym.make("CartPole-v1"),
        interact,
        case=EvalCase("balance", case_id="pole", completion="either"),
        environment_id="CartPole-v1",
        observer_id="none",
        observe=dict,
        seed=0,
        max_steps=20,
    ).data


@pytest.fixture(scope="module")
def cartpole() -> dict[str, Any]:
    data = _cartpole_with_refusals()
    assert data["steps"]["action_index"] == [0, 2, 4, 5]
    return data


def _resealed(data: dict[str, Any], edit: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """``data`` with ``edit`` applied and its digest made again."""
    edited = copy.deepcopy(data)
    edited.pop("digest")
    edit(edited)
    return {**edited, "digest": content_digest(edited)}


def _saved(data: dict[str, Any], path: Path) -> Path:
    path.write_bytes(record_bytes(data))
    return path


def _refused_by_the_commands(path: Path, *words: str) -> None:
    """``verify`` and ``show`` of ``path`` exit 3 with one error line holding ``words``,
    no traceback and no catch-all "malformed record"."""
    for command in ("verify", "show"):
        done = onrecord(command, path)
        assert done.returncode == 3, (command, done.stdout + done.stderr)
        assert "Traceback" not in done.stderr
        assert "malformed record" not in done.stderr, done.stderr
        lines = [line for line in done.stderr.splitlines() if "error:" in line]
        assert len(lines) == 1, done.stderr
        for word in words:
            assert word in lines[0], (command, done.stderr)


# --- 1. a missing field that may be null ---------------------------------------------


@pytest.mark.parametrize("field", ["interact", "final_observer_error"])
def test_a_missing_nullable_field_is_named(
    frozenlake: dict[str, Any], tmp_path: Path, field: str
) -> None:
    EpisodeEvidence.from_dict(frozenlake)  # as captured, it loads
    data = _resealed(frozenlake, lambda d: d.pop(field))
    with pytest.raises(SchemaError, match=rf"field '{field}' is missing"):
        EpisodeEvidence.from_dict(data)
    path = _saved(data, tmp_path / "ep.json")
    with pytest.raises(SchemaError, match=rf"ep\.json: field '{field}' is missing"):
        EpisodeEvidence.load(path)
    _refused_by_the_commands(path, "ep.json", f"field '{field}' is missing")


def test_a_null_interact_is_still_read_as_a_setup_that_failed(frozenlake: dict[str, Any]) -> None:
    """Null is not missing: a present null ``interact`` goes on to the consistency
    checks, which say why it cannot be null here (the environment was reset)."""
    data = _resealed(frozenlake, lambda d: d.update(interact=None))
    with pytest.raises(OnrecordError, match="interact must be recorded exactly when"):
        EpisodeEvidence.from_dict(data)
    without = _resealed(frozenlake, lambda d: d.pop("interact"))
    with pytest.raises(SchemaError, match="field 'interact' is missing"):  # KeyError before
        EpisodeEvidence.from_dict(without)


# --- 2. step indices that equal an integer without being one --------------------------


@pytest.mark.parametrize(
    ("column", "position", "value"),
    [
        ("transition_index", 0, 0.0),
        ("transition_index", 1, True),
        ("action_index", 0, 0.0),
        ("action_index", 1, True),
        ("action_index", 0, False),
        ("transition_index", 5, 5.0),
    ],
)
def test_a_step_index_must_be_a_plain_integer(
    frozenlake: dict[str, Any], tmp_path: Path, column: str, position: int, value: Any
) -> None:
    data = _resealed(frozenlake, lambda d: d["steps"][column].__setitem__(position, value))
    assert data["steps"][column] == frozenlake["steps"][column]  # equal, in Python's eyes
    with pytest.raises(SchemaError, match=rf"steps\.{column}\[{position}\] is {value!r}, not an"):
        EpisodeEvidence.from_dict(data)
    path = _saved(data, tmp_path / "ep.json")
    with pytest.raises(SchemaError, match=rf"steps\.{column}\[{position}\]"):
        EpisodeEvidence.load(path)
    _refused_by_the_commands(path, f"steps.{column}[{position}]", "not an integer")


def test_a_float_index_among_skipped_attempts_is_refused(cartpole: dict[str, Any]) -> None:
    """Where the indices are not the positions (refused actions were skipped), a float
    equal to the right attempt number verified too."""
    EpisodeEvidence.from_dict(cartpole)
    data = _resealed(cartpole, lambda d: d["steps"]["transition_index"].__setitem__(2, 4.0))
    with pytest.raises(SchemaError, match=r"steps\.transition_index\[2\] is 4\.0"):
        EpisodeEvidence.from_dict(data)


def _equal_ish(value: int) -> st.SearchStrategy[Any]:
    """Values that are not the int ``value`` but look like it: its float, its string,
    a bool (``True == 1``, ``False == 0``: the one that equals it where there is one)."""
    bools = st.just(value == 1) if value in (0, 1) else st.booleans()
    return st.one_of(st.just(float(value)), st.just(str(value)), bools)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_index_column_with_one_non_int_is_refused(
    frozenlake: dict[str, Any], cartpole: dict[str, Any], data: st.DataObject
) -> None:
    episode = data.draw(st.sampled_from([frozenlake, cartpole]), label="episode")
    column = data.draw(st.sampled_from(INDEX_COLUMNS), label="column")
    indices = episode["steps"][column]
    position = data.draw(st.integers(0, len(indices) - 1), label="position")
    value = data.draw(_equal_ish(indices[position]), label="value")
    record = _resealed(episode, lambda d: d["steps"][column].__setitem__(position, value))
    with pytest.raises(OnrecordError, match=rf"steps\.{column}"):
        EpisodeEvidence.from_dict(record)


# --- 3. fields onrecord never writes ---------------------------------------------------


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d.update(notes="reviewed"), r"the record has unknown field\(s\) \['notes'\]"),
        (
            lambda d: d["steps"].update(extra=[0] * 6),
            r"field 'steps' has unknown field\(s\) \['extra'\]",
        ),
        (
            lambda d: d["environment"].update(region="eu"),
            r"field 'environment' has unknown field\(s\) \['region'\]",
        ),
        (
            lambda d: d["initial"].update(seed=7),
            r"field 'initial' has unknown field\(s\) \['seed'\]",
        ),
        (
            lambda d: d["cleanup"].update(closed=True),
            r"field 'cleanup' has unknown field\(s\) \['closed'\]",
        ),
    ],
    ids=["top", "steps", "environment", "initial", "cleanup"],
)
def test_an_unknown_field_is_refused(
    frozenlake: dict[str, Any],
    tmp_path: Path,
    edit: Callable[[dict[str, Any]], None],
    message: str,
) -> None:
    data = _resealed(frozenlake, edit)
    with pytest.raises(SchemaError, match=message):
        EpisodeEvidence.from_dict(data)
    path = _saved(data, tmp_path / "ep.json")
    _refused_by_the_commands(path, "ep.json", "unknown field(s)", "restore the saved file")


def test_every_field_capture_writes_is_known(
    frozenlake: dict[str, Any], cartpole: dict[str, Any]
) -> None:
    """The fields refused above are exactly those capture never writes: an episode
    whose setup failed (no environment) and the two above load, and a renamed field is
    named as the missing one, not only as the unknown one."""

    def failing_factory() -> Any:
        raise RuntimeError("no simulator here")

    failed = capture_episode(
        failing_factory,
        lambda env, observation, info: None,
        case=EvalCase("balance", case_id="pole"),
        environment_id="CartPole-v1",
        observer_id="none",
        observe=dict,
        seed=0,
        max_steps=5,
    ).data
    for data in (frozenlake, cartpole, failed):
        EpisodeEvidence.from_dict(data)
    renamed = _resealed(frozenlake, lambda d: d.update(interacts=d.pop("interact")))
    with pytest.raises(SchemaError, match="field 'interact' is missing"):
        EpisodeEvidence.from_dict(renamed)
    extra = _resealed(failed, lambda d: d.update(interact_log=[]))
    with pytest.raises(SchemaError, match=r"unknown field\(s\) \['interact_log'\]"):
        EpisodeEvidence.from_dict(extra)
