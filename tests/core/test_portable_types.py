"""Which Python objects are portable JSON, decided the same way on every path: the C fast
paths (orjson) and the exact walk must never disagree, whatever else the value holds."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import json
import re
import uuid
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import canonical_bytes, state_bytes, to_portable
from onrecord.episode import EpisodeEvidence
from onrecord.errors import InputError, PortabilityError
from onrecord.integrations.gymnasium import capture_episode


@dataclasses.dataclass
class Point:
    x: int


class Colour(enum.Enum):
    RED = 1
    BLUE = "blue"


class Level(enum.IntEnum):
    HIGH = 3


class Status(str, enum.Enum):  # noqa: UP042 -- a mixin on purpose: its str() is "Status.POSTED"
    POSTED = "posted"


# orjson writes each of these natively as text or as an object; none has a JSON form.
FOREIGN = {
    "datetime": datetime.datetime(2026, 11, 29, 17, 0),
    "date": datetime.date(2026, 11, 29),
    "time": datetime.time(17, 0),
    "uuid": uuid.UUID(int=7),
    "datetime64": np.datetime64("2026-11-29"),
    "dataclass": Point(1),
    "decimal": decimal.Decimal("1.5"),
}
ENUMS = [(Colour.RED, 1), (Colour.BLUE, "blue"), (Level.HIGH, 3), (Status.POSTED, "posted")]


def _with_neighbours(value: Any, null_beside: bool) -> dict[str, Any]:
    """The value next to an unrelated string, and with or without an unrelated null
    (a null used to send the value down a different path, with a different answer)."""
    record: dict[str, Any] = {"value": value, "label": "invoice-17", "amount": 12.5}
    if null_beside:
        record["note"] = None
    return record


@pytest.mark.parametrize("null_beside", [False, True], ids=["alone", "beside-null"])
@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_a_foreign_object_is_refused_on_every_path(name: str, null_beside: bool) -> None:
    record = _with_neighbours(FOREIGN[name], null_beside)
    for encode in (to_portable, state_bytes):
        with pytest.raises(PortabilityError, match=r"\$\.value holds a "):
            encode(record, "$")


@pytest.mark.parametrize("null_beside", [False, True], ids=["alone", "beside-null"])
@pytest.mark.parametrize(("member", "value"), ENUMS, ids=lambda v: repr(v))
def test_an_enum_member_is_stored_as_its_value_on_every_path(
    member: enum.Enum, value: Any, null_beside: bool
) -> None:
    record = _with_neighbours(member, null_beside)
    expected = {**record, "value": value}
    assert to_portable(record) == expected
    assert type(to_portable(record)["value"]) is type(value)
    assert state_bytes(record) == canonical_bytes(expected)


@pytest.mark.parametrize("where", ["value", "key"])
def test_a_lone_surrogate_is_refused_with_its_path(where: str) -> None:
    bad = "x\ud800"
    record = {"rows": [{"memo": "ok"}, {bad: 1} if where == "key" else {"memo": bad}]}
    for encode in (to_portable, state_bytes):
        with pytest.raises(PortabilityError, match=r"\$\.rows\[1\].* lone surrogate"):
            encode(record, "$")


@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_capture_keeps_a_foreign_observer_value_as_an_observer_error(name: str) -> None:
    episode = _one_step_observing({"tile": 0, "at": FOREIGN[name]})
    assert episode.states() == [None, None, None]
    assert "$.state.at holds a " in episode.data["steps"]["observer_error"][0]
    assert episode.coverage_issues  # nothing was observed: never a silent pass


# Plain JSON values, and a path into them where a foreign object can be put.
JSON_LEAVES = st.none() | st.booleans() | st.integers(-(2**63), 2**63) | st.text(max_size=8)
JSON_LEAVES |= st.floats(allow_nan=False, allow_infinity=False)
JSON_VALUES = st.recursive(
    JSON_LEAVES,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=12,
)


@given(JSON_VALUES, st.sampled_from(sorted(FOREIGN)), st.data())
def test_property_a_foreign_object_anywhere_is_refused_at_its_path(
    tree: Any, name: str, data: st.DataObject
) -> None:
    planted, path = _plant({"tree": tree}, FOREIGN[name], "$", data)
    for encode in (to_portable, state_bytes):
        with pytest.raises(PortabilityError) as caught:
            encode(planted, "$")
        assert caught.value.path == path


@given(JSON_VALUES)
def test_property_plain_json_passes_every_path_unchanged(tree: Any) -> None:
    record = {"tree": tree}
    assert to_portable(record) == record
    assert state_bytes(record) == canonical_bytes(record)


def _member(path: str, key: str) -> str:
    """A key's JSON path: after a dot when an ASCII identifier, else quoted in brackets."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _plant(value: Any, foreign: Any, path: str, data: st.DataObject) -> tuple[Any, str]:
    """A copy of ``value`` with ``foreign`` put into one container, and its JSON path."""
    if isinstance(value, dict) and value:
        key = data.draw(st.sampled_from(sorted(value)))
        if data.draw(st.booleans()):
            return {**value, key: foreign}, _member(path, key)
        inner, where = _plant(value[key], foreign, _member(path, key), data)
        return {**value, key: inner}, where
    if isinstance(value, list) and value:
        index = data.draw(st.integers(0, len(value) - 1))
        if data.draw(st.booleans()):
            inner, where = foreign, f"{path}[{index}]"
        else:
            inner, where = _plant(value[index], foreign, f"{path}[{index}]", data)
        return [*value[:index], inner, *value[index + 1 :]], where
    return [value, foreign], f"{path}[1]"  # a leaf: it becomes a list holding both


