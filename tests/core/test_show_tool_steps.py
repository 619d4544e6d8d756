"""``onrecord show`` of a tool world's episodes says what became of each call, and
shortens long values where it says so.

Before: a ``ToolWorldEnv`` step whose call was rejected or failed read ``ok`` (the
capture status: the env answered), since the call's status is only in the step's info
and observation; a rejected call after the first 40 steps was left out by default; a
3,000-character action filled ~45 lines; errors and states were cut at 60 characters
without a word. Ordinary Gymnasium episodes (FrozenLake, CartPole) keep their table:
no ``call`` column, the status column the capture's."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest
from rich.console import Console

from onrecord import EvalCase
from onrecord.cli._run_episode import render_tool_calls
from onrecord.integrations.gymnasium import capture_episode
from tests.warm_client import run_onrecord

from . import show_tool_world

ROOT = Path(__file__).resolve().parents[2]
ROW = re.compile(r"^│ (\d+) +│ (\S+) +│(?: (\S+) +│)?", re.MULTILINE)


def _onrecord(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}
    return run_onrecord(list(args), env=env, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def evidence_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("show") / "episode.json"
    subprocess.run(
        [sys.executable, "-m", "tests.core.show_tool_world", str(path)],
        cwd=ROOT,
        check=True,
        timeout=120,
    )
    return path


def _shortened(text: str, length: str) -> bool:
    """Whether ``text`` has a value cut with ``… (LENGTH characters)`` (maybe wrapped)."""
    return re.search(rf"…[\s│]*\({length} characters\)", text) is not None


def _memo(text: str) -> int:
    """How many characters of the 3,000-character memo (all "q") ``text`` shows."""
    return text.count("q") - text.count("qty")


def _rows(text: str) -> dict[int, tuple[str, str]]:
    return {int(step): (status, call) for step, status, call in ROW.findall(text)}


def test_a_rejected_or_failed_call_reads_as_such(evidence_file: Path) -> None:
    done = _onrecord("show", str(evidence_file), "--steps", "all")
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "┃ step" in line)
    assert re.findall(r"┃ (\w+)", header) == [
        "step", "status", "call", "action", "reward", "error", "state",
    ]  # fmt: skip
    rows = _rows(done.stdout)
    assert rows[0] == ("ok", "rejected")  # the capture status stays "ok": the env answered
    assert rows[1] == ("ok", "error")
    assert rows[2] == ("ok", "rejected")
    assert rows[3] == ("ok", "ok")
    assert rows[49] == ("ok", "rejected")
    assert rows[50] == ("ok", "finished")
    flat = " ".join(done.stdout.split())  # (a cell may wrap: short phrases only)
    assert "rule_violation: there is no item 'zzz'" in flat
    assert "tool_error: pick: IntegrityError" in flat
    assert "unknown_tool: there is no tool" in flat
    assert "tool calls: 1 finished, 46 ok, 1 error, 3 rejected" in flat


def test_a_call_refused_after_the_first_steps_is_shown_by_default(evidence_file: Path) -> None:
    done = _onrecord("show", str(evidence_file))
    steps = sorted(_rows(done.stdout))
    assert steps == [*range(40), 49], steps  # 49: the late refused pick (was left out)
    assert "--steps 40-50 " in done.stdout  # the calls left out, to the log's last step


def test_a_long_action_is_shortened_with_its_length(evidence_file: Path) -> None:
    done = _onrecord("show", str(evidence_file), "--steps", "3")
    assert done.returncode == 0, done.stderr
    assert _memo(done.stdout) < 200  # was all 3,000, over ~45 lines
    assert _shortened(done.stdout, r"3,0\d\d"), done.stdout
    flat = " ".join(done.stdout.split())
    assert f"see them whole: onrecord show {evidence_file} --full" in flat
    whole = _onrecord("show", str(evidence_file), "--steps", "3", "--full")
    assert whole.returncode == 0, whole.stderr
    assert _memo(whole.stdout) == 3000
    assert "characters)" not in whole.stdout
    assert "--full" not in whole.stdout


def test_a_run_episode_of_a_gymnasium_tool_world_shows_its_calls(tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = _onrecord(
        "run", "tests.core.show_tool_world:make", "--agent", "clumsy", "--seeds", "0",
        "--out", str(run), "--no-progress", "--max-steps", "60",
    )  # fmt: skip
    assert done.returncode in (0, 1, 2), done.stderr
    shown = _onrecord("show", str(run), "--episode", "pick-nut#0")
    assert shown.returncode == 0, shown.stderr
    rows = _rows(shown.stdout)
    assert rows[0] == ("ok", "rejected")
    assert rows[1] == ("ok", "error")
    assert 49 in rows
    assert 45 not in rows
    flat = " ".join(shown.stdout.split())
    assert f"onrecord show {run} --episode pick-nut#0 --full" in flat
    whole = _onrecord("show", str(run), "--episode", "pick-nut#0", "--steps", "3", "--full")
    assert _memo(whole.stdout) == 3000


def test_a_saved_tool_world_episode_directory_shows_its_calls(tmp_path: Path) -> None:
    directory = show_tool_world.saved_episode(tmp_path / "episode")
    done = _onrecord("show", str(directory))
    assert done.returncode == 0, done.stderr
    assert "tool-world episode" in done.stdout  # the summary, as before
    # The calls' table, not the row changes printed after it (tests/test_show_row_history25).
    table = done.stdout.split("row changes")[0]
    calls = {int(step): (tool, status) for step, tool, status in ROW.findall(table)}
    assert calls[1] == ("pick", "rejected")
    assert calls[2] == ("pick", "error")
    assert calls[3] == ("nope", "rejected")
    assert calls[4] == ("pick", "ok")
    assert 45 not in calls
    assert 50 in calls
    flat = " ".join(done.stdout.split())
    assert "rule_violation: there is no item 'zzz'" in flat
    assert _shortened(done.stdout, r"3,0\d\d"), done.stdout
    assert f"onrecord show {directory} --full" in flat


@pytest.mark.parametrize(
    ("env_id", "actions"),
    [("FrozenLake-v1", [1, 2, 7, 1]), ("CartPole-v1", [0, 1, 5, 0])],  # 7, 5: outside the space
)
def test_ordinary_gymnasium_episodes_keep_their_table(
    env_id: str, actions: list[int], tmp_path: Path
) -> None:
    def interact(env: gym.Env, observation: object, info: object) -> str:  # type: ignore[type-arg]
        for action in actions:
            _, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        return "stopped"

    episode = capture_episode(
        lambda: gym.make(env_id),
        interact,
        case=EvalCase({"env": env_id}, case_id=env_id),
        environment_id=env_id,
        observer_id="none/v1",
        observe=lambda: None,
        seed=3,
        max_steps=20,
    )
    path = tmp_path / "episode.json"
    episode.save_json(path)
    done = _onrecord("show", str(path))
    assert done.returncode == 0, done.stderr
    header = next(line for line in done.stdout.splitlines() if "┃ step" in line)
    assert re.findall(r"┃ (\w+)", header) == [
        "step",
        "status",
        "action",
        "reward",
        "error",
        "state",
    ]
    statuses = [status for _, status, _ in ROW.findall(done.stdout)]
    assert statuses[:3] == ["ok", "ok", "invalid_action"]  # the capture's status, as before
    assert "tool calls" not in done.stdout
    assert "--full" not in done.stdout


def test_long_arguments_results_and_errors_of_tool_calls_are_shortened() -> None:
    events = [
        {"step": 1, "tool": "note", "status": "ok", "arguments": {"body": "w" * 500},
         "result": {"id": 1}, "error": None},
        {"step": 2, "tool": "note", "status": "rejected", "arguments": {},
         "result": None, "error": {"type": "rule_violation", "message": "z" * 400}},
    ]  # fmt: skip
    console = Console(record=True, width=400)  # wide enough that no cell wraps
    render_tool_calls(console, events, None, command="onrecord show RUN --episode c#0")
    text = console.export_text()
    assert _shortened(text, "511")  # {"body":"www…"} as JSON
    assert _shortened(text, "416")  # "rule_violation: zzz…"
    text = " ".join(text.split())
    assert "2 long value(s) shortened" in text
    assert "onrecord show RUN --episode c#0 --full" in text
    console = Console(record=True, width=200)
    render_tool_calls(console, events, None, full=True)
    text = console.export_text()
    assert text.count("w") == 500
    assert text.count("z") == 400
