"""``onrecord run ENV`` without ``--agent`` (and ``plan_run`` given no agent) names the
environment's reference agents to choose from; before, the command said only "name the
environment and the agent", and ``plan_run`` "a reference agent name or
'module:callable'", leaving the names to find in the docs."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord.errors import InputError
from onrecord.runner import plan_run
from tests.cli_process import onrecord


def test_the_command_lists_the_reference_agents_and_creates_nothing(tmp_path: Path) -> None:
    done = onrecord("run", "frozenlake", "--out", tmp_path / "run", "--no-progress")
    assert done.returncode == 3, done.stdout + done.stderr
    said = " ".join(done.stderr.split())
    assert (
        "an agent is required: one of this environment's reference agents "
        "['gives_up_early', 'walks_into_hole', 'walks_to_goal'] or 'module:callable'"
    ) in said, said
    assert not (tmp_path / "run").exists()


def test_without_an_environment_the_command_asks_for_both(tmp_path: Path) -> None:
    done = onrecord("run", "--out", tmp_path / "run")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "name the environment and the agent" in done.stderr


@pytest.mark.parametrize("agent", ["", "   "])
def test_plan_run_names_them_too(agent: str) -> None:
    with pytest.raises(InputError) as refused:
        plan_run("cartpole", agent)
    assert str(refused.value) == (
        "an agent is required: one of this environment's reference agents "
        "['always_left', 'balances'] or 'module:callable'"
    )
