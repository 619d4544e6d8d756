"""Misspelt keys of hand-written tool-world definitions, and a misspelt check name, are
named with the key meant; a step-limited episode gets one coverage issue, not two.

Before: ``rule = "create"`` said only "unknown rule"; ``counts = 1`` read as "lacks the
fields ['count']"; ``[[tasks.expected_output.rule]]`` as "has no expected_output['rules']";
``example={"skuu": ...}`` as "missing the required field 'sku'"; ``onrecord check
envkit/diff_satisfies_rule`` listed every check with no word on the one meant; and a run
stopped by the step limit printed "ended with step_limit, not finished" and "ended after
step 10 (recount) without a successful finish call" for one cause."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord.envkit import ToolWorld, check_rules, save_episode, tool
from onrecord.errors import InputError
from onrecord.runner._agents_and_checks import resolve_agent
from onrecord.runner._gym import GymnasiumProvider
from tests.cli_process import onrecord

DOCS = Path(__file__).resolve().parents[2] / "docs"
LOOPER = """
from onrecord.runner import agent_factory

@agent_factory
def looper(context):  # never finishes: recounts until the step limit (10)
    return lambda observation: {"tool": "recount", "arguments": {"sku": "bolt", "qty": 0}}
"""
CHANGED = {"rule": "changed", "table": "items", "where": {"sku": "nut"}, "to": {"stock": 5}}


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """envkit.md's stockroom, writing-a-task.md's pick-nut task file and a looping agent."""
    folder = tmp_path_factory.mktemp("hints45")
    envkit = (DOCS / "envkit.md").read_text()
    start = envkit.index('"""stockroom.py')
    (folder / "stockroom.py").write_text(envkit[start : envkit.index("```", start)])
    tasks = re.findall(r"```toml\n(.*?)```", (DOCS / "writing-a-task.md").read_text(), re.S)
    (folder / "tasks.toml").write_text(next(t for t in tasks if "pick-nut" in t))
    (folder / "looper.py").write_text(LOOPER)
    sys.path.insert(0, str(folder))
    yield folder
    sys.path.remove(str(folder))
    for name in ("stockroom", "looper"):
        sys.modules.pop(name, None)


def _refusal(desk: Path, old: str, new: str, count: int = 1) -> str:
    """The error of a run of the task file with ``old`` written as ``new`` (``count``
    times, -1 for every one)."""
    text = (desk / "tasks.toml").read_text()
    assert old in text
    (desk / "typo.toml").write_text(text.replace(old, new, count))
    args = ("run", "stockroom:make", "--tasks-file", "typo.toml", "--agent", "careful")
    done = onrecord(*args, "--out", "runs/typo", cwd=desk, pythonpath=desk)
    assert done.returncode == 3, done.stdout + done.stderr
    return " ".join(done.stderr.split())  # the error wraps to the terminal


def test_a_misspelt_rule_kind_names_the_kind_meant(desk: Path) -> None:
    err = _refusal(desk, 'rule = "created"', 'rule = "create"')
    assert "typo.toml: task 1: task ('pick-nut') expected_output['rules']: unknown rule" in err
    assert "no kind 'create' (did you mean 'created'?)" in err


def test_a_misspelt_rule_field_is_named_not_read_as_a_missing_one(desk: Path) -> None:
    err = _refusal(desk, "count = 1    ", "counts = 1")
    assert "typo.toml: task 1: task ('pick-nut')" in err
    assert "has the unknown fields ['counts'] (did you mean 'count' for 'counts'?)" in err
    assert "changed() rules have only the fields" in err
    assert "and this one lacks ['count']" in err


def test_a_misspelt_expected_output_key_names_the_key_meant(desk: Path) -> None:
    old, new = "[[tasks.expected_output.rules]]", "[[tasks.expected_output.rule]]"
    err = _refusal(desk, old, new, -1)
    assert "has no expected_output['rules'] (did you mean 'rules' for 'rule'?)" in err


def test_a_misspelt_rule_key_or_count_bound_names_the_one_meant() -> None:
    with pytest.raises(InputError, match=r"no 'rule' field \(did you mean 'rule' for 'rules'\?\)"):
        check_rules({}, [{"rules": "no_other_changes"}])
    with pytest.raises(InputError, match=r"not \['mx'\] \(did you mean 'max' for 'mx'\?\)"):
        check_rules({}, [{**CHANGED, "count": {"min": 1, "mx": 2}}])
    # A field with no near name is still named, with the fields there are.
    with pytest.raises(InputError, match=r"unknown fields \['colour'\]; changed\(\) rules"):
        check_rules({}, [{**CHANGED, "count": 1, "colour": "red"}])


