"""Issue 2, "Tamper": any single changed *value* (or key) in saved evidence, a report or
a policy makes loading fail — even when the tamperer rewrites the file in canonical form,
so that the change is not caught by the bytes' layout but only by the digest and the
consistency checks."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.episode import EpisodeEvidence
from onrecord.errors import DigestMismatch, OnrecordError
from onrecord.report import EvaluationReport

POLICY = AcceptancePolicy(
    (
        CheckRequirement("reached_goal"),
        CheckRequirement("no_hole_visited", critical=False, min_pass_rate=0.5, min_cases=2),
        CheckRequirement("dynamics/*", min_coverage=0.75),
    ),
    name="release",
)
Path_ = tuple[str | int, ...]


def _paths(value: Any, prefix: Path_ = ()) -> list[Path_]:
    """Every leaf (and every empty container) of a parsed JSON value."""
    if isinstance(value, dict) and value:
        return [p for key, item in value.items() for p in _paths(item, (*prefix, key))]
    if isinstance(value, list) and value:
        return [p for index, item in enumerate(value) for p in _paths(item, (*prefix, index))]
    return [prefix]


def _changed(value: Any) -> Any:
    """A different JSON value, as close to the original as possible."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return math.nextafter(value, math.inf)
    if isinstance(value, str):
        return value[:-1] + ("b" if value.endswith("a") else "a")
    if value is None:
        return 0
    if isinstance(value, list):
        return [0]
    return {"x": 0}


def _container(data: Any, path: Path_) -> Any:
    for step in path[:-1]:
        data = data[step]
    return data


def _tampered(data: dict[str, Any], path: Path_, rename: bool) -> dict[str, Any]:
    copy = orjson.loads(orjson.dumps(data))
    if not path:
        return copy
    parent, last = _container(copy, path), path[-1]
    if rename and isinstance(last, str):
        parent[last + "_"] = parent.pop(last)
    else:
        parent[last] = _changed(parent[last])
    return copy


@pytest.fixture(scope="module")
def saved(
    tmp_path_factory: pytest.TempPathFactory,
    goal_episode: EpisodeEvidence,
    cartpole_episode: EpisodeEvidence,
    frozenlake_report: EvaluationReport,
) -> dict[str, tuple[dict[str, Any], Callable[[Path], Any]]]:
    folder = tmp_path_factory.mktemp("saved")
    records: dict[str, tuple[Any, Callable[[Path], Any]]] = {
        "frozenlake-episode": (goal_episode, EpisodeEvidence.load),
        "cartpole-episode": (cartpole_episode, EpisodeEvidence.load),
        "report": (frozenlake_report, EvaluationReport.load),
        "policy": (POLICY, AcceptancePolicy.load),
    }
    out = {}
    for kind, (record, load) in records.items():
        path = folder / f"{kind}.json"
        record.save_json(path)
        load(path)  # untouched, it loads
        out[kind] = (orjson.loads(path.read_bytes()), load)
    return out


@pytest.mark.parametrize("kind", ["frozenlake-episode", "cartpole-episode", "report", "policy"])
@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_single_changed_value_or_key_makes_loading_fail(
    kind: str,
    saved: dict[str, tuple[dict[str, Any], Callable[[Path], Any]]],
    tmp_path: Path,
    data: st.DataObject,
) -> None:
    original, load = saved[kind]
    paths = _paths(original)
    path = data.draw(st.sampled_from(paths), label="path")
    rename = data.draw(st.booleans(), label="rename the key instead")
    tampered = _tampered(original, path, rename)
    assert tampered != original
    target = tmp_path / f"{kind}.json"
    # Canonical bytes, so only the digest and the consistency checks can notice. The
    # digest is verified before any field, so every change but one to the schema or the
    # digest field itself is reported as a digest mismatch.
    target.write_bytes(orjson.dumps(tampered, option=orjson.OPT_SORT_KEYS) + b"\n")
    expected = OnrecordError if path[0] in ("schema", "digest") else DigestMismatch
    with pytest.raises(expected):
        load(target)
