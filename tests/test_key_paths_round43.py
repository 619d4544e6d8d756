"""Round 43: a dict key cannot read as another place. ``show --episode`` names a check's
evidence keys bare when they read as nothing else (``steps``, ``diff.CL-100046``) and
JSON-quoted in brackets otherwise (``["a.b"]``, ``diff["x\\ny"]``): joined with dots,
``{"a.b": 1}`` and ``{"a": {"b": 1}}`` both read ``a.b``, and a key holding a newline
split its row. A Gymnasium Dict space's key is quoted in the path of a refused sample.
A real run directory, the installed ``onrecord``, a real Gymnasium environment."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord import EvalCase
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode
from onrecord.runner import plan_run, start_run
from tests.runner.conftest import onrecord

LONG = "x" * 100
"""A value long enough that the mapping holding it is split a row per key."""


def _tricky(episode: EpisodeEvidence) -> OutcomeVerdict:
    evidence = {
        "steps": episode.measures["steps"],
        "a.b": 1,
        "diff": {"CL-100046": LONG, "a.b": LONG, "x\ny": 3, "": 4, " pad": 5, "é": 6},
        "line\nbreak": [7, 8],
    }
    return OutcomeVerdict(False, "never passes", evidence)


TRICKY = [OutcomeCheck("tricky", "v1", _tricky)]
"""A check whose evidence holds keys a dotted path would make ambiguous."""


def _key_cells(output: str) -> list[str]:
    """The key column of the evidence table (check │ key │ value)."""
    table = output.split("evidence of the checks not passed", 1)[1]
    rows = [line.split("│") for line in table.splitlines() if line.count("│") == 4]
    return [row[2].strip() for row in rows if row[2].strip() not in ("", "key")]


def test_show_episode_quotes_only_the_evidence_keys_that_would_read_as_another(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    start_run(
        run,
        plan_run(
            "tests.runner.helpers:lake",
            "tests.runner.helpers:walker",
            tasks=[EvalCase(None, case_id="c1")],
            checks=["tests.test_key_paths_round43:TRICKY"],
        ),
    )
    shown = onrecord("show", str(run), "--episode", "c1#0", "--no-progress")
    assert shown.returncode == 0, shown.stderr
    # In the record's order: canonical JSON sorts keys.
    assert _key_cells(shown.stdout) == [
        '["a.b"]',
        'diff[""]',
        'diff[" pad"]',
        "diff.CL-100046",
        'diff["a.b"]',
        'diff["x\\ny"]',
        "diff.é",
        '["line\\nbreak"][0]',
        '["line\\nbreak"][1]',
        "steps",
    ], shown.stdout


class _DottedDict(gym.Env[Any, int]):
    """A Dict observation space whose key holds a dot; its step's sample is off it."""

    observation_space = gym.spaces.Dict({"a.b": gym.spaces.Dict({"x": gym.spaces.Discrete(2)})})
    action_space = gym.spaces.Discrete(2)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return {"a.b": {"x": 0}}, {}

    def step(self, action: int) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return {"a.b": {"y": 1}}, 0.0, True, False, {}


def test_a_dict_space_key_is_quoted_in_a_refused_samples_path() -> None:
    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    with pytest.raises(PortabilityError) as caught:
        capture_episode(
            _DottedDict,
            interact,
            case=EvalCase(None, case_id="c"),
            environment_id="dotted",
            observer_id="obs",
            observe=dict,
            seed=0,
            max_steps=3,
        )
    # Not "$.steps.observation.a.b[0]": that is the key "b" of a Dict "a".
    assert caught.value.path == '$.steps.observation["a.b"][0]'
    assert str(caught.value).startswith('$.steps.observation["a.b"][0] is dict ')
