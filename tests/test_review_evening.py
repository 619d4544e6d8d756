"""Review of the evening's commits: regressions they introduced, each pinned by a test.

* ``AcceptancePolicy.evaluate`` searched every trial's results once per requirement and
  matched check, and counted them through a Counter: slower than before the policy change.
* ``state_bytes`` compared the read-back bytes with the value even when an array sat beside
  a null or a string: a conversion of every element (five times slower per step for a
  null beside an image than before).
* A refused ``RunStore.create`` unlocked the directory before removing its lock file, so
  another process could lock the file about to vanish while a third locked a new one.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from onrecord import CheckRequirement, _canonical
from onrecord._canonical import state_bytes
from onrecord._policy_rules import judge
from onrecord.errors import InputError, PortabilityError
from onrecord.report import CheckResult, EvaluationReport, Trial
from onrecord.runner import RunStore, _lock, _store, plan_run
from onrecord.runner._lock import LOCK_NAME, lock_directory, unlock

# --------------------------------------------------------------------------- evaluate


def _report(trials: int, checks: int) -> EvaluationReport:
    statuses = ["pass"] * 18 + ["fail", "not_measured"]
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": f"c{i}", "content_digest": f"{i:064x}"},
            0,
            {"kind": "test"},
            tuple(
                CheckResult(f"check/{k}", "v1", statuses[(i * 7 + k) % 20], "r")  # type: ignore[arg-type]
                for k in range(checks)
                if (i + k) % 97  # a few results missing
            ),
        )
        for i in range(trials)
    )


def _before(requirement: CheckRequirement, report: EvaluationReport) -> tuple[int, ...]:
    """The per-requirement counting loop as it was before min_cases existed."""
    matched = [name for name in report.check_names if name == requirement.check]
    passed = failed = unmeasured = 0
    for trial in report.trials:
        for name in matched:
            result = trial.result(name)
            status = result.status if result is not None else "missing"
            passed += status == "pass"
            failed += status == "fail"
            unmeasured += status not in ("pass", "fail")
    return passed, failed, unmeasured


def test_evaluate_counts_as_before_with_or_without_the_table() -> None:
    from onrecord._policy_rules import StatusTable

    report = _report(500, 4)
    table = StatusTable(report)
    for name in (*report.check_names, "check/*", "absent"):
        requirement = CheckRequirement(name, min_pass_rate=0.9, min_cases=3, min_coverage=0.5)
        assert judge(requirement, report) == judge(requirement, report, table)
        if name in report.check_names:
            got = judge(requirement, report)
            assert (got.passed, got.failed, got.unmeasured) == _before(requirement, report)


# --------------------------------------------------------------------------- state_bytes

IMAGE = np.zeros((84, 84, 3), dtype=np.uint8)


@pytest.mark.parametrize(
    "value", [{"note": None, "frame": IMAGE}, {"mode": "idle", "frame": IMAGE}]
)
def test_an_array_beside_a_null_or_string_is_not_compared_element_by_element(
    value: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[object] = []
    real = _canonical._reads_back_equal
    monkeypatch.setattr(
        _canonical, "_reads_back_equal", lambda raw, v: calls.append(v) or real(raw, v)
    )
    raw = state_bytes(value)
    assert calls == []
    assert raw.startswith(b'{"frame":[[[0,0,0]')


def test_state_bytes_still_refuses_and_accepts_what_it_did() -> None:
    with pytest.raises(PortabilityError, match=r"\$\.x"):
        state_bytes({"note": None, "x": np.array([1.0, np.nan])})
    with pytest.raises(PortabilityError, match=r"\$\.when"):
        state_bytes({"when": np.datetime64("2020-01-01"), "frame": IMAGE})
    with pytest.raises(PortabilityError, match=r"\$\.s"):
        state_bytes({"s": np.array(["ab", "cd"]), "n": None})
    assert (
        state_bytes({"mode": np.str_("idle"), "x": np.arange(3)}) == b'{"mode":"idle","x":[0,1,2]}'
    )
    assert state_bytes({"n": None, "x": np.arange(2)}) == b'{"n":null,"x":[0,1]}'
    assert state_bytes([[1, "a", None]] * 3) == b'[[1,"a",null],[1,"a",null],[1,"a",null]]'


# --------------------------------------------------------------------------- run lock


def test_a_refused_create_never_leaves_two_processes_holding_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "todo.txt").write_text("buy milk\n")
    taken: list[Any] = []

    def unlock_then_race(lock: Any) -> None:
        unlock(lock)
        # Another process locks the directory the moment the refused create lets go.
        taken.append(lock_directory(folder))

    monkeypatch.setattr(_store, "unlock", unlock_then_race)
    protocol = plan_run("frozenlake", "walks_to_goal", seeds=[0], repeats=1)
    with pytest.raises(InputError, match="not empty"):
        RunStore.create(folder, "run-1", protocol)
    assert len(taken) == 1
    try:
        # A third process must find the directory locked by the second.
        with pytest.raises(InputError, match="another onrecord process"):
            unlock(lock_directory(folder))
    finally:
        unlock(taken[0])
    (folder / LOCK_NAME).unlink(missing_ok=True)
    assert sorted(p.name for p in folder.iterdir()) == ["todo.txt"]


def test_a_lock_taken_on_a_removed_lock_file_is_taken_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The orphan race: the lock file is removed (by a refused create that held it) after
    this process opened it and before it locked it."""
    swapped: list[bool] = []

    def flock(fd: int, operation: int) -> None:
        if not swapped and operation & fcntl.LOCK_EX:
            swapped.append(True)
            (tmp_path / LOCK_NAME).unlink()
            (tmp_path / LOCK_NAME).touch()  # the next process's lock file
        fcntl.flock(fd, operation)

    monkeypatch.setattr(
        _lock,
        "fcntl",
        SimpleNamespace(
            flock=flock, LOCK_EX=fcntl.LOCK_EX, LOCK_NB=fcntl.LOCK_NB, LOCK_UN=fcntl.LOCK_UN
        ),
    )
    held = lock_directory(tmp_path)
    try:
        assert swapped
        assert (tmp_path / LOCK_NAME).stat().st_ino == os.fstat(held.fileno()).st_ino
    finally:
        unlock(held)
