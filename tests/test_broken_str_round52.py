"""An exception whose ``__str__`` raises, met where onrecord words a message from a
user's exception (an agent factory, a tool-world agent's builder, a module imported by
name, a model's answer): it is still recorded, or refused, with the other parts of the
message (before: formatting it raised again and lost the episode, or a traceback)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord.dynamics import capture_forecast
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord


def _run(folder: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """The real CLI, as a user runs it: PYTHONPATH set to the folder of their module."""
    return onrecord(*args, cwd=folder, pythonpath=folder, timeout=120)


BROKEN = """
class Broken(Exception):
    def __str__(self):
        raise RuntimeError("no text")
"""
UNSHOWN = "Broken: <str() of this exception raised RuntimeError>"


def _module(folder: Path, body: str) -> Path:
    (folder / "broken_agents.py").write_text(BROKEN + body)
    return folder


def _recorded_whole(result: subprocess.CompletedProcess[str]) -> None:
    """The run recorded its episode and was decided on it (before: "not recorded", and
    the run left incomplete)."""
    assert "not recorded" not in result.stdout, result.stdout
    assert "episodes are missing" not in result.stdout, result.stdout
    assert result.returncode in (1, 2), result.stdout + result.stderr


def test_an_agent_factory_raising_an_unprintable_error_is_recorded(tmp_path: Path) -> None:
    """The episode is the agent's failure, recorded as AgentSetupError, as for any
    factory that raises; before, it was "not recorded" and retried on every resume."""
    folder = _module(
        tmp_path,
        "from onrecord.runner import agent_factory\n"
        "@agent_factory\n"
        "def build(context):\n"
        "    raise Broken()\n",
    )
    run = tmp_path / "run"
    result = _run(
        folder, "run", "cartpole", "--agent", "broken_agents:build", "--seeds", "0", "--out", run
    )
    _recorded_whole(result)
    trials = json.loads((run / "report.json").read_text())["trials"]
    assert len(trials) == 1
    shown = _run(folder, "show", run, "--episode", "cartpole/survive-500#0")
    assert "AgentSetupError" in shown.stdout, shown.stdout
    assert UNSHOWN in shown.stdout, shown.stdout


def test_a_tool_world_agent_whose_builder_raises_unprintably_is_recorded(
    tmp_path: Path,
) -> None:
    folder = _module(tmp_path, "def build(brief):\n    raise Broken()\n")
    run = tmp_path / "run"
    result = _run(
        folder, "run", "remittance", "-a", "broken_agents:build", "--tasks", "full-01", "-o", run
    )
    _recorded_whole(result)
    (line,) = (run / "episodes.jsonl").read_text().splitlines()
    assert json.loads(line)["evidence"]["agent_error"] == (
        "AgentSetupError: building the agent raised " + UNSHOWN
    )


def test_an_agent_module_whose_import_raises_unprintably_is_refused_by_name(
    tmp_path: Path,
) -> None:
    (tmp_path / "broken_import.py").write_text(BROKEN + "raise Broken()\n")
    result = _run(
        tmp_path, "run", "cartpole", "--agent", "broken_import:interact", "--out", tmp_path / "run"
    )
    assert result.returncode == 3, result.stdout + result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "broken_import" in result.stderr
    assert UNSHOWN in result.stderr, result.stderr


def test_a_model_answer_that_raises_unprintably_when_read_is_a_model_error() -> None:
    namespace: dict[str, object] = {}
    exec(BROKEN, namespace)
    broken = namespace["Broken"]
    assert isinstance(broken, type)

    class Unreadable:
        def __array__(self, *args: object, **kwargs: object) -> np.ndarray:
            raise broken()

    holder: dict[str, gym.Env[object, object]] = {}

    def factory() -> gym.Env[object, object]:
        holder["env"] = gym.make("CartPole-v1")
        return holder["env"]

    def interact(env: gym.Env[object, object], observation: object, info: object) -> str:
        for _ in range(3):
            env.step(0)
        return "done"

    reference = capture_episode(
        factory,
        interact,
        case=EvalCase("c", case_id="cp"),
        environment_id="CartPole-v1",
        observer_id="o",
        observe=lambda: {"state": [float(v) for v in holder["env"].unwrapped.state]},  # type: ignore[attr-defined]
        seed=7,
        max_steps=3,
    )
    forecast = capture_forecast(
        reference,
        lambda request: {"states": Unreadable()},
        planned_actions=[0, 0, 0],
        model_id="m/v1",
        contract="c/v1",
        coordinates={"x": "m", "v": "m/s", "a": "rad", "w": "rad/s"},
        horizons=[1],
    )
    assert forecast.data["status"] == "model_error"
    assert UNSHOWN in forecast.data["error"]["message"]


@pytest.fixture(autouse=True)
def _no_ray(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ONRECORD_EXECUTOR", raising=False)
