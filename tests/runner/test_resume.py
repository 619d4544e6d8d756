"""Killed runs resume: every episode exactly once, finished ones never re-run, no corrupt
file; tampered or foreign run directories are refused and left unchanged."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.errors import DigestMismatch, InputError, SchemaError
from onrecord.runner import RunStore, plan_run, resume_run, start_run
from tests.runner._held import CHILD, held_env, wait_until_held
from tests.runner.conftest import ROOT, onrecord

REMITTANCE = [
    "remittance",
    "--agent",
    "tests.runner.helpers:slow_careful",
    "--env-config",
    "size=30",
    "--env-config",
    'kinds=["duplicate", "full_payment"]',
    "--seeds",
    "0-3",
]
LAKE = ["frozenlake", "--agent", "tests.runner.helpers:slow_walker", "--seeds", "0-39"]


def _records(path: Path) -> int:
    episodes = path / "episodes.jsonl"
    return episodes.read_bytes().count(b"\n") if episodes.exists() else 0


def _start_and_kill(args: list[str], run_dir: Path, after: int) -> bytes:
    """Start a real `onrecord run`, SIGKILL it once ``after`` episodes are recorded. The
    run holds there (``tests.runner._held``) until killed: before, the test polled the
    log and raced the run's end, with 0.55 s to spare."""
    ready = run_dir.parent / "held"
    process = subprocess.Popen(
        [sys.executable, "-c", CHILD, "run", *args, "--out", str(run_dir), "--no-progress"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **held_env(ready, f"episodes:{after}")},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    held = wait_until_held(process, ready)
    process.send_signal(signal.SIGKILL)
    process.wait()
    assert _records(run_dir) == held["lines"] == after
    assert 0 < _records(run_dir) < 32, "the run must be killed midway for this test"
    return (run_dir / "episodes.jsonl").read_bytes()


@pytest.mark.parametrize(("args", "after"), [(REMITTANCE, 3), (REMITTANCE, 17), (LAKE, 9)])
def test_kill_9_then_resume_records_each_episode_exactly_once(
    run_dir: Path, args: list[str], after: int, tmp_path: Path
) -> None:
    before = _start_and_kill(args, run_dir, after)
    committed = before[: before.rfind(b"\n") + 1]
    calls = tmp_path / "calls"
    done = onrecord("run", "--resume", str(run_dir), env={"ONRECORD_TEST_AGENT_CALLS": str(calls)})
    assert done.returncode == 0, done.stdout + done.stderr
    store = RunStore.open(run_dir)
    keys = [record.key for record in store.records()]  # verifies every digest and block
    assert len(keys) == len(set(keys)) == store.protocol.episodes
    # Finished episodes are kept byte for byte and never run again.
    assert (run_dir / "episodes.jsonl").read_bytes().startswith(committed)
    assert calls.read_text().count("call") == store.protocol.episodes - committed.count(b"\n")


def test_resume_cuts_a_torn_record_and_orphan_log_events(run_dir: Path) -> None:
    protocol = plan_run(
        "remittance",
        "careful",
        seeds=[0, 1],
        environment_config={"size": 30, "kinds": ["duplicate"]},
    )
    start_run(run_dir, protocol)
    episodes, actions = run_dir / "episodes.jsonl", run_dir / "actions.jsonl"
    lines = episodes.read_bytes().splitlines(keepends=True)
    last = RunStore.open(run_dir).committed()
    # Simulate a kill mid-commit: the last episode's log block written, its record torn,
    # and so nothing graded yet (a torn line a decision graded is refused instead).
    (run_dir / "decision.json").unlink()
    (run_dir / "report.json").unlink()
    keep = b"".join(lines[:-1])
    episodes.write_bytes(keep + lines[-1][:40])
    result = resume_run(run_dir)
    assert result.recorded_now == 1
    assert result.complete
    assert any("partial episode record" in notice for notice in result.notices)
    assert any("not committed" in notice for notice in result.notices)
    assert RunStore.open(run_dir).committed().keys() == last.keys()
    assert actions.stat().st_size == sum(
        r.data["action_log"]["bytes"] for r in RunStore.open(run_dir).records()
    )


def _snapshot(path: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(path.iterdir()) if p.is_file()}


@pytest.fixture
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("finished") / "run"
    start_run(
        path,
        plan_run(
            "remittance",
            "careful",
            seeds=[0],
            environment_config={"size": 30, "kinds": ["duplicate"]},
        ),
    )
    return path


def _tamper(path: Path, name: str, old: bytes, new: bytes) -> None:
    data = (path / name).read_bytes()
    assert old in data
    (path / name).write_bytes(data.replace(old, new, 1))


@pytest.mark.parametrize(
    ("name", "old", "new", "error", "message"),
    [
        (
            "episodes.jsonl",
            b'"repeat":0',
            b'"repeat":7',
            DigestMismatch,
            "does not match its digest",
        ),
        ("episodes.jsonl", b'"repeat":0', b'"repeat": 0', DigestMismatch, "not in canonical form"),
        (
            "actions.jsonl",
            b'"status":"ok"',
            b'"status":"ko"',
            DigestMismatch,
            "action log of duplicate-01#0",
        ),
        ("run.json", b'"seeds":[0]', b'"seeds":[1]', DigestMismatch, "protocol was edited"),
        (
            "run.json",
            b'"onrecord.run/v1"',
            b'"onrecord.run/v9"',
            SchemaError,
            "reads 'onrecord.run/v1' run directories",
        ),
    ],
)
def test_tampered_runs_are_refused_and_left_unchanged(
    finished: Path, name: str, old: bytes, new: bytes, error: type[Exception], message: str
) -> None:
    _tamper(finished, name, old, new)
    before = _snapshot(finished)
    with pytest.raises(error, match=message):
        resume_run(finished)
    assert _snapshot(finished) == before
    done = onrecord("run", "--resume", str(finished))
    assert done.returncode == 3
    assert message.split()[0] in done.stderr
    assert _snapshot(finished) == before


def test_resume_refuses_changed_settings_and_another_library_version(finished: Path) -> None:
    other = plan_run(
        "remittance",
        "careful",
        seeds=[0, 1],
        environment_config={"size": 30, "kinds": ["duplicate"]},
    )
    with pytest.raises(
        InputError, match="seeds: the run has \\[0\\], the new settings say \\[0, 1\\]"
    ):
        resume_run(finished, expect=other)
    done = onrecord("run", "remittance", "--agent", "careful", "--out", str(finished))
    assert done.returncode == 3
    assert "already exists and is not empty" in done.stderr
    manifest = orjson.loads((finished / "run.json").read_bytes())
    manifest["library"]["version"] = "0.0.1"
    manifest["digest"] = content_digest(manifest)
    (finished / "run.json").write_bytes(record_bytes(manifest))
    with pytest.raises(InputError, match=r"was started by onrecord 0\.0\.1; this is"):
        resume_run(finished)


def test_a_second_writer_is_refused(finished: Path) -> None:
    from onrecord.runner._store import RunWriter

    with (
        RunWriter(RunStore.open(finished)),
        pytest.raises(InputError, match="another onrecord process"),
    ):
        resume_run(finished)