def test_a_tool_example_with_a_misspelt_argument_names_it() -> None:
    with pytest.raises(InputError) as refused:

        @tool(example={"skuu": "bolt", "qty": 1})
        def pick(ctx: Any, sku: str, qty: int) -> dict[str, Any]:
            return {}

    assert str(refused.value) == (
        "tool 'pick': example has the unknown arguments ['skuu'] (did you mean 'sku' for "
        "'skuu'?); the tool takes ['qty', 'sku']"
    )


def test_a_misspelt_check_name_names_the_check_meant(desk: Path) -> None:
    from stockroom import SNAPSHOT, order, pick, recount  # the docs' module, on sys.path

    world = ToolWorld(SNAPSHOT, [pick, recount])
    world.reset(case=order("nut", 3))
    world.call("pick", {"sku": "nut", "qty": 3})
    save_episode(world, desk / "episode")
    world.close()
    done = onrecord("check", "envkit/diff_satisfies_rule", "--episode", desk / "episode")
    assert done.returncode == 3, done.stdout + done.stderr
    err = " ".join(done.stderr.split())
    assert (
        "no check named 'envkit/diff_satisfies_rule' for this episode (did you mean "
        "'envkit/diff_satisfies_rules'?): its checks are" in err
    )


def test_a_step_limited_episode_has_one_coverage_issue_naming_its_last_call(
    desk: Path,
) -> None:
    run = ("run", "stockroom:make", "--agent", "looper:looper", "--out", "runs/loop")
    done = onrecord(*run, cwd=desk, pythonpath=desk)
    assert done.returncode == 1, done.stdout + done.stderr
    one = "the episode ended with step_limit after step 10 (recount), not finished"
    trials = json.loads((desk / "runs/loop/report.json").read_bytes())["trials"]
    assert [trial["coverage_issues"] for trial in trials] == [[one], [one]]
    assert "without a successful finish call" not in done.stdout
    # Regrading re-derives the same line, and the run still verifies.
    regrade = onrecord("regrade", "runs/loop", "--name", "again", cwd=desk, pythonpath=desk)
    assert regrade.returncode == 1, regrade.stdout + regrade.stderr
    regraded = json.loads((desk / "runs/loop/regrades/again/report.json").read_bytes())
    assert [trial["coverage_issues"] for trial in regraded["trials"]] == [[one], [one]]
    verified = onrecord("verify", "runs/loop", "--no-progress", cwd=desk, pythonpath=desk)
    assert verified.returncode == 0, verified.stdout + verified.stderr


def _recount_issues(folder: Path, cause: str | None) -> tuple[str, ...]:
    """The coverage issues of a stockroom episode of one recount call, saved to
    ``folder``: stopped with ``cause`` declared, or (None) with no ending declared."""
    from stockroom import SNAPSHOT, order, pick, recount

    from onrecord.runner._toolplay import tool_world_trial

    world = ToolWorld(SNAPSHOT, [pick, recount])
    world.reset(case=order("nut", 3))
    world.call("recount", {"sku": "bolt", "qty": 0})
    if cause is not None:
        world.end_episode("stopped", error=cause)
    episode = save_episode(world, folder)
    world.close()
    return tool_world_trial(episode, []).coverage_issues


def test_an_episode_that_stopped_without_finishing_keeps_its_own_line(
    desk: Path, tmp_path: Path
) -> None:
    # An episode saved with no declared ending has no kit line to merge with.
    assert _recount_issues(tmp_path / "undeclared", None) == (
        "the episode ended after step 1 (recount) without a successful finish call",
    )


def test_an_ending_declared_with_its_cause_is_one_line_saying_where_it_stopped(
    desk: Path, tmp_path: Path
) -> None:
    # Before: the kit's line with the cause, then a second line for the same stop.
    assert _recount_issues(tmp_path / "stopped", "the harness lost its lease") == (
        "the episode ended with stopped: the harness lost its lease after step 1 (recount), "
        "not finished",
    )


def test_an_unknown_agent_where_there_are_no_reference_agents_says_so() -> None:
    # Before: "the reference agents of this environment are none; otherwise give ...".
    class Bare(GymnasiumProvider):
        def reference_agents(self) -> dict[str, Any]:
            return {}

    bare = Bare(lambda: gym.make("CartPole-v1"), environment_id="bare/v1")
    with pytest.raises(InputError) as refused:
        resolve_agent(bare, "carefull")
    assert str(refused.value) == (
        "unknown agent 'carefull': this environment has no reference agents; give 'module:callable'"
    )
    # No agent at all: nothing to list, only the form to give.
    with pytest.raises(InputError) as refused:
        resolve_agent(bare, "")
    assert str(refused.value) == "an agent is required: 'module:callable'"
