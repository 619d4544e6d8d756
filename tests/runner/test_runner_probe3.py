"""Runner probe 3: agent factories that fail are the agent's recorded failure; records
the plan never made, deleted records and custom providers that fail are refused (exit
3, nothing changed); regrades appear whole; the run summary prints text literally."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest, record_bytes
from onrecord.case import EvalCase
from onrecord.cli.main import main as cli_main
from onrecord.episode import OutcomeCheck
from onrecord.errors import ConsistencyError, InputError, OnrecordError
from onrecord.report import Trial
from onrecord.runner import (
    COMPLETED,
    AgentContext,
    EnvironmentProvider,
    GymnasiumProvider,
    RunStore,
    agent_factory,
    load_tasks,
    plan_run,
    register_environment,
    regrade_run,
    resume_run,
    start_run,
)
from onrecord.runner import _registry as registry_module
from onrecord.runner import _regrade as regrade_module
from tests.runner.conftest import onrecord

HERE = "tests.runner.test_runner_probe3"


# -- agents, environments and providers the runs below import by path ---------------------
@agent_factory
def factory_raises(context: AgentContext) -> Any:
    """An agent factory that fails for every episode."""
    raise RuntimeError(f"no agent for repeat {context.repeat}")


@agent_factory
def factory_returns_none(context: AgentContext) -> Any:
    """An agent factory that builds no agent."""
    return None


def lake(**config: Any) -> gym.Env[Any, Any]:
    """The non-slippery 4x4 FrozenLake."""
    return gym.make("FrozenLake-v1", is_slippery=False, **config)


class _TasksRaise(GymnasiumProvider):
    def tasks(self) -> Sequence[EvalCase]:
        raise ValueError("the task list is broken")


def tasks_raise(**config: Any) -> GymnasiumProvider:
    """A custom provider whose tasks() raises."""
    return _TasksRaise(lambda: lake(), environment_id="probe3/tasks-raise")


class _NoPolicy(GymnasiumProvider):
    def default_policy(self, checks: Sequence[OutcomeCheck]) -> Any:
        return None


def no_policy(**config: Any) -> GymnasiumProvider:
    """A custom provider whose default_policy() returns None."""
    return _NoPolicy(lambda: lake(), environment_id="probe3/no-policy")


class _EpisodesRaise(EnvironmentProvider):
    """Every episode fails in the harness, with rich markup in the message."""

    environment_id = "probe3/episodes-raise"

    def tasks(self) -> Sequence[EvalCase]:
        return [EvalCase("x", case_id="only")]

    def default_checks(self) -> Sequence[OutcomeCheck]:
        return [COMPLETED]

    def reference_agents(self) -> Mapping[str, Any]:
        return {"any": lambda context: None}

    def run_episode(self, spec: Any, agent: Any) -> Any:
        raise RuntimeError("broken [/] provider")


def episodes_raise(**config: Any) -> EnvironmentProvider:
    """``module:factory`` of ``_EpisodesRaise``."""
    return _EpisodesRaise()


TRIAL_BROKEN = {"now": False}


class _TrialRaises(GymnasiumProvider):
    def trial(self, subject: Any, checks: Sequence[OutcomeCheck], repeat: int) -> Trial:
        if TRIAL_BROKEN["now"]:
            raise ValueError("grading code broke")
        return super().trial(subject, checks, repeat)


def trial_raises(**config: Any) -> GymnasiumProvider:
    """A provider whose trial() raises once ``TRIAL_BROKEN["now"]`` is set."""
    return _TrialRaises(lambda: lake(), environment_id="probe3/trial-raises")


def _lake_run(run_dir: Path, agent: str = "tests.runner.helpers:walker", **plan: Any) -> Any:
    return start_run(run_dir, plan_run(f"{HERE}:lake", agent, **plan))


def _snapshot(run_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(run_dir.iterdir()) if p.is_file()}


# -- agent factories ------------------------------------------------------------------------
@pytest.mark.parametrize("agent", ["factory_raises", "factory_returns_none"])
def test_a_failing_agent_factory_is_a_recorded_rejection_not_a_retried_error(
    run_dir: Path, agent: str
) -> None:
    result = _lake_run(run_dir, f"{HERE}:{agent}", repeats=2)
    # Before: never recorded (errors.jsonl), exit 2 on every resume, forever.
    assert (result.exit_code, result.errors, result.recorded_now) == (1, (), 2)
    assert not (run_dir / "errors.jsonl").read_bytes()
    trial = result.report.trials[0]
    assert trial.result("completed").status == "fail"
    assert "AgentSetupError" in str(trial.to_dict()["coverage_issues"])
    assert resume_run(run_dir).recorded_now == 0  # nothing left to retry


def test_a_remittance_agent_factory_that_raises_is_an_agent_error(run_dir: Path) -> None:
    protocol = plan_run("remittance", f"{HERE}:factory_raises", tasks=["full-01"])
    result = start_run(run_dir, protocol)
    assert (result.exit_code, result.errors, result.recorded_now) == (1, (), 1)
    record = next(RunStore.open(run_dir).records())
    assert record.data["evidence"]["ending"] == "agent_error"
    assert "no agent for repeat 0" in record.data["evidence"]["agent_error"]


# -- records the plan never made --------------------------------------------------------------
def _forge(run_dir: Path, change: str) -> None:
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    first, second = orjson.loads(lines[0]), orjson.loads(lines[1])
    if change == "repeat":  # a third repeat of a two-repeat run, graded as such
        second["repeat"] = second["trial"]["repeat"] = 2
    elif change == "case":
        second["case_id"] = "not-a-task"
    elif change == "seed":
        second["seed"] = 99
    else:  # the record of repeat 1 holding the trial of repeat 0
        second["trial"] = first["trial"]
    del second["digest"]
    second["digest"] = content_digest(second)
    (run_dir / "episodes.jsonl").write_bytes(lines[0] + record_bytes(second))


@pytest.mark.parametrize("change", ["repeat", "case", "seed", "trial"])
def test_a_re_digested_record_outside_the_plan_is_refused(run_dir: Path, change: str) -> None:
    _lake_run(run_dir, repeats=2)
    _forge(run_dir, change)
    before = _snapshot(run_dir)
    # Before: "repeat" crashed the resume with a KeyError (exit 1, read as reject) and
    # `verify` said "3 of 2 episodes" ok; the others were counted as recorded episodes.
    with pytest.raises(ConsistencyError, match=r"line 2: episode .* is not an episode of this"):
        resume_run(run_dir)
    assert _snapshot(run_dir) == before
    assert cli_main(["verify", str(run_dir)]) == 3


def test_resuming_a_run_holding_a_foreign_record_exits_3(run_dir: Path) -> None:
    _lake_run(run_dir, repeats=2)
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    extra = orjson.loads(lines[1])
    extra["repeat"] = extra["trial"]["repeat"] = 7
    del extra["digest"]
    extra["digest"] = content_digest(extra)
    with open(run_dir / "episodes.jsonl", "ab") as handle:
        handle.write(record_bytes(extra))
    done = onrecord("run", "--resume", str(run_dir), "--no-progress")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "its repeat 7 is not one of the run's repeats 0 to 1" in done.stderr


# -- deleted records --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def remittance_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete tool-world run (action logs), two episodes."""
    path = tmp_path_factory.mktemp("probe3") / "remittance"
    assert start_run(path, plan_run("remittance", "careful", tasks=["full-01", "full-02"]))
    return path


