"""Round 40: "evidence verifies its own digest", for the records the earlier tamper tests
(tests/records/test_tamper_all_formats14.py) reach only with a stale digest.

* A run's episode record re-sealed (its own digest recomputed) after one value of its
  evidence, action-log claim or fingerprint changed: the record's digest is only its own
  hash, so before, `verify` accepted it while report.json still vouched for the old
  evidence. Now the evidence must verify its own digest, the trial must grade it, the
  action-log block must hold what the record claims, and the fingerprint must be its.
* Whole lines of episodes.jsonl: truncated, duplicated, swapped, or moved in from
  another run of the same protocol.
* A forecast whose reference has an unobserved state (``reference.unobserved``), saved
  alone and as JSON Lines: one changed byte or value is refused; re-sealed, it loads as
  what it now is (its new digest), not as the old record.
* A saved tool-world episode directory: one changed byte in any file is refused by the
  loader and by the real `onrecord verify DIR`.

Reformatted bytes with the same content (indentation, spaces) are refused too: every
record onrecord reads is its canonical bytes, so no second spelling of a record exists.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest
from onrecord.cli._records import load_any
from onrecord.domains.remittance import load_tasks, run_demo_suite
from onrecord.dynamics import ForecastEvidence, load_forecasts, save_forecasts
from onrecord.envkit import ToolEpisode
from onrecord.errors import OnrecordError
from onrecord.runner import plan_run, start_run
from tests.cli_process import onrecord
from tests.dynamics.test_state_gaps_round40 import forecast_of, pendulum_reference

EXAMPLES = settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.text(max_size=6))
REMITTANCE = {"size": 12, "kinds": ["duplicate", "full_payment"]}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two Gymnasium runs of one protocol, a tool-world run with an action log, a saved
    tool-world episode and forecasts with an unobserved reference state."""
    base = tmp_path_factory.mktemp("round40")
    for name in ("gym", "twin"):
        start_run(base / name, plan_run("frozenlake", "walks_into_hole", seeds=[0, 1, 2]))
    protocol = plan_run(
        "remittance", "double_poster", tasks=["duplicate-01", "full-01"],
        environment_config=REMITTANCE,
    )  # fmt: skip
    start_run(base / "tool", protocol)
    run_demo_suite(
        base / "suite", agents=["careful"], tasks=load_tasks()[:1], repeats=1,
        episodes_dir=base / "episodes",
    )  # fmt: skip
    forecast = forecast_of(pendulum_reference("drops"))
    assert forecast.unobserved  # the new field is in the record
    forecast.save_json(base / "forecast.json")
    save_forecasts(base / "forecasts.jsonl", [forecast, forecast_of(pendulum_reference(None))])
    return base


@pytest.fixture
def copy(root: Path, tmp_path: Path) -> Path:
    """A fresh copy of the records, to change freely."""
    shutil.copytree(root, tmp_path / "r")
    return tmp_path / "r"


class _Changed:
    """Write ``new`` over ``path`` for the block, then put the original bytes back."""

    def __init__(self, path: Path, new: bytes) -> None:
        self.path, self.new = path, new

    def __enter__(self) -> None:
        self.old = self.path.read_bytes()
        self.path.write_bytes(self.new)

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.old)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _set(record: Any, path: tuple[Any, ...], new: Any) -> None:
    for key in path[:-1]:
        record = record[key]
    record[path[-1]] = new


