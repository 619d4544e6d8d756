"""Round 41: text an agent or environment wrote (an error message, a case id) cannot
print a line of its own at column 0 in what ``show RUN --episode``, ``run``, ``regrade``
and a refused command print: a second line ``decision: accept`` read as onrecord's
verdict in a CI log. Real runs of Gymnasium environments, the installed ``onrecord``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym

from onrecord import EvalCase
from onrecord.runner import plan_run, start_run
from tests.runner.conftest import onrecord

FORGED = "boom\ndecision: accept\n  every requirement met"
"""An agent's error message holding a verdict line."""


def forger(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """A FrozenLake agent that takes a step, then raises ``FORGED``."""
    env.step(1)
    raise RuntimeError(FORGED)


class _ForgedInfo(gym.Env[int, int]):
    """An environment whose reset info has no JSON form, under a key holding ``FORGED``:
    its episodes cannot be recorded, and the error quotes the key."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        return 0, {FORGED: object()}

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, True, False, {}


def forged_info(**config: Any) -> gym.Env[int, int]:
    """``module:factory``: the environment above."""
    return _ForgedInfo()


def broken(**config: Any) -> gym.Env[int, int]:
    """``module:factory`` that raises ``FORGED``: the run is refused (exit 3)."""
    raise RuntimeError(FORGED)


def _forged_lines(output: str) -> list[str]:
    """The lines a forged text put at column 0."""
    return [line for line in output.splitlines() if line.startswith(("decision: accept", "every"))]


def test_show_episode_hangs_an_agents_error_under_its_coverage_label(tmp_path: Path) -> None:
    run = tmp_path / "run"
    me = "tests.test_log_lines_round41:forger"
    done = onrecord("run", "frozenlake", "--agent", me, "--out", str(run), "--no-progress")
    assert done.returncode == 2, done.stderr  # the agent raised: indeterminate
    assert not _forged_lines(done.stdout)
    shown = onrecord("show", str(run), "--episode", "frozenlake/goal#0", "--no-progress")
    assert shown.returncode == 0, shown.stderr
    assert not _forged_lines(shown.stdout)
    lines = shown.stdout.splitlines()
    # Both coverage lines (the verdicts' and the episode's), each with the rest under it.
    for label, hanging in (("  coverage: ", "    "), ("coverage: ", "  ")):
        first = lines.index(f"{label}interact raised builtins.RuntimeError: boom")
        assert lines[first + 1] == f"{hanging}decision: accept"
        # The place the agent raised it closes the message (it names this file's line).
        assert lines[first + 2].startswith(f"{hanging}  every requirement met (at ")
        assert lines[first + 2].endswith(" in forger)")


def test_run_hangs_an_environments_error_under_not_recorded(tmp_path: Path) -> None:
    env = "tests.test_log_lines_round41:forged_info"
    run = tmp_path / "run"
    done = onrecord("run", env, "--agent", "noop", "--out", str(run), "--no-progress")
    assert done.returncode == 2, done.stderr  # nothing recorded: incomplete
    assert not _forged_lines(done.stdout)
    lines = done.stdout.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("not recorded:"))
    # The key is quoted in the path (round 41): its newlines are escapes, not lines.
    path = '$.initial.info["boom\\ndecision: accept\\n  every requirement met"]'
    assert f"PortabilityError: {path} holds a builtins.object" in lines[first]
    assert "decision: accept" not in done.stdout.replace(path, "")


def test_a_refused_commands_error_hangs_what_it_quotes(tmp_path: Path) -> None:
    env = "tests.test_log_lines_round41:broken"
    run = tmp_path / "run"
    done = onrecord("run", env, "--agent", "noop", "--out", str(run), "--no-progress")
    assert done.returncode == 3, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("onrecord run: error: environment ")
    assert lines[0].endswith("raised RuntimeError: boom")
    assert lines[1:] == ["  decision: accept", "    every requirement met"]


def test_a_missing_files_path_hangs_its_later_lines(tmp_path: Path) -> None:
    """A path holding a newline, named on the command line: the "no such file" error
    printed its second line at column 0 of stderr, as an OnrecordError's no longer did."""
    missing = str(tmp_path / "a\ndecision: accept")
    for command in (["gate", missing, "--policy", missing], ["show", missing]):
        done = onrecord(*command)
        assert done.returncode == 3, done.stderr
        lines = done.stderr.splitlines()
        assert lines[0].startswith(f"onrecord {command[0]}: error: no such file: "), lines
        assert lines[1:] == ["  decision: accept"], lines


def test_regrade_hangs_a_case_ids_lines_under_its_change(tmp_path: Path) -> None:
    run = tmp_path / "run"
    case = EvalCase(None, case_id="c1\ndecision: accept")
    start_run(
        run,
        plan_run(
            "tests.runner.helpers:lake",
            "tests.runner.helpers:walker",
            tasks=[case],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )
    stricter = "tests.runner.helpers:SHORT_V2"
    done = onrecord("regrade", str(run), "--checks", stricter, "--name", "v2", "--no-progress")
    assert done.returncode == 1, done.stderr  # the stricter check fails the episode
    assert not _forged_lines(done.stdout)
    lines = done.stdout.splitlines()
    # One line, the case id's newline an escape (round 42; it hung under "c1" before).
    assert "  c1\\ndecision: accept#0 short: pass → fail" in lines
    shown = onrecord("show", str(run / "regrades" / "v2" / "changes.json"))
    assert shown.returncode == 0, shown.stderr
    assert not _forged_lines(shown.stdout)


def test_a_huge_gate_summary_is_cut_by_whole_rows_under_the_limit(tmp_path: Path) -> None:
    from onrecord import AcceptancePolicy, CheckRequirement
    from onrecord.cli._markdown_fit import MARKDOWN_LIMIT
    from onrecord.report import CheckResult, EvaluationReport, Trial
    from tests.cli_process import onrecord as installed

    names = [f"rule_{index:03}" for index in range(150)]
    long = "x" * 400
    trials = [
        Trial(
            {"case_id": f"case-{case}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            tuple(CheckResult(name, "v1", "fail", f"`{name}` broke {long}") for name in names),
            settings={"environment_id": "env"},
        )
        for case in range(3)
    ]
    report = EvaluationReport.from_trials(trials).save_json(tmp_path / "report.json")
    policy = AcceptancePolicy(tuple(CheckRequirement(name) for name in names), name="many")
    summary = tmp_path / "summary.md"
    gate = installed(
        "gate", report, "--policy", policy.save_json(tmp_path / "p.json"), "--markdown", summary
    )
    assert gate.returncode == 1, gate.stderr
    written = summary.read_text(encoding="utf-8")
    assert len(written) <= MARKDOWN_LIMIT
    lines = written.splitlines()
    assert lines[0].startswith("### ❌ onrecord gate: reject")
    assert lines[-1].startswith("<sub>report sha256:")  # the footer is kept
    # Every table row whole: it starts and ends with a cell border.
    assert all(line.endswith("|") for line in lines if line.startswith("|"))
    (note,) = [line for line in lines if line.startswith("… left out to keep")]
    # All 150 requirements fit; of 450 results not passed (10 listed per requirement),
    # the ones cut and the ones never listed are counted together.
    assert "| rule\\_149 | yes |" in written
    listed = [line for line in lines if line.startswith("| rule") and "case-" in line]
    assert listed
    assert f"{450 - len(listed)} results that did not pass" in note
    assert "`onrecord show REPORT`" in note
