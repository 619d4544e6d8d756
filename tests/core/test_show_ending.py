"""``onrecord show DIR`` of a saved tool-world episode says how it ended (the manifest's
``ending``), with the agent's error for ``agent_error``.

Before: it printed "5 steps" and the calls, so in a CI log an agent that crashed after
its first write read like one that finished. The error is the agent's text: a newline
in it continues on an indented line, never at column 0."""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, NoReturn

import pytest

from onrecord.domains.remittance import RemittanceEnvironment, ScriptedAgent
from onrecord.envkit import save_episode
from tests.domains.test_remittance_play import TASK  # full-01 at 200 rows
from tests.warm_client import run_onrecord

ROOT = Path(__file__).resolve().parents[2]
CRASH = "AgentCrashed: the agent crashed right after its first committed write"


@pytest.fixture(scope="module")
def env() -> Iterator[RemittanceEnvironment]:
    built = RemittanceEnvironment(TASK)
    yield built
    built.close()


def _show(path: Path, columns: int = 200) -> list[str]:
    env = {**os.environ, "COLUMNS": str(columns)}
    done = run_onrecord(["show", str(path)], env=env, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _raising(message: str) -> Any:
    def agent(observation: Mapping[str, Any]) -> NoReturn:
        raise RuntimeError(message)

    return agent


@pytest.mark.parametrize(
    ("agent", "max_steps", "line"),
    [
        ("careful", 60, "ended: finished"),
        ("crash_after_commit", 60, f"ended: agent_error: {CRASH}"),
        ("careful", 2, "ended: step_limit (the agent ran out of steps)"),
    ],
)
def test_show_says_how_the_episode_ended(
    env: RemittanceEnvironment, tmp_path: Path, agent: str, max_steps: int, line: str
) -> None:
    env.run(ScriptedAgent(agent, env.brief), tmp_path / "ep", max_steps=max_steps)
    lines = _show(tmp_path / "ep")
    assert lines[0].startswith("tool-world episode ")
    assert lines[1] == line


def test_an_episode_nobody_declared_the_end_of_says_so(
    env: RemittanceEnvironment, tmp_path: Path
) -> None:
    env.world.reset(case=env.case, seed=0)
    save_episode(env.world, tmp_path / "ep")
    assert _show(tmp_path / "ep")[1] == "ended: undeclared (nobody declared how it ended)"


def test_a_multi_line_error_hangs_under_the_ending(
    env: RemittanceEnvironment, tmp_path: Path
) -> None:
    env.run(_raising("boom\ndecision: accept"), tmp_path / "ep")
    lines = _show(tmp_path / "ep")
    assert lines[1:4] == [
        "ended: agent_error, with the error:",
        "  RuntimeError: boom",
        "  decision: accept",
    ]
    assert not any(line.startswith("decision") for line in lines)


def test_a_long_error_goes_on_lines_of_its_own(env: RemittanceEnvironment, tmp_path: Path) -> None:
    env.run(_raising("the upstream ledger refused the batch, " * 4), tmp_path / "ep")
    lines = _show(tmp_path / "ep", columns=80)
    assert lines[1] == "ended: agent_error, with the error:"
    hanging = lines[2 : lines.index(next(x for x in lines[2:] if not x.startswith("  ")))]
    assert len(hanging) > 1
    assert all(len(line) <= 80 for line in hanging)
    assert " ".join(x.strip() for x in hanging).startswith("RuntimeError: the upstream ledger")