def _get(record: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        record = record[key]
    return record


def _canonical(record: dict[str, Any]) -> bytes:
    return orjson.dumps(record, option=orjson.OPT_SORT_KEYS) + b"\n"


def _refused(path: Path, *names: str) -> str:
    """Verify ``path``: an OnrecordError naming one of ``names``."""
    with pytest.raises(OnrecordError) as caught:
        load_any(path)
    assert any(name in str(caught.value) for name in names), str(caught.value)
    return str(caught.value)


# -- a run's episode record, re-sealed ------------------------------------------------
# Every value of these parts is bound to something outside the record's own digest: the
# evidence to its inner digest (which report.json names), the action-log claim to the
# block in actions.jsonl, the fingerprint to the evidence and the block.
BOUND = ("evidence", "action_log", "fingerprint")


@pytest.mark.parametrize("run", ["gym", "tool"])
@EXAMPLES
@given(data=st.data())
def test_a_resealed_episode_record_with_a_changed_value_is_refused(
    root: Path, run: str, data: st.DataObject
) -> None:
    target = root / run / "episodes.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    number = data.draw(st.integers(0, len(lines) - 1), label="line")
    record = orjson.loads(lines[number])
    leaves = [leaf for leaf in _leaves(record) if leaf[0] in BOUND]
    where = data.draw(st.sampled_from(leaves), label="leaf")
    new = data.draw(SCALARS, label="value")
    assume(orjson.dumps(new) != orjson.dumps(_get(record, where)))
    _set(record, where, new)
    record["digest"] = content_digest(record)  # re-sealed: only what it binds can tell
    lines[number] = _canonical(record)
    with _Changed(target, b"".join(lines)):
        _refused(root / run, "episodes.jsonl", "actions.jsonl")


def test_a_resealed_evidence_value_names_the_episode_and_what_disagrees(copy: Path) -> None:
    """The evidence changed and the record re-sealed: the evidence does not match its own
    digest. With the evidence re-sealed too, the trial grades other evidence. Both by the
    real command: exit 3, the file and episode named, no traceback."""
    target = copy / "gym" / "episodes.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    record["evidence"]["final_state"] = {"tile": 15}  # the goal, not the hole
    record["digest"] = content_digest(record)
    target.write_bytes(b"".join([_canonical(record), *lines[1:]]))
    done = onrecord("verify", copy / "gym")
    assert done.returncode == 3, done.stdout
    assert "episodes.jsonl: line 1: the evidence of episode frozenlake/" in done.stderr
    assert "does not match its own digest" in done.stderr
    assert "Traceback" not in done.stderr
    record["evidence"]["digest"] = content_digest(record["evidence"])
    record["digest"] = content_digest(record)
    target.write_bytes(b"".join([_canonical(record), *lines[1:]]))
    done = onrecord("verify", copy / "gym")
    assert done.returncode == 3, done.stdout
    assert "grades other evidence" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_record_claiming_action_log_bytes_nobody_wrote_is_refused(copy: Path) -> None:
    """A Gymnasium record's empty block claimed as one byte long, its sha256 left that of
    no bytes: before, the short read hashed to the claim and `verify` accepted it."""
    target = copy / "gym" / "episodes.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[-1])
    record["action_log"]["bytes"] = 1
    record["digest"] = content_digest(record)
    target.write_bytes(b"".join([*lines[:-1], _canonical(record)]))
    _refused(copy / "gym", "does not match its sha256")


@pytest.mark.parametrize(
    ("where", "new", "expected"),
    [
        (("action_log", "events"), 99, "says its action log holds 99 events"),
        (("fingerprint",), "0" * 64, "its fingerprint is not that of its evidence"),
    ],
)
def test_a_resealed_claim_about_the_action_log_or_fingerprint_is_refused(
    copy: Path, where: tuple[str, ...], new: Any, expected: str
) -> None:
    """The tool-world record's count of events and its fingerprint, re-sealed: each is
    checked against the block in actions.jsonl and the evidence."""
    target = copy / "tool" / "episodes.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    _set(record, where, new)
    record["digest"] = content_digest(record)
    target.write_bytes(b"".join([_canonical(record), *lines[1:]]))
    _refused(copy / "tool", expected)


# -- whole lines of episodes.jsonl ----------------------------------------------------
@EXAMPLES
@given(data=st.data())
def test_a_truncated_episodes_log_is_refused_or_named(root: Path, data: st.DataObject) -> None:
    """Cut anywhere: a cut inside the last line leaves a torn line (what a killed writer
    leaves), and report.json then grades an episode the run does not hold; a cut at a
    line's end drops whole records, which the report still grades."""
    target = root / "gym" / "episodes.jsonl"
    raw = target.read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1), label="cut at")
    with _Changed(target, raw[:at]):
        _refused(root / "gym", "report.json grades episode")


