"""Evidence verifies its own digest, in every format onrecord saves: one changed byte
(any position, any new value) or one changed JSON value (written back canonically, so
only the digest can tell) in any file of a real record — a run directory, a regrade, a
comparison, a saved decision, a tool-world episode, forecasts, closed-loop records, a
world-model output directory, an evidence file's blobs — makes verification fail with
an OnrecordError naming the changed file (`onrecord verify` exit 3, no traceback).

``errors.jsonl`` is the exception: it lists episodes that could not be recorded, has no
digest, and no verified claim depends on it (resume re-runs every episode missing from
``episodes.jsonl``), so a changed byte there leaves `verify` saying what it said."""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from onrecord.cli._records import load_any
from onrecord.dynamics import ForecastEvidence, load_forecasts, load_runs
from onrecord.envkit import ToolEpisode
from onrecord.episode import EpisodeEvidence
from onrecord.errors import OnrecordError
from onrecord.policy import AcceptancePolicy
from onrecord.report import EvaluationReport
from onrecord.runner import RunStore, plan_run, start_run
from tests.cli_process import onrecord

# Format → (what is verified, the file changed in it), relative to the copied records.
FORMATS: dict[str, tuple[str, str]] = {
    "episode": ("episode.json", "episode.json"),
    "episode with blobs": ("big.json", "big.json"),
    "blob, by its folder": ("big.json.blobs", "big.json.blobs/*"),
    "blob": ("big.json.blobs/*", "big.json.blobs/*"),
    "report": ("report.json", "report.json"),
    "policy": ("policy.json", "policy.json"),
    "gate decision": ("gate.json", "gate.json"),
    "comparison": ("comparison.json", "comparison.json"),
    "forecast": ("forecast.json", "forecast.json"),
    "forecast lines": ("forecasts.jsonl", "forecasts.jsonl"),
    "closed-loop runs": ("alone/runs.jsonl", "alone/runs.jsonl"),
    "closed-loop run": ("alone/one.json", "alone/one.json"),
    "wm manifest": ("wm", "wm/manifest.json"),
    "wm closed loop": ("wm", "wm/closed_loop/persistence_v1.jsonl"),
    "wm episodes": ("wm", "wm/data/closed_loop/persistence_v1.episodes.jsonl"),
    "wm protocol": ("wm", "wm/protocol.json"),
    "wm tables": ("wm", "wm/tables.json"),
    "wm model": ("wm", "wm/models/persistence_v1.json"),
    "wm plot": ("wm", "wm/plots/plot.png"),
    "run.json": ("run", "run/run.json"),
    "run episodes.jsonl": ("run", "run/episodes.jsonl"),
    "run report.json": ("run", "run/report.json"),
    "run decision.json": ("run", "run/decision.json"),
    "run side file": ("big-run", "big-run/files/*"),
    "tool run actions.jsonl": ("tool-run", "tool-run/actions.jsonl"),
    "tool run episodes.jsonl": ("tool-run", "tool-run/episodes.jsonl"),
    "regrade changes.json": ("run/regrades/again", "run/regrades/again/changes.json"),
    "regrade report.json": ("run/regrades/again", "run/regrades/again/report.json"),
    "regrade decision.json": ("run/regrades/again", "run/regrades/again/decision.json"),
    "remittance decision": ("suite/remittance/careful.decision.json",) * 2,
    "remittance summary": ("suite/remittance/summary.json",) * 2,
    **{
        f"tool-world {name}": ("tool/careful/full-01/r0", f"tool/careful/full-01/r0/{name}")
        for name in ("manifest.json", "actions.jsonl", "audit.json", "diff.json", "task.json")
    },
    "tool-world final.sqlite": ("tool/careful/full-01/r0", "tool/careful/full-01/r0/final.sqlite"),
}
# Files that are JSON (or JSON Lines) in canonical form: a value changed in them is
# written back canonically. The rest (blobs, side files, SQLite, PNG) get bytes only.
BYTES_ONLY = {"blob", "blob, by its folder", "run side file", "wm plot", "tool-world final.sqlite"}
JSON_FORMATS = sorted(set(FORMATS) - BYTES_ONLY)
EXAMPLES = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.differing_executors]
)