def _copy(source: Path, target: Path) -> Path:
    target.mkdir()
    for item in source.iterdir():
        if item.is_file():
            (target / item.name).write_bytes(item.read_bytes())
    return target


@pytest.mark.parametrize("loss", ["episodes.jsonl deleted", "last record deleted"])
def test_resume_refuses_a_run_whose_records_were_deleted(
    remittance_run: Path, tmp_path: Path, loss: str
) -> None:
    run_dir = _copy(remittance_run, tmp_path / "run")
    episodes = run_dir / "episodes.jsonl"
    if loss == "episodes.jsonl deleted":
        episodes.unlink()
    else:
        episodes.write_bytes(episodes.read_bytes().splitlines(keepends=True)[0])
    before = _snapshot(run_dir)
    # Before: the resume cut the action logs of the deleted episodes off ("an episode
    # that was not committed") and ran them again under the same run id.
    with pytest.raises(ConsistencyError, match="deleted"):
        resume_run(run_dir)
    assert _snapshot(run_dir) == before


def test_an_interrupted_first_invocation_is_still_repaired(
    remittance_run: Path, tmp_path: Path
) -> None:
    run_dir = _copy(remittance_run, tmp_path / "run")
    for name in ("report.json", "decision.json"):
        (run_dir / name).unlink()  # killed before its first grading
    episodes = run_dir / "episodes.jsonl"
    episodes.write_bytes(episodes.read_bytes()[:-30])  # a torn last record
    result = resume_run(run_dir)
    assert (result.recorded_now, result.exit_code) == (1, 0)
    assert any("partial episode record" in notice for notice in result.notices)