@pytest.mark.parametrize("metadata", [[("tier", "gold")], "gold", 5], ids=["pairs", "str", "int"])
def test_case_metadata_that_is_not_a_mapping_is_named(metadata: Any) -> None:
    with pytest.raises(InputError, match=r"EvalCase\.metadata must be a mapping"):
        EvalCase("post the remittance", metadata=metadata)


def test_case_metadata_with_a_foreign_object_is_refused_at_its_path() -> None:
    with pytest.raises(PortabilityError, match=r"\$\.metadata\.received holds a datetime"):
        EvalCase("post the remittance", metadata={"received": datetime.date(2026, 11, 29)})


@pytest.mark.parametrize(
    "shape",
    [
        lambda v: {"state": v},
        lambda v: {"state": [0.5, v]},
        lambda v: [v],
        lambda v: v,
        lambda v: {"a": 1, "b": {"c": [v]}},
    ],
    ids=["lone-key", "in-list", "top-list", "bare", "nested"],
)
@pytest.mark.parametrize("name", ["uuid", "datetime64"])
def test_capture_refuses_text_written_objects_in_any_state_shape(name: str, shape: Any) -> None:
    """The per-step observer path decides string values from the bytes' quotes; every
    shape a text-written object can sit in must reach the exact check."""
    episode = _one_step_observing(shape(FOREIGN[name]))
    assert episode.states()[1] is None
    assert "holds a " in episode.data["steps"]["observer_error"][0]


def _one_step_observing(state: Any) -> EpisodeEvidence:
    """One FrozenLake step, with an observer that returns ``state`` every time."""

    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(1)

    return capture_episode(
        lambda: gym.make("FrozenLake-v1"),
        interact,
        case=EvalCase("portable"),
        environment_id="frozenlake/v1",
        observer_id="foreign/v1",
        observe=lambda: state,
        seed=0,
        max_steps=3,
    )


@pytest.mark.parametrize(
    "state",
    [
        {"note": None, "angles": np.array([0.5, np.nan])},
        {"note": "held", "angles": [0.5, float("nan")]},
        {"rows": [{"memo": None}, {"memo": float("inf")}]},
    ],
    ids=["nan-in-array-beside-null", "nan-beside-text", "inf-among-null-rows"],
)
def test_a_nan_is_found_whatever_sits_beside_it(state: Any) -> None:
    """A null in the bytes is taken as a NULL only when the bytes read back equal."""
    with pytest.raises(PortabilityError, match=r"non-finite|nan|inf"):
        state_bytes(state, "$")


def test_rows_with_nulls_and_text_pass_without_a_walk() -> None:
    rows = [{"id": i, "memo": None if i % 2 else "x", "amount": i * 1.5} for i in range(50)]
    assert state_bytes({"claims": rows}) == canonical_bytes({"claims": rows})
