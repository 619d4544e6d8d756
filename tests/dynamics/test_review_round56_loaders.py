"""Review round 56: the world-model loaders check what they read, field by field.

A record edited and re-sealed (its digest, and the manifest of its directory, computed
again: a digest is no signature) used to get past the loaders and fail deep inside:

- a closed-loop line without ``episode`` (or with a dict among its predicted returns,
  a text seed, ``episode: false``, a budget without its length) was a bare KeyError from
  ``load_runs`` or a TypeError in the summary, and ``worldmodel analyze --replay``
  printed a traceback (exit 1, where the docs promise 3);
- a forecast whose embedded case lacks ``case_id`` or ``content_digest`` loaded and
  verified, and its report raised a KeyError; ``reference.ended`` as a list was a bare
  TypeError ("unhashable type");
- ``onrecord verify DIR`` of a world-model output checked only the manifest's hashes, so
  it passed directories holding files ``verify FILE`` refuses.

Now each is a ``SchemaError`` (or ``ConsistencyError``) naming the line and the field,
the commands exit 3 without a traceback, and ``verify DIR`` verifies every file it lists.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest, record_bytes
from onrecord.dynamics import (
    ExhaustivePlanner,
    ForecastEvidence,
    PersistenceModel,
    capture_forecast,
    capture_plan,
    get_simulator,
    load_runs,
    random_plan,
    run_closed_loop,
    save_runs,
)
from onrecord.dynamics._closed_loop_schema import CLOSED_LOOP_FIELDS
from onrecord.dynamics._closed_loop_stats import prediction_gap
from onrecord.dynamics.experiment._store import write_manifest
from onrecord.errors import ConsistencyError, OnrecordError, SchemaError
from tests.cli_process import onrecord
from tests.conftest import writable_copy

Edit = Callable[[dict[str, Any]], Any]


def _sealed(record: dict[str, Any]) -> dict[str, Any]:
    """What a forger does after editing a record: give it the digest of its new content."""
    body = {key: value for key, value in record.items() if key != "digest"}
    return {**body, "digest": content_digest(body)}


def _edit_line(path: Path, number: int, edit: Edit) -> None:
    """Edit line ``number`` (from 1) of the JSON Lines file ``path`` and re-seal it."""
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    edit(lines[number - 1])
    lines[number - 1] = _sealed(lines[number - 1])
    path.write_bytes(b"".join(record_bytes(line) for line in lines))


def _refused(done: Any, *said: str) -> None:
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    for text in said:
        assert text in done.stderr, (text, done.stderr)


# --- closed-loop records ------------------------------------------------------------


@pytest.fixture(scope="module")
def cartpole() -> Any:
    return get_simulator("CartPole-v1")


@pytest.fixture(scope="module")
def saved_runs(cartpole: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two real closed-loop runs (a planning horizon of 2, 12 steps) saved with their
    episodes beside them, as ``save_runs(..., episodes=True)`` writes them."""
    runs = run_closed_loop(
        cartpole, PersistenceModel(cartpole), ExhaustivePlanner(2), seeds=[0, 1], max_steps=12
    )
    path = tmp_path_factory.mktemp("runs") / "runs.jsonl"
    return save_runs(path, runs, episodes=True)


@pytest.fixture
def runs_copy(saved_runs: Path, tmp_path: Path) -> Path:
    for source in (saved_runs, saved_runs.with_name("runs.episodes.jsonl")):
        (tmp_path / source.name).write_bytes(source.read_bytes())
    return tmp_path / saved_runs.name


def _delete(name: str) -> Edit:
    return lambda record: record.pop(name)


def _set(name: str, value: Any) -> Edit:
    return lambda record: record.update({name: value})


CLOSED_LOOP_EDITS: dict[str, tuple[Edit, str]] = {
    "no episode": (_delete("episode"), "field 'episode' is missing"),
    "no seed": (_delete("seed"), "field 'seed' is missing"),
    "no predicted_returns": (_delete("predicted_returns"), "field 'predicted_returns' is missing"),
    "episode false": (_set("episode", False), "field 'episode' is true or false"),
    "episode a number": (_set("episode", 7), "field 'episode' is a whole number, not a string"),
    "seed a text": (_set("seed", "1"), "field 'seed' is a string, not a whole number"),
    "seed a fraction": (_set("seed", 1.5), "field 'seed' is a decimal number"),
    "a dict among the returns": (
        lambda record: record["predicted_returns"].__setitem__(1, {}),
        "field 'predicted_returns' holds an object at index 1, not a number",
    ),
    "budget without a length number": (
        lambda record: record["budget"].update(length="2"),
        "field 'budget.length' is '2'",
    ),
    "an unknown field": (_set("notes", "hi"), "field 'notes' is not one of them"),
    "model_error a list": (_set("model_error", []), "field 'model_error' is a list"),
}


