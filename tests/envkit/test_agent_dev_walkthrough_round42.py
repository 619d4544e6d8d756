"""An agent developer's tool world of their own (a tiny appointments desk) under real
``onrecord run`` / ``regrade`` processes: a policy whose requirement names no check of
the run is refused before any episode runs, and a step-limit episode whose last action
named no tool says so."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.errors import InputError
from onrecord.runner import plan_run
from tests.cli_process import onrecord

MODULE = '''
from onrecord import EvalCase
from onrecord.envkit import Snapshot, changed, created, failed, no_other_changes, passed, tool
from onrecord.episode import OutcomeCheck
from onrecord.runner import ToolWorldProvider

SNAPSHOT = Snapshot.build("clinic", """
    CREATE TABLE patients (id INTEGER PRIMARY KEY, phone TEXT);
    CREATE TABLE slots (id INTEGER PRIMARY KEY, free INTEGER NOT NULL DEFAULT 1);
    CREATE TABLE bookings (id INTEGER PRIMARY KEY, slot_id INTEGER NOT NULL,
                           patient_id INTEGER NOT NULL);""",
    lambda conn, rng: (
        conn.executemany("INSERT INTO patients VALUES (?, ?)", [(1, "555-1"), (3, "555-3")]),
        conn.executemany("INSERT INTO slots (id) VALUES (?)", [(1,), (2,)])))


@tool(writes=True, example={"slot_id": 1, "patient_id": 1})
def book(ctx, slot_id: int, patient_id: int) -> dict:
    """Book a free slot for a patient."""
    if ctx.execute("UPDATE slots SET free = 0 WHERE id = ? AND free = 1",
                   (slot_id,)).rowcount != 1:
        ctx.reject(f"slot {slot_id} is not free")
    return {"booking_id": ctx.execute(
        "INSERT INTO bookings (slot_id, patient_id) VALUES (?, ?)",
        (slot_id, patient_id)).lastrowid}


def _protected_untouched(episode):
    if any(e["table"] == "patients" and e["key"] == 3 for e in episode.audit):
        return failed("the protected patient was written")
    return passed("the protected patient was never written")


protected_untouched = OutcomeCheck("protected_untouched", "v1", _protected_untouched)
CASE = EvalCase({"slot_id": 2, "patient_id": 1}, {"rules": [
    changed("slots", where={"id": 2}, to={"free": 0}),
    created("bookings", where={"slot_id": 2, "patient_id": 1}), no_other_changes()]},
    case_id="book-1-2")


def make():
    return ToolWorldProvider(SNAPSHOT, [book], environment_id="clinic/v1", tasks=[CASE],
                             checks=[protected_untouched], max_steps=3)


def correct(brief):
    calls = iter([{"tool": "book", "arguments": brief},
                  {"tool": "finish", "arguments": {"message": "booked"}}])
    return lambda observation: next(calls)


def says_finish(brief):                   # returns a bare tool name, not a call
    return lambda observation: "finish"
'''


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "clinic.py").write_text(textwrap.dedent(MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _policy(folder: Path, *checks: str) -> Path:
    path = folder / "policy.toml"
    path.write_text("".join(f'[[requirements]]\ncheck = "{c}"\n' for c in checks))
    return path


def _run(folder: Path, *args: str | Path) -> object:
    return onrecord("run", "clinic:make", "--seeds", "0", *args, cwd=folder, pythonpath=folder)


def test_a_mistyped_policy_check_is_refused_before_any_episode_runs(desk: Path) -> None:
    policy = _policy(desk, "envkit/diff_satisfies_rules", "protected_untuched")
    done = _run(desk, "--agent", "clinic:correct", "--policy", policy, "--out", "runs/a")
    # Before: every episode ran, then "indeterminate" (exit 2) with "no check in the
    # report matches 'protected_untuched'" and no word of the check meant.
    assert done.returncode == 3, done.stdout + done.stderr
    assert "'protected_untuched' (did you mean 'protected_untouched'?)" in done.stderr
    assert "no check this run grades with matches it" in done.stderr
    assert not (desk / "runs" / "a").exists()


def test_a_check_name_without_its_envkit_prefix_names_the_prefixed_check(desk: Path) -> None:
    policy = _policy(desk, "diff_satisfies_rules")
    done = _run(desk, "--agent", "clinic:correct", "--policy", policy, "--out", "runs/b")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "(did you mean 'envkit/diff_satisfies_rules'?)" in done.stderr


def test_a_policy_of_names_and_globs_that_match_still_runs(desk: Path) -> None:
    policy = _policy(desk, "envkit/*", "protected_untouched")
    done = _run(desk, "--agent", "clinic:correct", "--policy", policy, "--out", "runs/c")
    assert done.returncode == 0, done.stdout + done.stderr


def test_regrade_refuses_a_mistyped_policy_and_writes_nothing(desk: Path) -> None:
    assert _run(desk, "--agent", "clinic:correct", "--out", "runs/d").returncode == 0
    policy = _policy(desk, "protected_untuched")
    done = onrecord(
        "regrade", "runs/d", "--policy", policy, "--name", "v2", cwd=desk, pythonpath=desk
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "did you mean 'protected_untouched'?" in done.stderr
    assert not (desk / "runs" / "d" / "regrades").exists()


def test_plan_run_refuses_it_too_but_not_the_environments_own_policy(desk: Path) -> None:
    wrong = AcceptancePolicy((CheckRequirement("protected_untuched"),))
    with pytest.raises(InputError, match="did you mean 'protected_untouched'"):
        plan_run("clinic:make", "clinic:correct", policy=wrong)
    assert plan_run("clinic:make", "clinic:correct").acceptance_policy.requirements


def test_a_step_limit_after_an_action_naming_no_tool_says_so(desk: Path) -> None:
    done = _run(desk, "--agent", "clinic:says_finish", "--out", "runs/e")
    assert done.returncode == 1, done.stdout + done.stderr
    # Before: "the episode ended after step 3 () without a successful finish call".
    assert "ended with step_limit after step 3 (an invalid action), not finished" in done.stdout
    assert "()" not in done.stdout
