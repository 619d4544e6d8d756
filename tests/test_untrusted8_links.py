"""A received record is hostile input, its directory included: a FIFO, a device or a
symbolic link where onrecord writes a regular file must be refused (exit 3, naming the
file) by every command that reads it, never waited on, followed outside the record or
written through."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import content_digest, record_bytes
from onrecord.domains.remittance import load_tasks, run_demo_suite
from onrecord.episode import EpisodeEvidence
from onrecord.errors import ConsistencyError
from onrecord.integrations.gymnasium import capture_episode
from onrecord.runner import plan_run, start_run
from tests.cli_process import onrecord
from tests.records.conftest import _Big, _three_steps

HANG = 60  # seconds: only to turn a hang into a failure, never a timing assertion


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An episode with blobs, a Gymnasium run with side files, a plain run and a saved
    tool-world episode, written once by the real API."""
    root = tmp_path_factory.mktemp("untrusted8")
    capture_episode(
        _Big,
        _three_steps,
        case=EvalCase("large observations", case_id="big"),
        environment_id="big/v1",
        observer_id="steps/v1",
        observe=lambda: {"steps": 1},
        seed=0,
        max_steps=5,
    ).save_json(root / "big.json")
    start_run(root / "run", plan_run("frozenlake", "walks_into_hole", seeds=[0, 1]))
    start_run(root / "bigrun", plan_run("tests.records.conftest:_Big", "random", seeds=[0]))
    run_demo_suite(
        root / "suite",
        agents=["careful"],
        tasks=load_tasks()[:1],
        repeats=1,
        episodes_dir=root / "tool",
    )
    return root


@pytest.fixture
def copy(base: Path, tmp_path: Path) -> Path:
    shutil.copytree(base, tmp_path / "copy", symlinks=True)
    return tmp_path / "copy"


def _blob(folder: Path) -> Path:
    return sorted(folder.iterdir())[0]


def _refused(done: Any, name: str) -> None:
    assert done.returncode == 3, (done.stdout, done.stderr)
    assert name in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def _fifo(path: Path) -> None:
    path.unlink(missing_ok=True)
    os.mkfifo(path)


def _link(path: Path, target: Path | str) -> None:
    path.unlink(missing_ok=True)
    path.symlink_to(target)


@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_fifo_named_on_the_command_line_is_refused_not_waited_on(
    copy: Path, command: str
) -> None:
    _fifo(copy / "record.json")
    done = onrecord(command, copy / "record.json", timeout=HANG)
    _refused(done, "record.json")
    assert "FIFO" in done.stderr


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero", "outside copy"])
@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_blob_that_is_a_fifo_or_a_link_is_refused(copy: Path, kind: str, command: str) -> None:
    blob = _blob(copy / "big.json.blobs")
    if kind == "fifo":
        _fifo(blob)
    elif kind == "/dev/zero":  # was read until memory ran out
        _link(blob, "/dev/zero")
    else:  # the right bytes, but outside the record: never followed
        outside = copy.parent / "outside.bin"
        shutil.copyfile(blob, outside)
        _link(blob, outside)
    done = onrecord(command, copy / "big.json", timeout=HANG)
    _refused(done, blob.name)


def test_a_blob_far_larger_than_its_reference_says_is_refused_unread(copy: Path) -> None:
    blob = _blob(copy / "big.json.blobs")
    os.truncate(blob, 3 << 30)  # sparse: 3 GiB announced as 1,600 bytes
    done = onrecord("verify", copy / "big.json", timeout=HANG)
    _refused(done, blob.name)
    assert f"holds {3 << 30} bytes" in done.stderr


@pytest.mark.parametrize(
    ("run", "name", "kind"),
    [
        ("run", "episodes.jsonl", "fifo"),
        ("run", "episodes.jsonl", "/dev/zero"),
        ("run", "actions.jsonl", "fifo"),
        ("run", "decision.json", "fifo"),
        ("bigrun", "files/*", "fifo"),
        ("bigrun", "files/*", "/dev/zero"),
    ],
)
@pytest.mark.parametrize("command", ["verify", "show", "report", "compare", "regrade"])
def test_a_run_file_that_is_a_fifo_or_a_link_is_refused(
    copy: Path, run: str, name: str, kind: str, command: str
) -> None:
    target = _blob(copy / run / "files") if name == "files/*" else copy / run / name
    if kind == "fifo":
        _fifo(target)
    else:
        _link(target, kind)
    args: list[Any] = [command, copy / run]
    if command == "report":
        args += ["-o", copy / "page.html"]
    elif command == "compare":
        args.append(copy / run)
    done = onrecord(*args, timeout=HANG)
    _refused(done, target.name)
    assert not (copy / run / "regrades").exists()  # nothing was written