@pytest.fixture(scope="module")
def records(written: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of every kind of record (the session's, and a tool-world run with an action
    log, and a run with errors.jsonl), each verified as written."""
    root = tmp_path_factory.mktemp("tamper") / "records"
    shutil.copytree(written["report"].parent, root, symlinks=True)
    start_run(
        root / "tool-run",
        plan_run(
            "remittance",
            "double_poster",
            tasks=["duplicate-01", "full-01"],
            environment_config={"size": 12, "kinds": ["duplicate", "full_payment"]},
        ),
    )
    start_run(root / "failed-run", plan_run("tests.runner.helpers:unportable", "noop"))
    for path, _ in FORMATS.values():
        load_any(_one(root, path))
    return root


def _one(root: Path, relative: str) -> Path:
    """``root / relative``, a trailing ``*`` standing for the folder's only... first file."""
    if relative.endswith("/*"):
        return sorted((root / relative[:-2]).iterdir())[0]
    return root / relative


@pytest.fixture(autouse=True, scope="module")
def _check_it_was_canonical(records: Path) -> None:
    """Every JSON file changed below is canonical JSON (or lines of it) as written, so
    a value written back canonically changes only that value."""
    for name in JSON_FORMATS:
        raw = _one(records, FORMATS[name][1]).read_bytes()
        for line in raw.splitlines():
            assert orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS) == line, name


class _Changed:
    """Write ``new`` over ``path`` for the block, then put the original bytes back."""

    def __init__(self, path: Path, new: bytes) -> None:
        self.path, self.new = path, new

    def __enter__(self) -> None:
        self.old, self.mode = self.path.read_bytes(), self.path.stat().st_mode
        os.chmod(self.path, self.mode | stat.S_IWUSR)  # blobs are saved read-only
        self.path.write_bytes(self.new)

    def __exit__(self, *exc: object) -> None:
        self.path.write_bytes(self.old)
        os.chmod(self.path, stat.S_IMODE(self.mode))


