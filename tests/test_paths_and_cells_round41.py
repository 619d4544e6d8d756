"""Round 41: a JSON path in a portability error quotes a key that is no plain
identifier (``{"a.b": nan}`` and ``{"a": {"b": nan}}`` read alike, and a key holding a
newline printed a line inside the error); a table cell shows a newline in record text
as ``\\n`` (a case id ``"c1\\ndecision: accept"`` read as two rows, and at column 0 in a
stacked table); ``compare --markdown`` stays under its cap with its one-sided-measures
note. Real Gymnasium episodes, real report files, the installed ``onrecord``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.cli._markdown_fit import MARKDOWN_LIMIT
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium import capture_episode
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord

FORGED = "boom\ndecision: accept"


class _Reporting(gym.Env[int, int]):
    """An environment whose reset info is ``info``."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, info: dict[Any, Any]) -> None:
        self.info = info

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[Any, Any]]:
        super().reset(seed=seed)
        return 0, self.info

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, True, False, {}


def _capture(info: dict[Any, Any], observe: Any = dict) -> Any:
    def interact(env: Any, observation: Any, info: Any) -> None:
        env.step(0)

    return capture_episode(
        lambda: _Reporting(info),
        interact,
        case=EvalCase(None, case_id="c"),
        environment_id="reporting",
        observer_id="obs",
        observe=observe,
        seed=0,
        max_steps=5,
    )


@pytest.mark.parametrize(
    ("info", "path"),
    [
        ({"boom": math.nan}, "$.initial.info.boom"),  # a plain key reads as before
        ({"a.b": math.nan}, '$.initial.info["a.b"]'),
        ({"a": {"b": math.nan}}, "$.initial.info.a.b"),
        ({FORGED: math.nan}, '$.initial.info["boom\\ndecision: accept"]'),
        ({"": math.nan}, '$.initial.info[""]'),
        ({"x y": {"0": [1, math.inf]}}, '$.initial.info["x y"]["0"][1]'),
        ({"é": math.nan}, '$.initial.info["\\u00e9"]'),
    ],
)
def test_a_reset_infos_key_is_quoted_in_the_path(info: dict[str, Any], path: str) -> None:
    with pytest.raises(PortabilityError) as caught:
        _capture(info)
    assert caught.value.path == path
    message = str(caught.value)
    assert message.startswith(f"{path} is ")
    assert "\n" not in message


def test_a_non_string_key_is_named_on_one_line_by_the_object_holding_it() -> None:
    class Odd:
        def __repr__(self) -> str:
            return FORGED

    for key, shown in ((3, "3"), (Odd(), "boom\\ndecision: accept")):
        with pytest.raises(PortabilityError) as caught:
            _capture({"inner": {key: 1}})
        assert caught.value.path == "$.initial.info.inner"
        assert str(caught.value).startswith(f"$.initial.info.inner has the key {shown} of type ")
        assert "JSON object keys must be strings" in str(caught.value)
        assert "\n" not in str(caught.value)


def test_an_observers_key_is_quoted_in_its_recorded_error() -> None:
    episode = _capture({}, observe=lambda: {"tile": {FORGED: math.nan}})
    error = episode.data["initial"]["observer_error"]
    assert '$.state.tile["boom\\ndecision: accept"] is nan' in str(error)
    assert "\n" not in str(error)


# Record text a check or a case can hold.
CHECK = "posted\ndecision: accept"
CASE = "c1\ndecision: accept"
SHOWN_CASE = "c1\\ndecision: accept"


def _report(path: Path, statuses: list[str], model: str, *, extra: int = 0) -> Path:
    trials = [
        Trial(
            {"case_id": case, "content_digest": "d" * 64},
            0,
            {"kind": "test", "name": model},
            (CheckResult(CHECK, "v1", status, "refund sent twice\n  - accept"),),
            settings={"environment_id": "env"},
        )
        for case, status in zip((CASE, "c2"), statuses, strict=True)
    ]
    return EvaluationReport.from_trials(trials).save_json(path)


@pytest.mark.parametrize("columns", [200, 60])
def test_table_cells_show_a_newline_as_an_escape(tmp_path: Path, columns: int) -> None:
    a = _report(tmp_path / "a.json", ["fail", "pass"], "m")
    b = _report(tmp_path / "b.json", ["pass", "fail"], "n")
    policy = AcceptancePolicy((CheckRequirement(CHECK),), name="release")
    runs = {
        "show": onrecord("show", a, columns=columns),
        "gate": onrecord(
            "gate", a, "--policy", policy.save_json(tmp_path / "p.json"), columns=columns
        ),
        "compare": onrecord("compare", a, b, columns=columns),
    }
    for command, done in runs.items():
        assert done.returncode in (0, 1), (command, done.stderr)
        lines = done.stdout.splitlines()
        # Only onrecord's own verdict line starts at column 0 with "decision".
        forged = [line for line in lines if line.startswith("decision: accept")]
        assert not forged, (command, done.stdout)
        # The check's name is one cell, its newline shown (narrow, it wraps at its space).
        assert "posted\\ndecision:" in done.stdout, (command, done.stdout)
    # The episode column of the gate's results not passed: one cell, one line.
    assert SHOWN_CASE + "#0" in runs["gate"].stdout


def _many(path: Path, statuses: tuple[str, str], measures: dict[str, float]) -> Path:
    names = [f"rule_{index:03}_{'x' * 60}" for index in range(120)]
    trials = [
        Trial(
            {"case_id": f"case-{case:03}-{'y' * 40}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            tuple(CheckResult(name, "v1", statuses[case % 2], "r") for name in names),
            measures=measures,
            settings={"environment_id": "env"},
        )
        for case in range(12)
    ]
    return EvaluationReport.from_trials(trials).save_json(path)


def test_a_huge_compare_summary_with_its_note_stays_under_the_cap(tmp_path: Path) -> None:
    # Every check discordant on every case; measures on one side only, the note long.
    only_a = {f"measure_only_in_a_{index:02}_{'z' * 30}": 1.0 for index in range(25)}
    a = _many(tmp_path / "a.json", ("pass", "fail"), only_a)
    b = _many(tmp_path / "b.json", ("fail", "pass"), {})
    summary = tmp_path / "summary.md"
    done = onrecord("compare", a, b, "--markdown", summary)
    assert done.returncode == 0, done.stderr
    written = summary.read_text(encoding="utf-8")
    assert len(written) <= MARKDOWN_LIMIT
    lines = written.splitlines()
    assert lines[0].startswith("### onrecord compare: 12 paired trials")
    assert lines[-1].startswith("<sub>onrecord ")  # the footer is last, kept
    assert all(line.endswith("|") for line in lines if line.startswith("|"))
    (left_out,) = [line for line in lines if line.startswith("… left out to keep")]
    assert "every one: the terminal output of `onrecord compare`" in left_out
    (note,) = [line for line in lines if line.startswith("_Measures only in A: ")]
    assert "not compared" in note
    assert "| rule\\_000\\_" in written  # the first checks are listed
