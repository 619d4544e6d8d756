"""Re-grading and `onrecord check` under hostile input: checks that raise, exit or fail
to load, hostile names, interrupted runs, forged evidence, unversioned logic changes."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord import EvalCase
from onrecord._canonical import content_digest, record_bytes
from onrecord.envkit import check, failed, save_episode
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.errors import InputError
from onrecord.runner import plan_run, regrade_run, start_run
from tests.envkit import claims_env
from tests.runner.conftest import onrecord

HERE = "tests.runner.test_regrade_probe2"


def _exits(episode: Any) -> OutcomeVerdict:
    sys.exit(0)


def _stricter(episode: Any) -> OutcomeVerdict:
    return OutcomeVerdict(False, "now failing", {})


EXITS = [OutcomeCheck("short", "v2", _exits)]
"""A check that calls sys.exit(0)."""
SAME_VERSION = [OutcomeCheck("short", "v1", _stricter)]
"""New logic under the old version label."""
MARKUP = [OutcomeCheck("[bold]x[/]", "v[/]1", lambda e: OutcomeVerdict(False, "[/] :warning:", {}))]
"""Rich markup and emoji codes in a check's name, version and reason."""


def broken_factory() -> list[OutcomeCheck]:
    """A check factory that fails."""
    raise ValueError("factory fails")


@check("probe2/exits", "1")
def exits_check(episode: Any) -> Any:
    """A registered envkit check that calls sys.exit(0)."""
    sys.exit(0)


@check("probe2/markup", "1")
def markup_check(episode: Any) -> Any:
    """A registered envkit check with markup in its reason."""
    return failed("[/] closing [bold]tag")


def _lake_run(path: Path, seeds: list[int] | None = None) -> None:
    start_run(
        path,
        plan_run(
            "frozenlake",
            "tests.runner.helpers:walker",
            seeds=seeds or [0, 1],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )


def _regrade(run_dir: Path, *args: str) -> Any:
    return onrecord("regrade", str(run_dir), *args)


def test_a_check_calling_sys_exit_is_an_evaluator_error_not_the_exit_code(run_dir: Path) -> None:
    _lake_run(run_dir)
    done = _regrade(run_dir, "--checks", f"{HERE}:EXITS", "--name", "exits")
    # Before: the regrade ended with the check's exit code 0 ("accept"), nothing written.
    assert done.returncode == 2, done.stdout + done.stderr
    assert "frozenlake/goal#0 short: pass → evaluator_error" in done.stdout
    assert (run_dir / "regrades" / "exits" / "report.json").is_file()


def test_a_check_module_that_fails_to_load_is_bad_input(run_dir: Path) -> None:
    _lake_run(run_dir)
    done = _regrade(run_dir, "--checks", f"{HERE}:broken_factory", "--name", "x")
    assert done.returncode == 3, done.stdout + done.stderr  # before: a traceback, exit 1
    assert "raised ValueError: factory fails" in done.stderr
    assert "Traceback" not in done.stderr
    assert not (run_dir / "regrades").exists()


def test_markup_in_check_names_and_reasons_is_printed_literally(run_dir: Path) -> None:
    _lake_run(run_dir)
    done = _regrade(run_dir, "--checks", f"{HERE}:MARKUP", "--name", "markup")
    assert done.returncode == 2, done.stdout + done.stderr  # before: MarkupError, exit 1
    assert "check [bold]x[/]: version absent → v[/]1" in done.stdout
    assert "frozenlake/goal#0 [bold]x[/]: absent → fail" in done.stdout


@pytest.mark.parametrize("name", ["../escaped", "/tmp/elsewhere", "a/b", "..", ""])
def test_regrade_names_stay_inside_the_run(run_dir: Path, tmp_path: Path, name: str) -> None:
    _lake_run(run_dir)
    target = tmp_path / "elsewhere" if name.startswith("/") else None
    if target is not None:
        name = str(target)
    with pytest.raises(InputError, match="must be a plain directory name"):
        regrade_run(run_dir, name=name)
    assert not (run_dir / "escaped").exists()
    assert not (run_dir / "regrades").exists()
    assert target is None or not target.exists()


def test_unnamed_regrades_in_the_same_second_do_not_collide(run_dir: Path) -> None:
    _lake_run(run_dir)
    now = time.time()
    for offset in range(4):  # whatever second the regrade lands in is already taken
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now + offset))
        (run_dir / "regrades" / stamp).mkdir(parents=True, exist_ok=True)
    regrade = regrade_run(run_dir)
    assert regrade.path.name.endswith("-2")
    assert (regrade.path / "changes.json").is_file()


