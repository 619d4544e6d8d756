"""A saved episode given where another record is needed says what it is and what reads
it; ``onrecord check`` imports its domains only to print its help; and a name spelling an
escape (``\\n``, ``\\u001b``) prints unlike one holding the control.

Before: ``run --resume --out EP`` said "not a run directory (it has no run.json)", ``run
--out EP`` "pass --resume", ``show EP --episode`` / ``--all-not-passed`` "needs a run
directory", ``worldmodel analyze --replay EP`` and ``ledger analyze EP`` named a manifest
schema, ``check --episode EP/manifest.json`` said the file "has no manifest.json"; every
``check`` imported the remittance package for its help text; and a case id holding a
backslash and ``n`` printed exactly as one holding a newline."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from onrecord import EvalCase
from onrecord.cli._render import cell, plain
from onrecord.cli.main import main
from onrecord.integrations.gymnasium import capture_episode
from tests import test_saved_episode_round48 as round48

episode = round48.episode  # the fixture: one careful full-01 episode per module

SAVED = "is a saved tool-world episode (save_episode, remittance task full-01), not"


def _refusal(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    code = main([str(arg) for arg in args])
    printed, err = capsys.readouterr()
    assert (code, printed) == (3, "")
    return " ".join(err.split())  # the error wraps to the terminal


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["run", "--resume", "--out", "{ep}"], "start a new run in a new directory: "),
        (["run", "--resume", "{ep}"], "`onrecord run --resume` continues an interrupted run"),
        (["run", "--resume", "--out", "{ep}/manifest.json"], "a saved episode is one finished"),
        (["run", "remittance", "-a", "careful", "--out", "{ep}"], "Choose another --out"),
        (["show", "{ep}", "--episode", "full-01#0"], "Show it without --episode: `onrecord show"),
        (["show", "{ep}/task.json", "--episode", "x"], "it is itself one episode"),
        (["show", "{ep}", "--all-not-passed"], "a saved episode holds no grading"),
        (["worldmodel", "analyze", "--replay", "{ep}"], "not a `worldmodel run` directory"),
        (["ledger", "analyze", "{ep}"], "not a `ledger run` directory"),
    ],
)
def test_a_saved_episode_given_as_another_record_says_what_it_is(
    episode: Path, capsys: pytest.CaptureFixture[str], args: list[str], says: str
) -> None:
    before = sorted(p.name for p in episode.iterdir())
    message = _refusal(capsys, *(arg.format(ep=episode) for arg in args))
    assert f"{episode} {SAVED}" in message
    assert says in message
    assert f"`onrecord show {episode}`" in message
    assert sorted(p.name for p in episode.iterdir()) == before  # nothing written in it


def test_run_refusals_name_the_run_that_records_the_episode(
    episode: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = _refusal(capsys, "run", "--resume", "--out", episode)
    assert f"`onrecord check NAME... --episode {episode}`" in message
    assert message.endswith("`onrecord run remittance --agent AGENT --tasks full-01 --out RUN`")


def test_show_episode_of_one_episodes_evidence_says_how_to_show_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    evidence = capture_episode(
        lambda: gym.make("CartPole-v1"),
        lambda env: env.step(0),
        case=EvalCase("c1"),
        environment_id="CartPole-v1",
        observer_id="none",
        observe=lambda: None,
        seed=1,
        max_steps=5,
    )
    saved = evidence.save_json(tmp_path / "one.json")
    message = _refusal(capsys, "show", saved, "--episode", "c1#0")
    assert f"{saved} is one episode's evidence (EpisodeEvidence), not a run directory" in message
    assert f"Show it without --episode: `onrecord show {saved}`" in message


def test_check_reads_a_saved_episode_named_by_a_file_in_it(
    episode: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["check", "expected_changes", "--episode", str(episode / "manifest.json")])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("pass            expected_changes ")


_PROBE = """
import json, sys
from onrecord.cli.main import main
code = main(sys.argv[1:])
print(json.dumps({"exit": code, "remittance": "onrecord.domains.remittance" in sys.modules}))
"""


def _probe(*args: str) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *args], capture_output=True, text=True, timeout=120
    )
    result: dict[str, object] = json.loads(done.stdout.splitlines()[-1])
    return result


def test_check_imports_the_remittance_domain_only_for_its_help(tmp_path: Path) -> None:
    # An episode that is not there: the command ends before any domain is needed.
    missing = _probe("check", "expected_changes", "--episode", str(tmp_path / "none"))
    assert missing == {"exit": 3, "remittance": False}
    helped = subprocess.run(
        [sys.executable, "-m", "onrecord", "check", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "400", "PATH": ""},
    )
    assert helped.returncode == 0, helped.stderr
    assert "its domain's allocations_sum_to_line, answer_reports_done," in helped.stdout


@pytest.mark.parametrize(
    ("control", "spelt"),
    [("a\nb", "a\\nb"), ("a\x1bb", "a\\u001bb"), ("a\\\nb", "a\\\\nb")],
)
def test_a_name_spelling_an_escape_prints_unlike_the_control(control: str, spelt: str) -> None:
    assert cell(control) != cell(spelt)
    assert "\n" not in cell(control)  # one line still
    assert plain(control.replace("\n", "")) != plain(spelt.replace("\n", ""))


def test_backslashes_before_no_escape_print_as_written() -> None:
    assert cell("C:\\Temp\\x") == "C:\\Temp\\x"
    assert cell("a\\nb") == "a\\\\nb"  # doubled: "a\nb" is what a newline prints as
    assert cell("a\nb") == "a\\nb"


@pytest.mark.parametrize("name", ["manifest.json", "actions.jsonl"])
def test_show_of_a_file_in_a_saved_episode_shows_the_episode(
    episode: Path, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its calls and row changes, as `show EP` has them (before: the one-line summary)."""
    assert main(["show", str(episode)]) == 0
    whole = capsys.readouterr().out
    assert main(["show", str(episode / name)]) == 0
    shown = capsys.readouterr().out
    assert "post_allocation" in whole
    assert shown.replace(str(episode / name), str(episode)) == whole