@pytest.mark.parametrize("name", sorted(CLOSED_LOOP_EDITS))
def test_load_runs_names_the_line_and_the_field(runs_copy: Path, name: str) -> None:
    edit, said = CLOSED_LOOP_EDITS[name]
    _edit_line(runs_copy, 2, edit)
    with pytest.raises(SchemaError) as raised:
        load_runs(runs_copy)
    assert f"{runs_copy}: line 2: " in str(raised.value)
    assert said in str(raised.value)
    assert "restore the line save_runs wrote" in str(raised.value)
    _refused(onrecord("verify", runs_copy), f"{runs_copy}: line 2", said)


def test_load_runs_checks_each_run_against_its_episode_seed(runs_copy: Path) -> None:
    _edit_line(runs_copy, 2, _set("seed", 0))  # a valid seed, but not the episode's
    with pytest.raises(ConsistencyError, match=r"line 2 \(seed 0\) references an episode run "):
        load_runs(runs_copy)


def test_a_budget_without_a_length_has_no_prediction_gap(runs_copy: Path) -> None:
    """A planner of your own may record no planning horizon: the record loads (the
    budget is the planner's to describe), and the gap says what it needs."""
    _edit_line(runs_copy, 1, lambda record: record["budget"].pop("length"))
    run = load_runs(runs_copy)[0]
    with pytest.raises(OnrecordError, match="budget 'length'"):
        prediction_gap(run)


_JSON_INTS = st.integers(-(2**63), 2**64 - 1)  # what JSON records hold
_OTHER_KINDS = st.one_of(
    st.none(),
    st.booleans(),
    _JSON_INTS,
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=70),
    st.lists(st.one_of(st.none(), _JSON_INTS, st.text(max_size=3), st.just({})), max_size=4),
    st.dictionaries(st.text(max_size=8), _JSON_INTS | st.text(max_size=3), max_size=3),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    field=st.sampled_from(sorted(CLOSED_LOOP_FIELDS.keys() - {"schema", "digest"})), data=st.data()
)
def test_any_field_of_another_kind_loads_or_is_refused(
    saved_runs: Path, field: str, data: st.DataObject
) -> None:
    """Any one field of a closed-loop line replaced by a value of another kind (and the
    line re-sealed): ``load_runs`` loads it or raises an OnrecordError, and what loads
    summarizes without a Python error either."""
    original = orjson.loads(saved_runs.read_bytes().splitlines()[0])[field]
    value = data.draw(_OTHER_KINDS.filter(lambda v: type(v) is not type(original)), "value")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / saved_runs.name
        path.write_bytes(saved_runs.read_bytes())
        beside = saved_runs.with_name("runs.episodes.jsonl")
        (Path(folder) / beside.name).write_bytes(beside.read_bytes())
        _edit_line(path, 1, _set(field, value))
        try:
            runs = load_runs(path)
        except OnrecordError:
            return
        for run in runs:
            with contextlib.suppress(OnrecordError):  # a prediction gap, or why not
                prediction_gap(run)
            assert isinstance(run.failed, bool)


# --- forecasts ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def captured(cartpole: Any) -> tuple[Any, ForecastEvidence]:
    """A real reference episode and a forecast of it."""
    plan = random_plan(cartpole, 6, np.random.default_rng(0))
    reference = capture_plan(cartpole, plan, case_id="round56", seed=3)
    forecast = capture_forecast(
        reference,
        PersistenceModel(cartpole),
        model_id="persistence/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 4],
        planned_actions=plan,
    )
    return reference, forecast


@pytest.fixture
def forecast(captured: tuple[Any, ForecastEvidence]) -> ForecastEvidence:
    return captured[1]