# -- the command line -------------------------------------------------------------------------
def test_resume_with_the_directory_spelled_twice_differently(run_dir: Path) -> None:
    _lake_run(run_dir)
    for out in (f"{run_dir}/", f"{run_dir.parent}/./{run_dir.name}"):
        done = onrecord("run", "--resume", str(run_dir), "--out", out, "--no-progress")
        # Before: the run directory was taken for an environment name: "unknown
        # environment '...'", exit 3.
        assert done.returncode == 0, done.stdout + done.stderr


def test_harness_errors_with_markup_are_printed_and_counted(run_dir: Path) -> None:
    done = onrecord(
        "run", f"{HERE}:episodes_raise", "--agent", "any", "--repeats", "12",
        "--out", str(run_dir), "--no-progress",
    )  # fmt: skip
    # Before: rich read "[/]" as markup and crashed after the run (exit 1 = reject).
    assert done.returncode == 2, done.stdout + done.stderr
    assert "RuntimeError: broken [/] provider" in done.stdout
    assert "… 2 more episodes" in done.stdout
    assert "errors.jsonl" in done.stdout


@pytest.mark.parametrize(
    ("environment", "message"),
    [
        ("tasks_raise", "failed while planning the run: ValueError: the task list is broken"),
        ("no_policy", "default_policy() returned NoneType, not an AcceptancePolicy"),
    ],
)
def test_a_custom_provider_failing_while_planning_is_bad_input(
    run_dir: Path, environment: str, message: str
) -> None:
    done = onrecord("run", f"{HERE}:{environment}", "--agent", "random", "--out", str(run_dir))
    # Before: a traceback and exit 1, which a CI gate reads as reject.
    assert done.returncode == 3, done.stdout + done.stderr
    assert message in done.stderr
    assert not run_dir.exists()


def test_a_tasks_file_error_names_the_file_and_the_task(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(
        '{"case_id": "a", "input": 1}\n{"case_id": "b", "input": 2, "completion": "x"}\n'
    )
    with pytest.raises(InputError, match=r"tasks\.jsonl: task 2 \('b'\): EvalCase\.completion"):
        load_tasks(tasks)


# -- the Python API ---------------------------------------------------------------------------
@pytest.mark.parametrize(
    "names",
    [{"tasks": []}, {"checks": []}, {"checks": ()}, {"tasks": "full-01"}, {"checks": "default"}],
)
def test_plan_run_refuses_empty_or_string_name_lists(names: dict[str, Any]) -> None:
    # Before: [] meant every task / the default checks; a string was read letter by letter.
    field = next(iter(names))
    with pytest.raises(InputError, match=f"{field} must be a non-empty list of names"):
        plan_run("remittance", "careful", **names)


@settings(max_examples=15, deadline=None)
@given(st.sampled_from(sorted(gym.registry)))
def test_register_environment_refuses_to_hide_a_gymnasium_id(name: str) -> None:
    saved = dict(registry_module._REGISTRY)
    try:
        with pytest.raises(InputError, match="is a Gymnasium id"):
            register_environment(name, f"{HERE}:lake")
        assert saved == registry_module._REGISTRY
        register_environment(name, f"{HERE}:lake", replace=True)  # on purpose: allowed
        assert registry_module.resolve_environment(name).target == f"{HERE}:lake"
    finally:
        registry_module._REGISTRY.clear()
        registry_module._REGISTRY.update(saved)


# -- regrade ----------------------------------------------------------------------------------
def test_a_regrade_failing_while_saving_leaves_no_partial_directory(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lake_run(run_dir)

    def fail(*args: Any) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(regrade_module, "_save_changes", fail)
    with pytest.raises(OSError, match="No space"):
        regrade_run(run_dir, name="v2")
    # Before: regrades/v2 held report.json and decision.json without changes.json, and
    # `onrecord verify RUN` failed on it (exit 3) until it was deleted by hand.
    assert not (run_dir / "regrades" / "v2").exists()
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".regrade")] == []
    assert cli_main(["verify", str(run_dir)]) == 0
    monkeypatch.undo()
    assert regrade_run(run_dir, name="v2").path == run_dir / "regrades" / "v2"