def test_an_interrupted_run_without_report_is_regraded_and_never_accepted(run_dir: Path) -> None:
    _lake_run(run_dir, seeds=[0, 1, 2])
    # A run killed before its first grading: a torn last record and no report.json.
    episodes = run_dir / "episodes.jsonl"
    episodes.write_bytes(episodes.read_bytes()[:-20])
    (run_dir / "report.json").unlink()
    (run_dir / "decision.json").unlink()
    done = _regrade(run_dir, "--name", "partial")
    # Before: "no such file: report.json"; with report.json present, exit 0 (accept).
    assert done.returncode == 2, done.stdout + done.stderr
    assert "incomplete run: 2 of 3 episodes recorded" in done.stdout
    decision = orjson.loads((run_dir / "regrades" / "partial" / "decision.json").read_bytes())
    assert (decision["complete"], decision["recorded"]) == (False, 2)


def test_a_partial_run_with_a_stale_report_is_not_accepted(run_dir: Path) -> None:
    _lake_run(run_dir)
    episodes = run_dir / "episodes.jsonl"
    episodes.write_bytes(episodes.read_bytes()[:-20])  # report.json still lists both
    regrade = regrade_run(run_dir, name="partial")
    assert regrade.decision.decision == "accept"
    assert (regrade.complete, regrade.exit_code) == (False, 2)
    assert len(regrade.previous.trials) == len(regrade.report.trials) == 1


def test_changed_logic_under_the_same_version_is_flagged(run_dir: Path) -> None:
    _lake_run(run_dir)
    done = _regrade(run_dir, "--checks", f"{HERE}:SAME_VERSION", "--name", "same")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "check short changed verdicts but kept its version" in done.stdout
    changes = orjson.loads((run_dir / "regrades" / "same" / "changes.json").read_bytes())
    assert changes["unversioned"] == ["short"]
    assert changes["versions"] == {}


def test_a_forged_diff_naming_an_unknown_column_is_refused(run_dir: Path) -> None:
    protocol = plan_run(
        "remittance", "careful", seeds=[0], environment_config={"size": 30, "kinds": ["split"]}
    )
    start_run(run_dir, protocol)
    path = run_dir / "episodes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    record["evidence"]["diff"]["allocations"]["created"][0]["bogus"] = 1
    record["evidence"]["digest"] = content_digest(record["evidence"])
    record["trial"]["source"]["digest"] = record["evidence"]["digest"]  # graded by it
    record["digest"] = content_digest(record)
    path.write_bytes(record_bytes(record) + b"".join(lines[1:]))
    done = _regrade(run_dir, "--name", "forged")
    # Before: a sqlite3.OperationalError traceback, exit 1 (CI reads it as reject).
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{path}: the evidence of split-01#0 cannot be loaded" in done.stderr
    assert not (run_dir / "regrades" / "forged").exists()


@pytest.fixture
def tool_episode(tmp_path: Path) -> Path:
    case = EvalCase("Allocate 5.00 [/]", {"rules": []}, case_id="[red]alloc[/]")
    with claims_env.world(claims_env.snapshot()) as world:
        world.reset(case=case, seed=7, run_id="r")
        world.call("allocate", {"claim_id": 17, "amount": 5.0})
        return save_episode(world, tmp_path / "ep").path


def test_check_cli_a_check_calling_sys_exit_is_an_evaluator_error(tool_episode: Path) -> None:
    done = onrecord("check", "probe2/exits", "--import", HERE, "--episode", str(tool_episode))
    assert done.returncode == 2, done.stdout + done.stderr  # before: 0, "all pass"
    assert done.stdout.startswith("evaluator_error probe2/exits v1: ")
    assert "sys.exit(0)" in done.stdout


def test_check_cli_a_module_raising_on_import_is_bad_input(
    tool_episode: Path, tmp_path: Path
) -> None:
    (tmp_path / "broken_checks.py").write_text("raise RuntimeError('module broken')\n")
    done = onrecord(
        "check",
        "envkit/diff_satisfies_rules",
        "--import",
        "broken_checks",
        "--episode",
        str(tool_episode),
        env={"PYTHONPATH": f"{Path(__file__).parents[2]}:{tmp_path}"},
    )
    assert done.returncode == 3, done.stdout + done.stderr  # before: a traceback, exit 1
    assert "--import broken_checks: importing it raised RuntimeError: module broken" in (
        done.stderr
    )


@pytest.mark.parametrize("weight", ["nan", "inf", "-inf"])
def test_check_cli_refuses_non_finite_weights(tool_episode: Path, weight: str) -> None:
    done = onrecord(
        "check",
        "envkit/diff_satisfies_rules",
        "envkit/diff_matches_expected",
        "--weight",
        f"envkit/diff_matches_expected={weight}",
        "--episode",
        str(tool_episode),
    )
    assert done.returncode == 3, done.stdout + done.stderr  # before: "score nan"
    assert "with a finite number" in done.stderr


def test_check_cli_prints_markup_in_reasons_literally(tool_episode: Path) -> None:
    done = onrecord("check", "probe2/markup", "--import", HERE, "--episode", str(tool_episode))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fail            probe2/markup v1: [/] closing [bold]tag" in done.stdout
