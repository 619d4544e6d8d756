"""``onrecord check NAME... --episode DIR`` of a saved remittance episode runs the domain's
own checks, found from the episode's snapshot name, and gives the verdicts the domain's
grading gives (``remittance_trial``, and the run's report of the same task and agent).

Before: every remittance check was "not registered", even with ``--import
onrecord.domains.remittance``, though ``onrecord report DIR`` of such an episode says to
grade it with ``onrecord check NAME... --episode DIR``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.cli.main import main
from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    RemittanceEnvironment,
    ScriptedAgent,
    load_tasks,
    remittance_trial,
)
from onrecord.envkit import ToolEpisode, passed
from onrecord.envkit import checks as envkit_checks
from onrecord.episode import OutcomeCheck

TASK = next(t for t in load_tasks() if t.task_id == "duplicate-01")
NAMES = [item.name for item in REMITTANCE_CHECKS]
KIT = ["envkit/diff_matches_expected", "envkit/diff_satisfies_rules"]


@pytest.fixture(scope="module")
def episodes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A careful and a double-posting agent's episodes of ``duplicate-01``."""
    env = RemittanceEnvironment(TASK)  # the task's own size: the run below uses it too
    root = tmp_path_factory.mktemp("check49")
    for agent in ("careful", "double_poster"):
        env.run(ScriptedAgent(agent, env.brief), root / agent)
    env.close()
    return {agent: root / agent for agent in ("careful", "double_poster")}


def _onrecord(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, " ".join(err.split())  # the error wraps to the terminal


def _checked(capsys: pytest.CaptureFixture[str], episode: Path, *extra: str) -> list[Any]:
    code, out, err = _onrecord(capsys, "check", *NAMES, "--episode", episode, "--json", *extra)
    assert code in (0, 1), err
    return list(json.loads(out)["results"])


@pytest.mark.parametrize(("agent", "code"), [("careful", 0), ("double_poster", 1)])
def test_the_domains_checks_run_without_an_import_and_match_its_grading(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str], agent: str, code: int
) -> None:
    trial = remittance_trial(ToolEpisode.load(episodes[agent]), REMITTANCE_CHECKS)
    expected = [result.to_dict() for result in trial.results]
    assert _checked(capsys, episodes[agent]) == expected
    # The exit code is the verdicts': the double poster fails four checks.
    assert main(["check", *NAMES, "--episode", str(episodes[agent])]) == code
    out = capsys.readouterr().out
    assert "expected_changes remittance-v4: " in out  # not "vremittance-v4"


def test_the_verdicts_are_those_of_the_run_of_the_same_task_and_agent(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    run = tmp_path / "run"
    args = ("run", "remittance", "-a", "double_poster", "--tasks", TASK.task_id)
    code, _, err = _onrecord(capsys, *args, "--no-progress", "-o", run)
    assert code == 1, err
    [trial] = json.loads((run / "report.json").read_bytes())["trials"]
    checked = _checked(capsys, episodes["double_poster"])
    assert [r["status"] for r in checked].count("fail") == 4
    assert checked == trial["results"]


def _renamed(source: Path, target: Path, snapshot_name: str) -> Path:
    """A copy of the episode whose (re-sealed) manifest names another snapshot, as an
    episode of a world built from the domain's tools under a name of one's own does."""
    shutil.copytree(source, target)
    manifest = orjson.loads((target / "manifest.json").read_bytes())
    manifest["snapshot"]["name"] = snapshot_name
    del manifest["digest"]
    manifest["digest"] = content_digest(manifest)
    (target / "manifest.json").write_bytes(record_bytes(manifest))
    return target


def test_import_applies_the_domains_checks_to_an_episode_of_another_snapshot(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mine = _renamed(episodes["careful"], tmp_path / "mine", "my-clinic/full-01")
    code, _, err = _onrecord(capsys, "check", "expected_changes", "--episode", mine)
    assert code == 3
    assert "no check named 'expected_changes' for this episode" in err
    assert "remittance domain" not in err  # not one of its episodes, by its manifest
    imported = ("--import", "onrecord.domains.remittance")
    assert [r["status"] for r in _checked(capsys, mine, *imported)] == ["pass"] * len(NAMES)


def test_an_unknown_name_lists_the_checks_of_that_episode(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _onrecord(capsys, "check", "expected_change", "--episode", episodes["careful"])
    assert (code, out) == (3, "")
    assert "no check named 'expected_change' for this episode (did you mean " in err
    assert "'expected_changes'?): its checks are the registered" in err
    assert all(name in err for name in KIT)
    domain = ", ".join(sorted(NAMES))
    assert f"and the remittance domain's {domain}; for a check of your own" in err


def test_help_lists_the_checks_per_kind_of_episode(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["check", "--help"])
    assert stop.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    assert all(name in out for name in KIT)
    assert (
        "of a remittance episode (or with --import onrecord.domains.remittance), its "
        f"domain's {', '.join(sorted(NAMES))}."
    ) in out


def test_a_registered_check_of_a_domain_checks_name_is_refused_not_swapped(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine = OutcomeCheck("expected_changes", "mine-1", lambda episode: passed("mine"))
    monkeypatch.setitem(envkit_checks._REGISTRY, "expected_changes", mine)
    code, out, err = _onrecord(
        capsys, "check", "expected_changes", "--episode", episodes["careful"]
    )
    assert (code, out) == (3, "")
    assert (
        "two checks are named 'expected_changes': the remittance domain's (version "
        "remittance-v4) and a registered one (version mine-1); rename the one you registered"
    ) in err


def test_a_weight_for_a_check_not_run_is_refused_with_the_close_name(
    episodes: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: the misspelt weight was ignored, the check kept weight 1, and the score
    printed was not the one asked for, with exit 0/1 as if all were well."""
    first, second = NAMES[0], NAMES[1]
    misspelt = second[:-1]
    args = ("check", first, second, "--episode", episodes["double_poster"])
    code, out, err = _onrecord(capsys, *args, "--weight", f"{misspelt}=5")
    assert (code, out) == (3, "")
    assert f"--weight {misspelt}=…: {misspelt!r} is not among the checks to run" in err
    assert f"did you mean {second!r}?" in err
    # A weight for a real check that is simply not among those named: no guess offered.
    code, _, err = _onrecord(capsys, *args, "--weight", f"{NAMES[-1]}=2")
    assert code == 3
    assert f"{NAMES[-1]!r} is not among the checks to run" in err
    code, _, err = _onrecord(capsys, *args, "--weight", f"{second}=5", "--json")
    assert code in (0, 1), err