def _refused(given: Path, target: Path) -> OnrecordError:
    """Verify ``given``: it must fail with an OnrecordError naming ``target``."""
    with pytest.raises(OnrecordError) as caught:
        load_any(given)
    assert target.name in str(caught.value), (target, str(caught.value))
    return caught.value


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """The path of every scalar in a JSON value."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _leaves(item, (*path, index))
    else:
        yield path


def _replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replaced(value[path[0]], path[1:], new)
    return copy


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        value = value[key]
    return value


SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
)


@pytest.mark.parametrize("name", sorted(FORMATS))
@EXAMPLES
@given(data=st.data())
def test_one_changed_byte_is_refused(records: Path, name: str, data: st.DataObject) -> None:
    given_, target = (_one(records, part) for part in FORMATS[name])
    raw = target.read_bytes()
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    flip = data.draw(st.integers(1, 255), label="xor")
    new = raw[:position] + bytes([raw[position] ^ flip]) + raw[position + 1 :]
    with _Changed(target, new):
        _refused(given_, target)


@pytest.mark.parametrize("name", JSON_FORMATS)
@EXAMPLES
@given(data=st.data())
def test_one_changed_value_is_refused(records: Path, name: str, data: st.DataObject) -> None:
    given_, target = (_one(records, part) for part in FORMATS[name])
    lines = target.read_bytes().splitlines(keepends=True)
    number = data.draw(st.integers(0, len(lines) - 1), label="line")
    record = orjson.loads(lines[number])
    leaves = list(_leaves(record))
    where = leaves[data.draw(st.integers(0, len(leaves) - 1), label="leaf")]
    new = data.draw(SCALARS, label="new value")
    old_bytes = orjson.dumps(_at(record, where))
    assume(orjson.dumps(new) != old_bytes)
    changed = orjson.dumps(_replaced(record, where, new), option=orjson.OPT_SORT_KEYS)
    lines[number] = changed + lines[number][len(lines[number].rstrip(b"\n")) :]
    with _Changed(target, b"".join(lines)):
        _refused(given_, target)


@pytest.mark.parametrize("name", sorted(FORMATS))
def test_the_command_refuses_it_naming_the_file(records: Path, name: str) -> None:
    """The real command, given the changed file itself (or, for a directory's file, the
    directory): exit 3, the file named, no traceback."""
    given_, target = (_one(records, part) for part in FORMATS[name])
    raw = target.read_bytes()
    middle = len(raw) // 2
    with _Changed(target, raw[:middle] + bytes([raw[middle] ^ 0x20]) + raw[middle + 1 :]):
        for path in dict.fromkeys([given_, target]):
            done = onrecord("verify", path)
            assert done.returncode == 3, (path, done.stdout, done.stderr)
            assert target.name in done.stderr, done.stderr
            assert "Traceback" not in done.stderr, done.stderr


@EXAMPLES
@given(data=st.data())
def test_errors_jsonl_has_no_digest_and_changes_no_verdict(
    records: Path, data: st.DataObject
) -> None:
    run = records / "failed-run"
    target = run / "errors.jsonl"
    raw = target.read_bytes()
    assert raw.count(b"\n") == 1  # the episode that could not be recorded
    before = load_any(run)
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    flip = data.draw(st.integers(1, 255), label="xor")
    with _Changed(target, raw[:position] + bytes([raw[position] ^ flip]) + raw[position + 1 :]):
        after = load_any(run)
    assert (after.kind, after.digest, after.summary) == (before.kind, before.digest, before.summary)


@pytest.mark.parametrize("name", sorted(FORMATS))
@EXAMPLES
@given(data=st.data())
def test_one_added_or_removed_byte_is_refused(
    records: Path, name: str, data: st.DataObject
) -> None:
    """Canonical bytes are required: a byte added (a space, a newline at the end) or
    removed anywhere is refused, even where the JSON it leaves means the same."""
    given_, target = (_one(records, part) for part in FORMATS[name])
    raw = target.read_bytes()
    position = data.draw(st.integers(0, len(raw)), label="position")
    if data.draw(st.booleans(), label="remove") and position < len(raw):
        new = raw[:position] + raw[position + 1 :]
    else:
        added = data.draw(
            st.sampled_from([b" ", b"\n", b"\t", b"\r"]) | st.binary(min_size=1, max_size=1)
        )
        new = raw[:position] + added + raw[position:]
    assume(new.rstrip(b"\n") != raw.rstrip(b"\n"))  # newlines at the end: see below
    with _Changed(target, new):
        _refused(given_, target)


# A record file is its canonical JSON and one newline; `load_record_bytes` refuses a
# second newline, but reads a file whose final newline was removed (as it reads a line
# of a log): the values are all there. Files also pinned by a sha256 (an experiment
# manifest, a tool-world manifest, an action-log block) or read as a run's log refuse
# that too. Standalone JSON Lines files skip blank lines, so one added at the end reads.
NEWLINE_NOT_CHECKED = {
    "closed-loop run",
    "closed-loop runs",
    "comparison",
    "episode",
    "episode with blobs",
    "forecast",
    "forecast lines",
    "gate decision",
    "policy",
    "regrade changes.json",
    "regrade decision.json",
    "regrade report.json",
    "remittance decision",
    "remittance summary",
    "report",
    "run decision.json",
    "run report.json",
    "run.json",
    "wm manifest",
}
BLANK_LINES_SKIPPED = {"closed-loop runs", "forecast lines"}
# A run's log whose last line lost its newline holds a torn line, as a killed writer
# leaves one: the record is not committed, and the report grading it is refused.
TORN = {"run episodes.jsonl", "tool run episodes.jsonl"}


def _newline_cases() -> Iterator[Any]:
    for name in JSON_FORMATS:
        for end, label in ((b"", "newline removed"), (b"\n\n", "newline added")):
            yield pytest.param(name, end, id=f"{name}-{label}")


@pytest.mark.parametrize(("name", "end"), list(_newline_cases()))
def test_a_newline_removed_or_added_at_the_end_is_refused_or_reads_the_same(
    records: Path, name: str, end: bytes
) -> None:
    """A record file is its canonical JSON and one newline: another newline is refused.
    Without its final newline a record file reads the same values (as a line of a log
    does), and a standalone JSON Lines file skips a blank line added at its end."""
    given_, target = (_one(records, part) for part in FORMATS[name])
    raw = target.read_bytes()
    assert raw.endswith(b"}\n")
    before = _what_verified(load_any(given_))
    with _Changed(target, raw[:-1] + end):
        if name in TORN and not end:
            with pytest.raises(OnrecordError, match=r"report\.json grades episode"):
                load_any(given_)
        elif (name in NEWLINE_NOT_CHECKED and not end) or (name in BLANK_LINES_SKIPPED and end):
            assert _what_verified(load_any(given_)) == before
        else:
            _refused(given_, target)


def _what_verified(loaded: Any) -> Any:
    """What ``verify`` reports of a loaded record: a bundle's kind, digest and summary, or
    a record's digest (its own, over its content)."""
    if hasattr(loaded, "summary") and hasattr(loaded, "kind"):
        return (loaded.kind, loaded.digest, loaded.summary)
    return loaded.digest


