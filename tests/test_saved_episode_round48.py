"""A saved tool-world episode (``save_episode``, as ``RemittanceEnvironment.run`` writes
one) and the commands around it: ``report`` says what reads it instead, ``show RUN
--episode`` says how a run's tool-world episode ended as ``show DIR`` does, and
``verify`` refuses a manifest whose ``ending`` no writer of this version makes.

Before: ``report DIR`` said only "not a run directory … start a run with `onrecord run
... --out DIR`"; ``show RUN --episode`` said how the episode ended only through a
coverage issue (nothing for one that finished); ``verify`` passed a re-sealed manifest
ending ``succeeded``, which ``show`` printed like ``finished``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.cli.main import main
from onrecord.domains.remittance import RemittanceEnvironment, ScriptedAgent
from tests.domains.test_remittance_play import TASK  # full-01 at 200 rows

CRASH = "AgentCrashed: the agent crashed right after its first committed write"


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A careful agent's episode of ``full-01``, saved by ``RemittanceEnvironment.run``."""
    env = RemittanceEnvironment(TASK)
    folder = tmp_path_factory.mktemp("saved48") / "episode"
    env.run(ScriptedAgent("careful", env.brief), folder)
    env.close()
    return folder


def _onrecord(capsys: pytest.CaptureFixture[str], *args: str | Path) -> tuple[int, str, str]:
    code = main([str(arg) for arg in args])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("given", ["", "manifest.json"])
def test_report_of_a_saved_episode_names_what_reads_it(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path, given: str
) -> None:
    page = tmp_path / "page.html"
    code, _, err = _onrecord(capsys, "report", episode / given, "-o", page)
    assert code == 3
    message = " ".join(err.split())  # the error wraps to the terminal
    assert f"{episode} is a saved tool-world episode (save_episode), not a run" in message
    assert f"`onrecord show {episode}`" in message
    assert f"`onrecord check NAME... --episode {episode}`" in message
    assert "`onrecord run remittance --agent AGENT --tasks full-01 --out RUN`" in message
    assert "`onrecord report RUN`" in message
    assert not page.exists()


@pytest.mark.parametrize(
    ("agent", "line"),
    [("careful", "ended: finished"), ("crash_after_commit", f"ended: agent_error: {CRASH}")],
)
def test_show_run_episode_says_how_it_ended(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    agent: str,
    line: str,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    run = tmp_path / "run"
    code, _, err = _onrecord(
        capsys, "run", "remittance", "-a", agent, "--tasks", "full-01", "--no-progress", "-o", run
    )
    assert code in (0, 1, 2), err
    code, out, err = _onrecord(capsys, "show", run, "--episode", "full-01#0", "--no-progress")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("episode full-01#0 ")
    assert lines[1] == line  # as `onrecord show DIR` of the same episode saved prints it


def _forged(source: Path, target: Path, *, reseal: bool, **fields: Any) -> Path:
    """A copy of the episode whose manifest holds ``fields``; ``reseal``: with its digest
    made again, as anyone can (it is a sha256 of the content, not a signature)."""
    shutil.copytree(source, target)
    manifest = orjson.loads((target / "manifest.json").read_bytes())
    manifest.update(fields)
    if reseal:
        del manifest["digest"]
        manifest["digest"] = content_digest(manifest)
    (target / "manifest.json").write_bytes(record_bytes(manifest))
    return target


def test_an_edited_ending_was_already_refused_by_the_digest_and_undeclared_passes(
    episode: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    edited = _forged(episode, tmp_path / "edited", reseal=False, ending="agent_error")
    code, _, err = _onrecord(capsys, "verify", edited)
    assert code == 3
    assert "does not match its digest" in err
    undeclared = _forged(episode, tmp_path / "undeclared", reseal=True, ending="undeclared")
    code, _, err = _onrecord(capsys, "verify", undeclared)
    assert code == 0, err
    # ...and one no writer makes, sealed with a digest that matches it, is refused too.
    forged = _forged(episode, tmp_path / "forged", reseal=True, ending="succeeded")
    code, _, err = _onrecord(capsys, "verify", forged)
    assert code == 3
    assert "field 'ending' is 'succeeded'" in " ".join(err.split())


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        (
            {"ending": "succeeded"},
            "field 'ending' is 'succeeded', which is none of the endings an episode is "
            "saved with (finished, agent_error, step_limit, stopped, undeclared)",
        ),
        (
            {"ending": "finished\ndecision: accept"},
            "field 'ending' is 'finished\\ndecision: accept', which is none of the endings",
        ),
        ({"ending_error": {"a": 1}}, "field 'ending_error' must be text or null, got {'a': 1}"),
    ],
)
@pytest.mark.parametrize("command", ["verify", "show"])
def test_a_resealed_manifest_with_an_ending_no_writer_makes_is_refused(
    episode: Path,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    fields: dict[str, Any],
    said: str,
    command: str,
) -> None:
    forged = _forged(episode, tmp_path / "forged", reseal=True, **fields)
    code, out, err = _onrecord(capsys, command, forged / "manifest.json")
    assert code == 3
    assert out == ""
    assert said in " ".join(err.split())