@pytest.mark.parametrize("change", ["duplicated", "swapped", "moved from its twin"])
def test_whole_lines_duplicated_swapped_or_moved_in_are_refused(copy: Path, change: str) -> None:
    target = copy / "gym" / "episodes.jsonl"
    lines = target.read_bytes().splitlines(keepends=True)
    twin = (copy / "twin" / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    if change == "duplicated":
        new, expected = [*lines, lines[0]], "is recorded twice"
    elif change == "swapped":  # order is free (executors append as episodes finish)
        new, expected = [lines[1], lines[0], *lines[2:]], ""
    else:  # same protocol, same episode: another run's id
        new, expected = [twin[0], *lines[1:]], "records from another run were mixed in"
    target.write_bytes(b"".join(new))
    if not expected:
        assert load_any(copy / "gym").summary.startswith("3 of 3 episodes")
        return
    done = onrecord("verify", copy / "gym")
    assert done.returncode == 3, done.stdout
    assert expected in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_reformatted_bytes_with_the_same_content_are_refused(copy: Path) -> None:
    """Canonical bytes are the only spelling of a record: the same values reformatted
    (indented) are refused, not taken for the record they mean."""
    target = copy / "gym" / "report.json"
    target.write_bytes(orjson.dumps(orjson.loads(target.read_bytes()), option=orjson.OPT_INDENT_2))
    _refused(copy / "gym", "not in canonical form")


# -- forecasts with an unobserved reference state --------------------------------------
FORECASTS = {"forecast.json": ForecastEvidence.load, "forecasts.jsonl": load_forecasts}


@pytest.mark.parametrize("name", sorted(FORECASTS))
@EXAMPLES
@given(data=st.data())
def test_a_forecast_with_an_unobserved_state_refuses_a_changed_byte(
    root: Path, name: str, data: st.DataObject
) -> None:
    target = root / name
    raw = target.read_bytes()
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    how = data.draw(st.sampled_from(["flip", "insert", "delete"]), label="how")
    if how == "flip":
        new = raw[:position] + bytes([raw[position] ^ data.draw(st.integers(1, 255))])
        new += raw[position + 1 :]
    elif how == "insert":
        new = raw[:position] + data.draw(st.binary(min_size=1, max_size=1)) + raw[position:]
    else:
        new = raw[:position] + raw[position + 1 :]
    # A blank line between JSON Lines records is skipped (as documented); the rest is not.
    assume(b"\n".join(line for line in new.split(b"\n") if line) != raw.rstrip(b"\n"))
    with _Changed(target, new), pytest.raises(OnrecordError, match=name.replace(".", r"\.")):
        FORECASTS[name](target)


@EXAMPLES
@given(data=st.data())
def test_a_changed_unobserved_reason_or_step_is_refused_stale_and_shown_resealed(
    root: Path, data: st.DataObject
) -> None:
    """A value of ``reference.unobserved`` changed: with the stale digest refused; with
    the digest recomputed, either refused (the reasons must name exactly the missing
    states) or loaded as what it now is — a record with another digest, never as the
    original."""
    target = root / "forecast.json"
    original = orjson.loads(target.read_bytes())
    leaves = list(_leaves(original["reference"]["unobserved"], ("reference", "unobserved")))
    where = data.draw(st.sampled_from(leaves), label="leaf")
    new = data.draw(SCALARS, label="value")
    assume(orjson.dumps(new) != orjson.dumps(_get(original, where)))
    record = orjson.loads(target.read_bytes())
    _set(record, where, new)
    with _Changed(target, _canonical(record)), pytest.raises(OnrecordError, match="forecast"):
        ForecastEvidence.load(target)
    record["digest"] = content_digest(record)
    with _Changed(target, _canonical(record)):
        try:
            loaded = ForecastEvidence.load(target)
        except OnrecordError:
            return
        assert loaded.digest != original["digest"]


# -- a saved tool-world episode directory ----------------------------------------------
def _episode(root: Path) -> Path:
    return next(path.parent for path in (root / "episodes").rglob("manifest.json"))


EPISODE_FILES = ["manifest.json", "actions.jsonl", "audit.json", "diff.json", "task.json",
                 "final.sqlite"]  # fmt: skip


@pytest.mark.parametrize("name", EPISODE_FILES)
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_a_tool_world_episode_refuses_a_changed_byte(
    root: Path, name: str, data: st.DataObject
) -> None:
    episode = _episode(root)
    target = episode / name
    raw = target.read_bytes()
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    if data.draw(st.booleans(), label="delete"):
        new = raw[:position] + raw[position + 1 :]
    else:
        new = raw[:position] + bytes([raw[position] ^ data.draw(st.integers(1, 255))])
        new += raw[position + 1 :]
    with _Changed(target, new), pytest.raises(OnrecordError, match=name.replace(".", r"\.")):
        ToolEpisode.load(episode)


@pytest.mark.parametrize("name", ["manifest.json", "audit.json", "final.sqlite"])
def test_onrecord_verify_refuses_a_changed_tool_world_episode(root: Path, name: str) -> None:
    episode = _episode(root)
    target = episode / name
    raw = target.read_bytes()
    middle = len(raw) // 2
    with _Changed(target, raw[:middle] + bytes([raw[middle] ^ 0x01]) + raw[middle + 1 :]):
        done = onrecord("verify", episode)
    assert done.returncode == 3, done.stdout
    assert name in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