def _case_without(key: str) -> Edit:
    return lambda data: data["episode"]["case"].pop(key)


def _case_set(key: str, value: Any) -> Edit:
    return lambda data: data["episode"]["case"].update({key: value})


FORECAST_EDITS: dict[str, tuple[Edit, str]] = {
    "case without case_id": (_case_without("case_id"), "episode.case lacks 'case_id'"),
    "case without content_digest": (
        _case_without("content_digest"),
        "episode.case lacks 'content_digest'",
    ),
    "case without source_id": (_case_without("source_id"), "episode.case lacks 'source_id'"),
    "case with input": (_case_set("input", 1), "episode.case has 'input'"),
    "empty case_id": (_case_set("case_id", " "), "EvalCase.case_id must be a non-empty string"),
    "null case_id": (_case_set("case_id", None), "episode.case.case_id is null"),
    "case_id a number": (_case_set("case_id", 5), "EvalCase.case_id must be a non-empty string"),
    "source_id a list": (_case_set("source_id", []), "EvalCase.source_id must be"),
    "content_digest not a sha256": (
        _case_set("content_digest", "abc"),
        "episode.case.content_digest is 'abc', not a sha256",
    ),
    "ended a list": (
        lambda data: data["reference"].update(ended=[[]]),
        "reference.ended is [[]], not how an episode ends",
    ),
    "ended a dict": (
        lambda data: data["reference"].update(ended={}),
        "reference.ended is {}, not how an episode ends",
    ),
    "ended a list of an ending": (
        lambda data: data["reference"].update(ended=["truncated"]),
        "reference.ended is ['truncated']",
    ),
    "ended unknown": (
        lambda data: data["reference"].update(ended="exploded"),
        "reference.ended is 'exploded'",
    ),
}


@pytest.mark.parametrize("name", sorted(FORECAST_EDITS))
def test_a_forecast_is_refused_naming_the_field(
    forecast: ForecastEvidence, tmp_path: Path, name: str
) -> None:
    edit, said = FORECAST_EDITS[name]
    data = forecast.data
    edit(data)
    data = _sealed(data)
    with pytest.raises(SchemaError, match="forecast record: ") as raised:
        ForecastEvidence.from_dict(data)
    assert said in str(raised.value)
    assert "restore the record capture_forecast wrote" in str(raised.value)
    path = tmp_path / "forecast.json"
    path.write_bytes(record_bytes(data))
    with pytest.raises(SchemaError, match=str(path)):
        ForecastEvidence.load(path)
    _refused(onrecord("verify", path), said)


@pytest.mark.parametrize(
    ("edit", "said"),
    [
        (_case_set("case_id", "another-case"), "reference's case is"),
        (_case_set("content_digest", "0" * 64), "reference's case is"),
        (lambda data: data["episode"].update(seed=99), "reference's seed is 99"),
        (
            lambda data: data["reference"].update(ended="interact_error"),
            "reference ended 'interact_error', but episode .* ended 'returned'",
        ),
    ],
)
def test_verify_reference_checks_the_case_and_ending_the_forecast_names(
    captured: tuple[Any, ForecastEvidence], edit: Edit, said: str
) -> None:
    """Well-formed but not its reference's: the forecast names another case (a report
    would pair its trial under that case), another seed, or another ending."""
    reference, forecast = captured
    forecast.verify_reference(reference)
    data = forecast.data
    edit(data)
    edited = ForecastEvidence.from_dict(_sealed(data))
    with pytest.raises(ConsistencyError, match=said):
        edited.verify_reference(reference)


# --- world-model output directories ----------------------------------------------------


@pytest.fixture
def run_copy(smoke_world_model_run: Path, tmp_path: Path) -> Path:
    """A changeable copy of the session's shared `worldmodel run --smoke`."""
    return writable_copy(smoke_world_model_run, tmp_path / "run")


def _edit_in_run(root: Path, name: str, edit: Edit, line: int = 1) -> Path:
    """Edit and re-seal one record of the run, and write its manifest again to match."""
    path = root / name
    if path.suffix == ".jsonl":
        _edit_line(path, line, edit)
    else:
        data = orjson.loads(path.read_bytes())
        edit(data)
        path.write_bytes(record_bytes(_sealed(data) if "digest" in data else data))
    write_manifest(root)
    return path


