"""``onrecord show`` of a run read in a terminal (a CI log): a run's regrades named with
their decisions, and a regrade's own episodes not passed, shown with its verdicts; an
interrupted run said to be incomplete with its resume command and the recorded episodes
not passed; and every episode not passed listed on request (``--all-not-passed``).
Real runs made by the real runner and CLI; each printed command is run as printed."""

from __future__ import annotations

import contextlib
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import orjson

from onrecord.runner import plan_run, start_run
from tests.cli_process import line_after
from tests.runner._held import CHILD, held_env, wait_until_held
from tests.runner.conftest import ROOT, onrecord
from tests.test_show_not_passed26 import _expected, _listed


def _lake_run(run: Path) -> None:
    """Two FrozenLake episodes that pass the original check (at most 6 steps)."""
    start_run(
        run,
        plan_run(
            "frozenlake",
            "tests.runner.helpers:walker",
            seeds=[0, 1],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )


def _run_command(command: str) -> subprocess.CompletedProcess[str]:
    words = shlex.split(command)
    assert words[0] == "onrecord"
    return onrecord(*words[1:])


def test_show_run_names_its_regrades_and_shows_one(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _lake_run(run)
    stricter = onrecord(
        "regrade", str(run), "--checks", "tests.runner.helpers:SHORT_V2", "--name", "stricter"
    )
    assert stricter.returncode == 1, stricter.stderr  # every episode fails the new check
    assert onrecord("regrade", str(run), "--name", "same").returncode == 0

    shown = onrecord("show", str(run))
    assert shown.returncode == 0, shown.stderr
    assert "episodes not passed" not in shown.stdout  # the original grading passed all
    regrades = shown.stdout[shown.stdout.index("regrades") :]
    assert "│ same     │ accept   │ 2 of 2   │ 0 " in regrades
    assert "│ stricter │ reject   │ 2 of 2   │ 2 " in regrades
    command = line_after("show one: ", shown.stdout)
    assert shlex.split(command) == ["onrecord", "show", str(run / "regrades" / "stricter")]

    regrade = _run_command(command)  # the hint works as printed
    assert regrade.returncode == 0, regrade.stderr
    assert _listed(regrade.stdout) == [
        ("frozenlake/goal#0", "fail", "short"),
        ("frozenlake/goal#1", "fail", "short"),
    ]
    see = line_after("see one: ", regrade.stdout)
    regraded = str(run / "regrades" / "stricter")
    assert shlex.split(see)[2:] == [regraded, "--episode", "frozenlake/goal#0"]
    episode = _run_command(see)
    assert episode.returncode == 0, episode.stderr
    assert "verdicts of the regrade stricter" in episode.stdout
    # The regrade's verdict (v2 fails), not the one recorded with the episode (v1 passed).
    assert "│ short │ v2      │ fail   │" in episode.stdout
    assert "│ v1 " not in episode.stdout


def _interrupted(run: Path, records: int) -> None:
    """An `onrecord run` of 200 failing episodes, stopped by SIGTERM after ``records``.

    The run is held (``tests.runner._held``) before it queues the next finished episode,
    until the signal lands: before, the test polled ``episodes.jsonl`` and raced the
    run's natural end (about 2 s of 25 ms episodes), which a busy CI machine can lose."""
    ready = run.parent / f"{run.name}.held"
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            CHILD,
            "run",
            "tests.runner.helpers:lake",
            "--agent",
            "tests.runner.helpers:slow_walker",
            "--checks",
            "tests.runner.helpers:SHORT_V2",
            "--seeds",
            "0-199",
            "--out",
            str(run),
            "--no-progress",
        ],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **held_env(ready, f"episodes:{records}")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own group, so cleanup can kill stray workers
    )
    try:
        assert wait_until_held(process, ready)["lines"] == records
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
    finally:
        with contextlib.suppress(ProcessLookupError):  # nothing left: all exited
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr


def test_show_of_an_interrupted_run_says_so_and_lists_its_failures(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _interrupted(run, 12)
    assert not (run / "report.json").exists()
    lines = (run / "episodes.jsonl").read_bytes().splitlines()
    recorded = [orjson.loads(line) for line in lines]
    assert len(recorded) == 12  # those committed when SIGTERM landed
    shown = onrecord("show", str(run))
    assert shown.returncode == 0, shown.stderr
    assert f"incomplete run: {len(recorded)} of 200 planned episodes recorded" in shown.stdout
    assert "not graded yet (no report.json, so no decision)" in shown.stdout
    # None is made up: no decision line, no verdict.
    assert not [line for line in shown.stdout.splitlines() if line.startswith("decision")]
    assert not {"accept", "reject", "indeterminate"} & set(shown.stdout.split())
    # Every recorded episode failed (at most 3 steps); listed in plan order (by seed).
    keys = sorted((r["seed"], f"{r['case_id']}#{r['repeat']}") for r in recorded)
    assert _listed(shown.stdout) == [(key, "fail", "short") for _, key in keys[:10]]
    hint = line_after(f"… {len(recorded) - 10} more not passed; every one: ", shown.stdout)
    every = _run_command(hint)
    assert every.returncode == 0, every.stderr
    assert _listed(every.stdout) == [(key, "fail", "short") for _, key in keys]
    assert "more not passed" not in every.stdout

    resume = line_after("continue it: ", shown.stdout)
    assert shlex.split(resume) == ["onrecord", "run", "--resume", str(run)]
    resumed = _run_command(resume)  # the hint works as printed: the run completes
    assert resumed.returncode == 1, resumed.stderr  # reject: every episode fails
    done = onrecord("show", str(run))
    assert done.returncode == 0, done.stderr
    assert "incomplete run" not in done.stdout
    assert "decision: reject" in done.stdout


def test_all_not_passed_lists_every_one(tmp_path: Path) -> None:
    run = tmp_path / "run"
    config = {"size": 30, "kinds": ["duplicate"]}
    start_run(
        run, plan_run("remittance", "double_poster", seeds=[0, 1, 2, 3], environment_config=config)
    )
    expected = _expected(run)
    assert len(expected) > 10
    shown = onrecord("show", str(run))
    assert shown.returncode == 0, shown.stderr
    assert _listed(shown.stdout) == expected[:10]  # the first ten, then the hint
    hint = line_after(f"… {len(expected) - 10} more not passed; every one: ", shown.stdout)
    every = _run_command(hint)
    assert every.returncode == 0, every.stderr
    assert _listed(every.stdout) == expected
    assert "more not passed" not in every.stdout


def test_all_not_passed_needs_a_run_or_regrade(tmp_path: Path) -> None:
    run = tmp_path / "run"
    _lake_run(run)
    refused = onrecord("show", str(run / "report.json"), "--all-not-passed")
    assert refused.returncode == 3
    assert "--all-not-passed needs a run or regrade directory" in refused.stderr


def test_a_one_episode_run_killed_while_grading_says_its_episode_is_recorded(
    tmp_path: Path,
) -> None:
    run = tmp_path / "one"
    start_run(run, plan_run("frozenlake", "walks_to_goal"))
    for graded in ("report.json", "decision.json"):  # as a kill before grading leaves it
        (run / graded).unlink()
    shown = onrecord("show", str(run), "--no-progress")
    assert shown.returncode == 0, shown.stderr
    # Before: "all 1 planned episodes recorded".
    assert "the one planned episode recorded" in shown.stdout.splitlines()
    assert f"grade it: onrecord run --resume {run}" in shown.stdout
