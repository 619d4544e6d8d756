"""The command line, run as a real subprocess: verify, show, gate, compare, demo."""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.cli.main import build_parser
from onrecord.episode import EpisodeEvidence
from onrecord.report import EvaluationReport
from tests.core.envs import GenericEnv, capture_generic

DOCS = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def onrecord(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "onrecord.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def files(
    tmp_path_factory: pytest.TempPathFactory,
    goal_episode: EpisodeEvidence,
    frozenlake_report: EvaluationReport,
) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("cli")
    paths = {
        "episode": folder / "episode.json",
        "report": folder / "report.json",
        "policy": folder / "policy.json",
        "strict": folder / "strict.json",
    }
    goal_episode.save_json(paths["episode"])
    frozenlake_report.save_json(paths["report"])
    AcceptancePolicy((CheckRequirement("reached_goal"),)).save_json(paths["policy"])
    AcceptancePolicy((CheckRequirement("missing_check"),)).save_json(paths["strict"])
    return paths


def test_verify_accepts_good_files(files: dict[str, Path]) -> None:
    result = onrecord("verify", str(files["episode"]), str(files["report"]), str(files["policy"]))
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("ok  ") == 3


def test_verify_names_a_tampered_file(files: dict[str, Path], tmp_path: Path) -> None:
    tampered = tmp_path / "episode.json"
    tampered.write_bytes(files["episode"].read_bytes().replace(b'"tile":15', b'"tile":14'))
    result = onrecord("verify", str(tampered))
    assert result.returncode == 3
    assert "the evidence was changed after it was recorded" in result.stderr


def test_show_prints_tables(files: dict[str, Path]) -> None:
    episode = onrecord("show", str(files["episode"]))
    assert episode.returncode == 0
    assert "frozenlake/goal" in episode.stdout
    report = onrecord("show", str(files["report"]))
    assert "reached_goal" in report.stdout
    assert "pass^k" in report.stdout


def test_gate_exit_codes(files: dict[str, Path], tmp_path: Path) -> None:
    accept = onrecord(
        "gate",
        str(files["report"]),
        "--policy",
        str(files["policy"]),
        "--output",
        str(tmp_path / "decision.json"),
    )
    assert accept.returncode == 0
    assert "accept" in accept.stdout
    assert json.loads((tmp_path / "decision.json").read_text())["decision"] == "accept"
    undecided = onrecord("gate", str(files["report"]), "--policy", str(files["strict"]))
    assert undecided.returncode == 2


def test_compare_with_itself(files: dict[str, Path]) -> None:
    result = onrecord("compare", str(files["report"]), str(files["report"]))
    assert result.returncode == 0, result.stderr
    assert "McNemar" in result.stdout


def test_missing_file_is_a_clear_error() -> None:
    result = onrecord("verify", "/nonexistent/evidence.json")
    assert result.returncode == 3
    assert "no such file: /nonexistent/evidence.json" in result.stderr


@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_directory_instead_of_a_file_is_a_clear_error(command: str, tmp_path: Path) -> None:
    result = onrecord(command, str(tmp_path))
    assert result.returncode == 3
    assert f"{tmp_path} is a directory; give the path of a saved record file" in result.stderr
    assert "Traceback" not in result.stderr


def test_every_command_has_help_and_a_docs_entry() -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    documented = DOCS.read_text()
    for name in commands:
        assert onrecord(name, "--help").returncode == 0
        assert f"## `onrecord {name}" in documented, f"docs/cli.md lacks onrecord {name}"


@pytest.fixture(scope="module")
def long_episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 attempts; attempt 45 raised in the environment."""

    def step(env: GenericEnv, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        if env.steps_taken == 46:
            raise ConnectionError("simulator dropped the connection")
        return env.observation_space.sample(), 0.0, False, False, {}

    def interact(wrapped: Any, observation: Any, info: Any) -> None:
        for _ in range(60):
            with contextlib.suppress(ConnectionError):
                wrapped.step(0)

    path = tmp_path_factory.mktemp("long") / "episode.json"
    capture_generic(GenericEnv(step), interact, max_steps=60).save_json(path)
    return path


def _step_rows(output: str) -> list[str]:
    """The first cell of every table row that is a step or a gap marker (a long error
    message, such as one naming the line that raised it, wraps onto rows with none)."""
    cells = [line.split("│")[1].strip() for line in output.splitlines() if line.startswith("│")]
    return [cell for cell in cells if cell]


def test_show_prints_the_first_steps_and_every_failed_one(long_episode: Path) -> None:
    result = onrecord("show", str(long_episode))
    assert result.returncode == 0, result.stderr
    rows = _step_rows(result.stdout)
    assert rows == [*map(str, range(40)), "…", "45", "…"]
    assert "simulator dropped the connection" in result.stdout
    # (joined: the line wraps when COLUMNS is narrower than it)
    # The steps left out after the first 40, to the episode's last (0-59), not 100-160.
    assert "--steps 40-59 (or --steps all)" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("50-52", ["…", "50", "51", "52", "…"]),
        ("0", ["0", "…"]),
        ("all", list(map(str, range(60)))),
    ],
)
def test_show_prints_the_steps_asked_for(
    long_episode: Path, spec: str, expected: list[str]
) -> None:
    result = onrecord("show", str(long_episode), "--steps", spec)
    assert result.returncode == 0, result.stderr
    assert _step_rows(result.stdout) == expected


@pytest.mark.parametrize("spec", ["x", "5-", "-5", "9-3"])
def test_show_refuses_a_bad_step_range(long_episode: Path, spec: str) -> None:
    result = onrecord("show", str(long_episode), f"--steps={spec}")
    assert result.returncode == 3
    assert "write 'all', a step like 42 or a range like 100-160" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("gate", "report.json", "--polcy", "policy.json"),  # a typo in a flag
        ("gate", "report.json"),  # a required flag left out
        ("no-such-command",),
        (),
        ("compare", "a.json"),
    ],
    ids=["typo", "missing-flag", "unknown-command", "no-command", "missing-argument"],
)
def test_usage_errors_are_exit_3_not_indeterminate(args: tuple[str, ...]) -> None:
    """argparse's own exit code for a usage error is 2, which here means indeterminate."""
    done = onrecord(*args)
    assert done.returncode == 3, done.stderr
    assert "error:" in done.stderr
    assert "Traceback" not in done.stderr