def test_regrade_never_writes_through_a_linked_regrades_folder(copy: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (copy / "run" / "regrades").symlink_to(outside)
    done = onrecord("regrade", copy / "run", "--name", "x", timeout=HANG)
    _refused(done, "regrades")
    assert list(outside.iterdir()) == []


def test_resume_never_cuts_a_file_outside_the_run(copy: Path, tmp_path: Path) -> None:
    precious = tmp_path / "notes.txt"
    precious.write_bytes(b"line one\nan unfinished line")  # what resume cuts off a log
    _link(copy / "run" / "errors.jsonl", precious)
    done = onrecord("run", "--resume", copy / "run", timeout=HANG)
    _refused(done, "errors.jsonl")
    assert precious.read_bytes() == b"line one\nan unfinished line"


@pytest.mark.parametrize("name", ["final.sqlite", "audit.json", "actions.jsonl"])
def test_a_tool_world_file_linked_outside_the_episode_is_refused(copy: Path, name: str) -> None:
    episode = copy / "tool" / "careful" / "full-01" / "r0"
    outside = copy.parent / f"outside-{name}"
    shutil.move(episode / name, outside)  # the very bytes the manifest pins
    (episode / name).symlink_to(outside)
    for command in ("verify", "show"):
        _refused(onrecord(command, episode, timeout=HANG), name)


def test_a_tool_world_file_that_is_a_fifo_is_refused(copy: Path) -> None:
    episode = copy / "tool" / "careful" / "full-01" / "r0"
    _fifo(episode / "final.sqlite")
    _refused(onrecord("verify", episode, timeout=HANG), "final.sqlite")


def test_the_path_named_may_be_a_link(copy: Path) -> None:
    """Only links inside a record are refused: the path a user names is theirs."""
    (copy / "alias.json").symlink_to(copy / "big.json")
    (copy / "alias-run").symlink_to(copy / "run", target_is_directory=True)
    for path in (copy / "alias.json", copy / "alias-run"):
        done = onrecord("verify", path, timeout=HANG)
        assert done.returncode == 0, done.stderr


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_any_changed_byte_of_a_blob_is_refused(base: Path, tmp_path: Path, data: Any) -> None:
    folder = Path(tempfile.mkdtemp(dir=tmp_path))  # a fresh copy for every example
    shutil.copytree(base / "big.json.blobs", folder / "big.json.blobs")
    shutil.copyfile(base / "big.json", folder / "big.json")
    blob = _blob(folder / "big.json.blobs")
    raw = bytearray(blob.read_bytes())
    where = data.draw(st.integers(0, len(raw) - 1))
    raw[where] ^= data.draw(st.integers(1, 255))
    blob.write_bytes(bytes(raw))
    # The size is unchanged, so only the sha256 check can refuse it.
    with pytest.raises(ConsistencyError, match=f"{blob.name} does not match its sha256"):
        EpisodeEvidence.load(folder / "big.json")


def test_only_regrade_imports_the_code_a_received_run_names(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify, show, report, compare and gate read a run without importing its
    environment or checks; regrade re-imports them (documented in runs.md and cli.md).
    The run is a real one of an environment module that marks every import of it (a
    forged run.json naming the module is refused outright since run.json is checked
    against the records)."""
    modules, marker = tmp_path / "modules", tmp_path / "imported"
    modules.mkdir()
    (modules / "untrusted8_payload.py").write_text(
        f"open({str(marker)!r}, 'a').write('imported\\n')\n"
        "from onrecord.runner._examples import frozenlake\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(modules))
    run = tmp_path / "received"
    made = onrecord(
        *("run", "untrusted8_payload:frozenlake", "-a", "walks_into_hole", "-s", "0-1"),
        *("--executor", "inprocess", "--no-progress", "-o", run),
        timeout=HANG,
    )
    assert made.returncode == 1, made.stderr  # walks into a hole: rejected
    assert marker.exists()  # recording it imported the module, of course
    marker.unlink()
    episode = orjson.loads((run / "episodes.jsonl").read_bytes().splitlines()[0])
    for args in (
        ["verify", run],
        ["show", run],
        ["show", run, "--episode", f"{episode['case_id']}#{episode['repeat']}"],
        ["report", run, "-o", copy / "page.html"],
        ["compare", run, run],
        ["gate", run, "--policy", copy / "suite" / "remittance" / "policy.json"],
    ):
        done = onrecord(*args, timeout=HANG)
        assert done.returncode in (0, 1, 2), (args, done.stderr)
        assert not marker.exists(), args
    done = onrecord("regrade", run, "--name", "again", timeout=HANG)
    assert done.returncode in (0, 1, 2), done.stderr
    assert marker.exists()  # the documented exception: regrade runs the run's checks


@pytest.mark.parametrize(
    ("run", "name", "added"),
    [
        ("run", "episodes.jsonl", b"x"),  # a "partial line"
        ("run", "episodes.jsonl", b'{"schema":"onrecord.run.episode/v1"'),
        ("run", "actions.jsonl", b"\n"),  # action-log bytes no record accounts for
        ("bigrun", "actions.jsonl", b'{"tool":"x"}\n'),
    ],
)
@pytest.mark.parametrize("command", ["verify", "show"])
def test_bytes_added_after_the_last_record_of_a_complete_run_are_refused(
    copy: Path, run: str, name: str, added: bytes, command: str
) -> None:
    """What a killed writer leaves after the last record is tolerated while episodes
    remain to be recorded; in a complete run no writer can have left it."""
    with (copy / run / name).open("ab") as handle:
        handle.write(added)
    done = onrecord(command, copy / run, timeout=HANG)
    _refused(done, name)
    assert "records every planned episode" in done.stderr


def test_an_interrupted_runs_tail_is_named_not_refused(copy: Path) -> None:
    run = copy / "run"
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (run / "episodes.jsonl").write_bytes(lines[0] + lines[1][:40])  # killed mid-write
    for name in ("report.json", "decision.json"):  # a kill -9 leaves none
        (run / name).unlink()
    done = onrecord("verify", run, timeout=HANG)
    assert done.returncode == 0, done.stderr
    assert "1 of 2 episodes" in done.stdout
    assert "partial line (40 B) at the end of episodes.jsonl" in done.stdout


def test_a_blobs_folder_that_is_a_link_is_refused(copy: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    shutil.move(copy / "big.json.blobs", outside)  # the right blobs, outside the record
    (copy / "big.json.blobs").symlink_to(outside, target_is_directory=True)
    _refused(onrecord("verify", copy / "big.json", timeout=HANG), "big.json.blobs")


def _forge_record(run: Path, edit: Any) -> None:
    """Edit the first record of a run's episodes.jsonl and re-seal it (its digest)."""
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    edit(record)
    del record["digest"]
    record["digest"] = content_digest(record)
    lines[0] = record_bytes(record)
    (run / "episodes.jsonl").write_bytes(b"".join(lines))


@pytest.mark.parametrize("named", ["../../outside.bin", "/dev/zero", "ab" * 31])
@pytest.mark.parametrize("command", ["verify", "show", "report"])
def test_a_side_file_named_by_anything_but_its_sha256_is_never_read(
    copy: Path, named: str, command: str
) -> None:
    """A forged record naming ``files/../../outside.bin`` made verify read a file
    outside the run directory."""

    def edit(record: dict[str, Any]) -> None:
        record["files"][next(iter(record["files"]))] = named

    (copy / "outside.bin").write_bytes(b"outside the run")
    _forge_record(copy / "bigrun", edit)
    args: list[Any] = [command, copy / "bigrun"]
    if command == "report":
        args += ["-o", copy / "page.html"]
    done = onrecord(*args, timeout=HANG)
    _refused(done, "episodes.jsonl")
    assert "not a sha256 (64 hex digits)" in done.stderr


def test_a_negative_action_log_length_is_refused(copy: Path) -> None:
    def edit(record: dict[str, Any]) -> None:
        record["action_log"]["bytes"] = -1  # handle.read(-1) read the whole log

    _forge_record(copy / "run", edit)
    done = onrecord("verify", copy / "run", timeout=HANG)
    _refused(done, "actions.jsonl")
    assert "not a count of bytes" in done.stderr