CLOSED_LOOP_FILE = "closed_loop/oracle_CartPole-v1.jsonl"
RUN_EDITS: dict[str, tuple[str, Edit, str]] = {
    "closed loop without episode": (CLOSED_LOOP_FILE, _delete("episode"), "'episode' is missing"),
    "closed loop with a dict return": (
        CLOSED_LOOP_FILE,
        lambda record: record["predicted_returns"].__setitem__(0, {}),
        "'predicted_returns' holds an object at index 0",
    ),
    "closed loop seed false": (CLOSED_LOOP_FILE, _set("seed", False), "'seed' is true or false"),
    "closed loop episode false": (
        CLOSED_LOOP_FILE,
        _set("episode", False),
        "'episode' is true or false",
    ),
    "forecast without case_id": (
        "forecasts/heldout/persistence_v1.jsonl",
        _case_without("case_id"),
        "episode.case lacks 'case_id'",
    ),
    "forecast ended a list": (
        "forecasts/development/persistence_v1.jsonl",
        lambda data: data["reference"].update(ended=["terminated"]),
        "reference.ended is ['terminated']",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RUN_EDITS))
def test_replay_and_verify_dir_refuse_a_resealed_record(run_copy: Path, name: str) -> None:
    file, edit, said = RUN_EDITS[name]
    path = _edit_in_run(run_copy, file, edit)
    _refused(onrecord("worldmodel", "analyze", "--replay", run_copy, "--no-progress"), said)
    _refused(onrecord("verify", path), said)
    _refused(onrecord("verify", run_copy), str(path), said)


def _no_length(record: dict[str, Any]) -> None:
    record["budget"].pop("length")


@pytest.mark.slow
def test_replay_of_a_budget_without_its_length_is_named_damaged(run_copy: Path) -> None:
    """Every run's budget loses its length (runs are compared only under one budget):
    the records load, and the prediction gap names what it lacks."""
    for path in sorted((run_copy / "closed_loop").glob("*.jsonl")):
        lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        for record in lines:
            _no_length(record)
        path.write_bytes(b"".join(record_bytes(_sealed(record)) for record in lines))
    write_manifest(run_copy)
    done = onrecord("worldmodel", "analyze", "--replay", run_copy, "--no-progress")
    _refused(done, "is damaged", "budget 'length'")


def _episode_steps(data: dict[str, Any]) -> None:
    data["measures"]["steps"] += 1  # disagrees with the rewards recorded


DIRECTORY_EDITS: dict[str, tuple[str, Edit]] = {
    "an episode's measures": ("data/heldout.episodes.jsonl", _episode_steps),
    "a report's schema field": (
        "reports/persistence_v1.report.json",
        lambda data: data.update(trials="none"),
    ),
    "the protocol's horizons": ("protocol.json", lambda data: data.update(horizons="1, 4")),
    "a closed-loop model_error": (CLOSED_LOOP_FILE, _set("model_error", {"step": -1})),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(DIRECTORY_EDITS))
def test_verify_dir_verifies_each_file_as_verify_file_does(run_copy: Path, name: str) -> None:
    """Before, `verify DIR` checked only that each file matched its manifest entry: with
    the manifest written again to match, every one of these passed it."""
    file, edit = DIRECTORY_EDITS[name]
    path = _edit_in_run(run_copy, file, edit)
    alone = onrecord("verify", path)
    _refused(alone, str(path))
    said = alone.stderr.split(f"{path}", 1)[1].strip()[:40]
    _refused(onrecord("verify", run_copy), str(path), said)


@pytest.mark.slow
def test_verify_reads_a_protocol_written_before_analysis_v2(
    smoke_world_model_run: Path, tmp_path: Path
) -> None:
    """A run written before analysis v2 (no ``analysis`` in its protocol) replays; `verify
    FILE` of its protocol refused it ("lacks 'analysis'"), and so would `verify DIR` now
    that it verifies every file: the protocol is checked as `analyze --replay` checks it."""
    from tests.dynamics.test_same_cohort_analysis import as_written_by_v1

    old = tmp_path / "old"
    as_written_by_v1(smoke_world_model_run, old)
    for target in (old / "protocol.json", old):
        done = onrecord("verify", target)
        assert done.returncode == 0, done.stderr
