"""The public API as a ``mypy --strict`` user sees it.

``tests/typing_user/`` holds scripts written the way the docs teach, annotated as a
careful user annotates them (a factory returning ``gym.Env[NDArray[np.float32], int]``,
checks ``(EpisodeEvidence) -> OutcomeVerdict``, a frozen-dataclass ``WorldModel``, tools
and agent factories, a ``GymnasiumProvider`` observer typed for the user's own env).
One mypy run checks them all, plus misuse that must be reported, so an annotation that
rejects correct user code (or accepts wrong code) fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

USER_SCRIPTS = Path(__file__).parent / "typing_user"

# Misuse a user's type checker must catch: (marker, error text mypy must print there).
MISUSE = """
from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck
from onrecord.integrations.gymnasium import capture_episode
import gymnasium as gym

def make() -> gym.Env[object, int]:
    return gym.make("CartPole-v1")

def interact(env: object, observation: object, info: dict[str, object]) -> str:
    return "done"

episode = capture_episode(
    make, interact, case=EvalCase("t", case_id="t"), environment_id="e", observer_id="o",
    observe=lambda: None, seed=1,
    max_steps="20",  # MISUSE: max_steps
)

def lenient(episode: EpisodeEvidence) -> bool:
    return True

check = OutcomeCheck("lenient", "v1", lenient)  # MISUSE: check returns bool

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.report import EvaluationReport
def decide(report: EvaluationReport) -> None:
    verdict = AcceptancePolicy((CheckRequirement("x"),)).evaluate(report).decision
    if verdict == "accepted":  # MISUSE: not a decision
        pass
    if AcceptancePolicy(()).evaluate(report).exit_code == 3:  # MISUSE: exit code
        pass

from typing import Any
from onrecord.dynamics import Transitions, capture_forecast, capture_forecasts
saved: dict[str, Any] = {"initial": {"state": [0.0]}, "steps": []}  # an episode's JSON
saved_list = [saved]
spec: dict[str, Any] = dict(model_id="m", contract="c", coordinates={"x": "m"}, horizons=[1])
Transitions.from_episodes(saved_list)  # MISUSE: from_episodes dict
capture_forecast(saved, print, **spec)  # MISUSE: capture_forecast dict
capture_forecasts(saved_list, print, **spec)  # MISUSE: capture_forecasts dict
"""


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, str]:
    """One ``mypy --strict`` run over every user script and the misuse module."""
    pytest.importorskip("mypy")
    work = tmp_path_factory.mktemp("user_typing")
    misuse = work / "misuse.py"
    misuse.write_text(MISUSE, encoding="utf-8")
    config = work / "mypy.ini"  # the user's own strict settings, not the repo's config
    config.write_text("[mypy]\nstrict = True\nwarn_unused_ignores = True\n", encoding="utf-8")
    scripts = sorted(USER_SCRIPTS.glob("*.py"))
    assert scripts
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(config),
            "--cache-dir",
            str(work / "cache"),
            "--no-error-summary",
            "--hide-error-context",
            *map(str, scripts),
            str(misuse),
        ],
        capture_output=True,
        text=True,
        cwd=work,
        timeout=600,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def test_documented_user_code_type_checks_strictly(mypy_output: tuple[int, str]) -> None:
    _, output = mypy_output
    problems = [line for line in output.splitlines() if "misuse.py" not in line]
    assert problems == [], "\n".join(problems)


@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        ("MISUSE: max_steps", r'"max_steps".*incompatible type "str"; expected "int"'),
        ("MISUSE: check returns bool", r"Callable\[\[EpisodeEvidence\], bool\]"),
        ("MISUSE: not a decision", r"Non-overlapping equality check"),
        ("MISUSE: exit code", r"Non-overlapping equality check.*Literal\[0, 1, 2\]"),
        ("MISUSE: from_episodes dict", r'"from_episodes".*"Iterable\[EpisodeEvidence\]"'),
        ("MISUSE: capture_forecast dict", r'"capture_forecast".*"EpisodeEvidence"'),
        ("MISUSE: capture_forecasts dict", r'"capture_forecasts".*"Sequence\[EpisodeEvidence\]"'),
    ],
)
def test_misuse_is_reported(mypy_output: tuple[int, str], marker: str, expected: str) -> None:
    returncode, output = mypy_output
    assert returncode == 1, output
    line = next(n for n, text in enumerate(MISUSE.splitlines(), 1) if marker in text)
    at_line = [text for text in output.splitlines() if f"misuse.py:{line}:" in text]
    assert any(re.search(expected, text) for text in at_line), output