def _run_records(path: Path) -> None:
    store = RunStore.open(path)
    for record in store.records():
        store.check_saved(record)


# The public loaders, given the same changes: format → (loader, what it is given).
LOADERS: dict[str, tuple[Callable[[Path], Any], str]] = {
    "episode": (EpisodeEvidence.load, "episode.json"),
    "report": (EvaluationReport.load, "report.json"),
    "policy": (AcceptancePolicy.load, "policy.json"),
    "forecast": (ForecastEvidence.load, "forecast.json"),
    "forecast lines": (load_forecasts, "forecasts.jsonl"),
    "closed-loop runs": (partial(load_runs, episodes={}), "alone/runs.jsonl"),
    "wm closed loop": (load_runs, "wm/closed_loop/persistence_v1.jsonl"),
    "tool-world audit.json": (ToolEpisode.load, "tool/careful/full-01/r0"),
    "tool-world final.sqlite": (ToolEpisode.load, "tool/careful/full-01/r0"),
    "run.json": (_run_records, "run"),
    "run episodes.jsonl": (_run_records, "run"),
    "run side file": (_run_records, "big-run"),
    "tool run actions.jsonl": (_run_records, "tool-run"),
}


@pytest.mark.parametrize("name", sorted(LOADERS))
@settings(max_examples=10, deadline=None)
@given(data=st.data())
def test_the_library_loader_refuses_a_changed_byte(
    records: Path, name: str, data: st.DataObject
) -> None:
    load, given_ = LOADERS[name]
    target = _one(records, FORMATS[name][1])
    raw = target.read_bytes()
    position = data.draw(st.integers(0, len(raw) - 1), label="position")
    flip = data.draw(st.integers(1, 255), label="xor")
    new = raw[:position] + bytes([raw[position] ^ flip]) + raw[position + 1 :]
    with _Changed(target, new), pytest.raises(OnrecordError, match=re.escape(target.name)):
        load(records / given_)


@pytest.mark.parametrize("run", ["run", "tool-run"])
def test_a_changed_last_newline_of_a_run_log_is_refused_naming_it(records: Path, run: str) -> None:
    """The last record's newline changed to a space: before, the record was taken for a
    torn line a killed writer left — `RunStore.records()` dropped it without a word, and
    `verify` blamed report.json ("copied from another run or edited")."""
    target = records / run / "episodes.jsonl"
    raw = target.read_bytes()
    with _Changed(target, raw[:-1] + b" "):
        with pytest.raises(OnrecordError, match=r"episodes\.jsonl: line \d+ ends in b' '"):
            list(RunStore.open(records / run).records())
        done = onrecord("verify", records / run)
    assert done.returncode == 3, done.stdout
    assert "episodes.jsonl: line" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