def test_an_unnamed_regrade_whose_second_was_taken_meanwhile_is_numbered(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _lake_run(run_dir)
    target = regrade_module._target

    def raced(root: Path, name: str | None) -> Path:
        path = target(root, name)  # another regrade finishes under this name meanwhile
        path.mkdir(parents=True)
        (path / "changes.json").write_bytes(b"{}")
        return path

    monkeypatch.setattr(regrade_module, "_target", raced)
    # Before: "already exists; choose another --name", though no --name was given.
    regrade = regrade_run(run_dir)
    assert regrade.path.name.endswith("-2")
    assert (regrade.path / "changes.json").is_file()


def test_a_provider_whose_grading_raises_on_regrade_is_bad_input(
    run_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    start_run(run_dir, plan_run(f"{HERE}:trial_raises", "tests.runner.helpers:walker"))
    monkeypatch.setitem(TRIAL_BROKEN, "now", True)
    # Before: the ValueError escaped (a traceback, exit 1: read as reject).
    with pytest.raises(OnrecordError, match="trial\\(\\): ValueError: grading code broke"):
        regrade_run(run_dir, name="x")
    assert not (run_dir / "regrades" / "x").exists()


@settings(
    max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.integers(min_value=2, max_value=40))
def test_unplanned_repeats_are_refused_whatever_their_number(run_dir: Path, repeat: int) -> None:
    if not (run_dir / "run.json").exists():
        _lake_run(run_dir, repeats=2)
    store = RunStore.open(run_dir)
    record = dict(next(store.records()).data)
    record["repeat"] = repeat
    assert store.protocol.unplanned(record) is not None
    record["repeat"] = repeat % 2
    record["seed"] = 0
    record["trial"] = {**record["trial"], "repeat": repeat % 2}
    assert store.protocol.unplanned(record) is None


def test_resume_of_a_tasks_file_run_accepts_its_own_task_ids(run_dir: Path, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(
        '[[tasks]]\ncase_id = "a"\ninput = "x"\n[[tasks]]\ncase_id = "b"\ninput = "y"\n'
    )
    result = start_run(run_dir, plan_run(f"{HERE}:lake", "random", tasks=load_tasks(tasks)))
    done = onrecord("run", "--resume", str(run_dir), "--tasks", "a,b", "--no-progress")
    # Before: "unknown task 'a' for environment ...": the ids were looked up among the
    # environment's own tasks, not the run's.
    assert done.returncode == result.exit_code, done.stdout + done.stderr
    assert "2/2 episodes recorded (0 now" in done.stdout
    done = onrecord("run", "--resume", str(run_dir), "--tasks", "a", "--no-progress")
    assert done.returncode == 3
    assert "tasks: the run has ('a', 'b'), the new settings say ('a',)" in done.stderr


def test_a_differing_environment_setting_is_named_not_cut_short(run_dir: Path) -> None:
    start_run(run_dir, plan_run(f"{HERE}:lake", "random", environment_config={"map_name": "4x4"}))
    expect = plan_run(
        f"{HERE}:lake", "random", environment_config={"map_name": "4x4", "max_episode_steps": 9}
    )
    # Before: "environment: the run has {'name': ..., 'config':..." (the setting cut off).
    with pytest.raises(
        InputError,
        match=r"environment\.config\.max_episode_steps: the run has nothing, the new settings",
    ):
        resume_run(run_dir, expect=expect)


def test_regrade_refuses_a_negative_limit(run_dir: Path) -> None:
    _lake_run(run_dir)
    done = onrecord("regrade", str(run_dir), "--limit", "-1")
    # Before: accepted, printing every change but the last and "… N+1 more".
    assert done.returncode == 3, done.stdout + done.stderr
    assert "--limit must be 0 or more" in done.stderr
    assert not (run_dir / "regrades").exists()
