"""``onrecord regrade`` of a saved tool-world episode (``save_episode``) says what reads
one, as ``report``, ``gate`` and ``compare`` do; the refusal names the domain's ``onrecord
run`` environment when the episode's snapshot says which domain it is from; and the
remittance suite's required decisions use ``task_case``'s per-process expectations.

Before: ``regrade DIR`` said only "not a run directory (it has no run.json); start a run
with `onrecord run ... --out DIR`"; every refusal said ``onrecord run ENVIRONMENT``, even
of a remittance episode; ``suite_from_reports`` built the scenarios of every task the
demo's planning had just built."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from onrecord.cli.main import main
from onrecord.domains.remittance import REMITTANCE_CHECKS, _run, _suite, full_policy, load_tasks
from onrecord.envkit import ToolEpisode, evaluate_tool_episodes
from onrecord.errors import InputError
from onrecord.runner import regrade_run
from tests import test_saved_episode_round48 as round48

episode = round48.episode  # the fixture: one careful full-01 episode per module


def _refusal(capsys: pytest.CaptureFixture[str], *args: str | Path) -> str:
    code = main([str(arg) for arg in args])
    printed, err = capsys.readouterr()
    assert (code, printed) == (3, "")
    return " ".join(err.split())  # the error wraps to the terminal


@pytest.mark.parametrize("given", ["", "manifest.json"])
def test_regrade_of_a_saved_episode_names_what_reads_it(
    episode: Path, capsys: pytest.CaptureFixture[str], given: str
) -> None:
    before = sorted(p.name for p in episode.iterdir())
    message = _refusal(capsys, "regrade", episode / given, "--no-progress")
    assert f"{episode} is a saved tool-world episode (save_episode), not a run" in message
    assert "`onrecord regrade` grades a run's recorded episodes again" in message
    assert f"`onrecord show {episode}`" in message
    assert f"`onrecord check NAME... --episode {episode}`" in message
    assert "`onrecord run remittance --agent AGENT --tasks full-01 --out RUN`" in message
    # The arguments regrade takes (`onrecord regrade --help`), each optional.
    assert message.endswith(
        "then `onrecord regrade RUN --checks module:CHECKS --policy POLICY` "
        "(each optional: by default the run's own)"
    )
    assert sorted(p.name for p in episode.iterdir()) == before  # no regrades/ made


def test_regrade_run_of_a_saved_episode_says_so_before_reading_a_policy(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # The CLI reads --policy first; the saved episode is the wrong input whatever it is.
    message = _refusal(capsys, "regrade", episode, "--policy", tmp_path / "missing.toml")
    assert "is a saved tool-world episode (save_episode)" in message
    # The library says the same to its own callers.
    with pytest.raises(InputError, match=r"saved tool-world episode .* `onrecord regrade RUN"):
        regrade_run(episode, progress=False)


def _own_world(episode: Path, folder: Path) -> Path:
    """The episode under a snapshot name of one's own (a world built from the domain's
    tools): the manifest is not re-sealed, which a refusal does not read."""
    copy = shutil.copytree(episode, folder)
    manifest = orjson.loads((copy / "manifest.json").read_bytes())
    manifest["snapshot"]["name"] = "mine.remittance/v1/full-01"
    (copy / "manifest.json").write_bytes(orjson.dumps(manifest))
    return copy


@pytest.mark.parametrize("command", ["report", "gate", "compare", "regrade"])
def test_refusal_names_the_domain_of_the_snapshot(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    policy = full_policy().save_json(tmp_path / "policy.json")
    extra = {
        "report": ["-o", tmp_path / "page.html"],
        "gate": ["--policy", policy],
        "compare": [episode],
        "regrade": ["--no-progress"],
    }[command]
    message = _refusal(capsys, command, episode, *extra)
    assert "`onrecord run remittance --agent AGENT --tasks full-01 --out RUN`" in message
    # A world of one's own is no domain's: its environment is the user's to name.
    own = _own_world(episode, tmp_path / "own")
    extra = [own] if command == "compare" else extra
    message = _refusal(capsys, command, own, *extra)
    assert "`onrecord run ENVIRONMENT --agent AGENT --tasks full-01 --out RUN`" in message


def test_suite_from_reports_uses_the_planned_expectations(
    episode: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for task in load_tasks():  # as the demo's planning does, once per process
        _run.task_case(task)

    def built_again(task: object) -> object:
        raise AssertionError(f"scenario of {task!r} built again")

    monkeypatch.setattr(_run, "build_scenario", built_again)
    # Where the suite took it from before (gone now: raising=False adds it back).
    monkeypatch.setattr(_suite, "build_scenario", built_again, raising=False)
    report = evaluate_tool_episodes([ToolEpisode.load(episode)], REMITTANCE_CHECKS)
    suite = _suite.suite_from_reports({"careful": report, "double_poster": report})
    assert suite.expected == {
        "careful": {"full-01": "accept"},
        "double_poster": {"full-01": "accept"},
    }
