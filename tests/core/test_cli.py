"""The command line, run as a real subprocess: verify, show, gate, compare, demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.cli.main import build_parser
from onrecord.episode import EpisodeEvidence
from onrecord.report import EvaluationReport

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
