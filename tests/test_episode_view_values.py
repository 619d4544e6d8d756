"""``onrecord show`` of an episode, and the HTML report's step timeline, say what a
step's missing values mean and show values as JSON: an action refused before it reached
the environment reads "not sent" (it was "None"), a step whose observer raised shows the
observer's error where its state goes (it was "None", the error only under the table),
a state is JSON, so the text "1" and the number 1 read apart (it was a Python repr:
{'label': '1'}), and ``show`` gives each step's reward (what tells the goal from a hole
when both terminate)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence
from onrecord.html._episode import _gym_view
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord


def _episode() -> EpisodeEvidence:
    held: dict[str, Any] = {"reads": 0}

    def factory() -> gym.Env[Any, Any]:
        held["env"] = gym.make("FrozenLake-v1", is_slippery=False)
        return held["env"]

    def observe() -> dict[str, Any]:
        held["reads"] += 1
        if held["reads"] == 3:  # after reset, after the refused step, then this one
            raise RuntimeError("db connection lost")
        return {"label": "1", "cell": int(held["env"].unwrapped.s)}

    def interact(env: Any, observation: Any, info: Any) -> None:
        with pytest.raises(Exception, match="not in the action space"):
            env.step(7)
        for action in (2, 2, 1):
            env.step(action)

    return capture_episode(
        factory,
        interact,
        case=EvalCase("walk", case_id="walk-1"),
        environment_id="FrozenLake-v1",
        observer_id="cell/v1",
        observe=observe,
        seed=0,
        max_steps=10,
    )


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("view") / "episode.json"
    _episode().save_json(path)
    return path


def _row(out: str, step: int) -> list[str]:
    """The cells of a step's first table line."""
    for line in out.splitlines():
        cells = [cell.strip() for cell in line.split("│")[1:-1]]
        if cells and cells[0] == str(step):
            return cells
    raise AssertionError(f"no row for step {step} in:\n{out}")


def test_show_says_not_sent_observer_failed_and_writes_states_as_json(saved: Path) -> None:
    shown = onrecord("show", saved, "--full", columns=220)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    refused, failed_read, walked = (_row(shown.stdout, step) for step in (0, 1, 2))
    assert refused[1:4] == ["invalid_action", "not sent", ""]  # no reward: never ran
    assert refused[5] == '{"cell":0,"label":"1"}'
    assert failed_read[2:4] == ["2", "0.0"]
    # the error's place follows; how much of it fits on the first line depends on the
    # checkout's path, so only the error is asserted here
    assert failed_read[5].startswith("observer failed: RuntimeError: db connection lost")
    assert walked[3:6] == ["0.0", "", '{"cell":2,"label":"1"}']
    assert "None" not in shown.stdout
    assert "'label'" not in shown.stdout


def test_the_html_timeline_says_the_same(saved: Path) -> None:
    view: dict[str, Any] = {}
    _gym_view(view, EpisodeEvidence.load(saved))
    refused, failed_read, walked = view["timeline"][:3]
    assert refused["label"] == "not sent"
    assert refused["state"] == '{"cell":0,"label":"1"}'
    assert failed_read["label"] == "2"
    assert failed_read["state"].startswith("observer failed: RuntimeError: db connection lost")
    assert walked["state"] == '{"cell":2,"label":"1"}'
