"""Round 42: a record name (a check's, a case id, a dict key, a model id, a regrade's
directory) cannot split what onrecord prints. JSON paths quote a key that is no plain
identifier (a check's evidence, a tool's arguments and schema, the lock settings a
refused comparison names); the lines outside tables (compare's discordant pairs and
too-few-pairs note, the gate's headline) and the remaining tables show a newline in a
name as ``\\n``, as a table's cell does. Real report files, real runs of a Gymnasium
environment, the installed ``onrecord``."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.cli._record_views import _ledger_summary, _remittance_summary
from onrecord.cli.worldmodel import intervention_table, loop_table
from onrecord.compare import ComparisonRefused, compare_reports
from onrecord.envkit import Tool
from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict
from onrecord.errors import OnrecordError, PortabilityError
from onrecord.report import CheckResult, EvaluationReport, Trial
from onrecord.runner import plan_run, start_run
from tests.cli_process import line_after
from tests.runner.conftest import onrecord

FORGED = "posted\ndecision: accept"
"""A record name holding a verdict line."""
SHOWN = "posted\\ndecision: accept"
"""``FORGED`` as onrecord shows it: on one line, its newline an escape."""


def _verdict_lines(output: str) -> list[str]:
    """The lines a forged name starts (after any indent) with its verdict: onrecord's
    own verdict ("decision: accept  (1 of 1 episodes)") is no name's line."""
    return [
        line
        for line in output.splitlines()
        if line.lstrip().startswith("decision: accept") and "episodes)" not in line
    ]


# -- JSON paths ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "path"),
    [
        ("posted", "$.results.posted.evidence.x"),  # a plain name reads as before
        ("a.b", '$.results["a.b"].evidence.x'),
        (FORGED, '$.results["posted\\ndecision: accept"].evidence.x'),
    ],
)
def test_a_checks_name_is_quoted_in_its_evidences_path(name: str, path: str) -> None:
    with pytest.raises(PortabilityError) as caught:
        CheckResult(name, "v1", "pass", "r", {"x": math.nan})
    assert caught.value.path == path
    assert "\n" not in str(caught.value)


def _tool() -> Tool:
    return Tool(
        "note",
        lambda ctx, meta: None,
        False,
        "",
        {
            "type": "object",
            "properties": {"meta": {"type": "object", "additionalProperties": {"type": "integer"}}},
        },
    )


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("count", "arguments.meta.count"),
        ("a.b", 'arguments.meta["a.b"]'),
        (FORGED, 'arguments.meta["posted\\ndecision: accept"]'),
    ],
)
def test_an_agents_argument_key_is_quoted_in_the_refusal(key: str, path: str) -> None:
    problem = _tool().check_arguments({"meta": {key: "x"}})
    assert problem == f"{path} must be an integer, got 'x'"


def test_a_schemas_property_name_is_quoted_when_declared() -> None:
    schema = {"type": "object", "properties": {FORGED: {"type": "int"}}}
    with pytest.raises(OnrecordError) as caught:
        Tool("raw", lambda ctx: None, False, "", schema)
    assert 'parameters.properties["posted\\ndecision: accept"].type must be' in str(caught.value)
    assert "\n" not in str(caught.value)


def _settings_report(path: Path, settings: dict[str, Any]) -> Path:
    trial = Trial(
        {"case_id": "c1", "content_digest": "d" * 64},
        0,
        {"kind": "test"},
        (CheckResult("posted", "v1", "pass", "r"),),
        settings={"environment_id": "env"},
    )
    report = EvaluationReport.from_trials([trial], lock_extra={"settings": settings})
    return report.save_json(path)


def test_a_refused_comparison_quotes_a_settings_key(tmp_path: Path) -> None:
    a = _settings_report(tmp_path / "a.json", {"a.b": 1, FORGED: 1, "seed": 1})
    b = _settings_report(tmp_path / "b.json", {"a": {"b": 1}, FORGED: 2, "seed": 2})
    with pytest.raises(ComparisonRefused) as caught:
        compare_reports(EvaluationReport.load(a), EvaluationReport.load(b))
    message = str(caught.value)
    # A key "a.b" and a key "b" inside "a" read apart; a plain key as before.
    assert 'settings["a.b"]: 1 in A, nothing in B' in message
    assert "settings.a: nothing in A, {'b': 1} in B" in message
    assert "settings.seed: 1 in A, 2 in B" in message
    assert '["posted\\ndecision: accept"]: 1 in A, 2 in B' in message
    done = onrecord("compare", str(a), str(b))
    assert done.returncode == 3, done.stderr
    assert not _verdict_lines(done.stdout + done.stderr)
    assert 'settings["posted\\ndecision: accept"]: 1 in A, 2 in B' in done.stderr


# -- lines outside tables -----------------------------------------------------------


def _report(path: Path, statuses: list[str]) -> Path:
    trials = [
        Trial(
            {"case_id": case, "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (CheckResult(FORGED, "v1", status, "r"),),
            settings={"environment_id": "env"},
        )
        for case, status in zip(("c1\ndecision: accept", "c2"), statuses, strict=True)
    ]
    return EvaluationReport.from_trials(trials).save_json(path)


def test_compare_shows_a_name_in_its_pairs_and_note_on_one_line(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", ["fail", "pass"])
    b = _report(tmp_path / "b.json", ["pass", "pass"])
    done = onrecord("compare", str(a), str(b))
    assert done.returncode == 0, done.stderr
    assert not _verdict_lines(done.stdout), done.stdout
    lines = done.stdout.splitlines()
    # The pair: the check's name, the case id, the change, one line.
    assert f"  {SHOWN}: c1\\ndecision: accept#0: fail→pass" in lines, done.stdout
    note = next(line for line in lines if line.startswith("note: McNemar"))
    assert SHOWN in note


def test_the_gates_headline_shows_a_name_on_one_line(tmp_path: Path) -> None:
    a = _report(tmp_path / "a.json", ["fail", "pass"])
    policy = AcceptancePolicy((CheckRequirement(FORGED),), name="release")
    done = onrecord("gate", str(a), "--policy", str(policy.save_json(tmp_path / "p.json")))
    assert done.returncode == 1, done.stderr
    assert not _verdict_lines(done.stdout), done.stdout
    assert f"  failed: {SHOWN}" in done.stdout.splitlines()


# -- tables -------------------------------------------------------------------------


def _fails(episode: EpisodeEvidence) -> OutcomeVerdict:
    return OutcomeVerdict(False, "never passes", {"steps": episode.measures["steps"]})


NAMED = [OutcomeCheck(FORGED, "v1\ndecision: accept", _fails)]
"""A check whose name and version hold a verdict line (``module:name`` for a run)."""


def test_show_run_and_episode_show_names_on_one_line(tmp_path: Path) -> None:
    run = tmp_path / "run"
    start_run(
        run,
        plan_run(
            "tests.runner.helpers:lake",
            "tests.runner.helpers:walker",
            tasks=[EvalCase(None, case_id="c1")],
            checks=["tests.runner.helpers:SHORT_V1"],
        ),
    )
    me = "tests.test_names_round42:NAMED"
    regraded = onrecord("regrade", str(run), "--checks", me, "--name", FORGED, "--no-progress")
    assert regraded.returncode == 2, regraded.stderr  # the policy's check is gone
    # The version change, the verdict change and where it was saved: each one line.
    assert not _verdict_lines(regraded.stdout), regraded.stdout
    lines = regraded.stdout.splitlines()
    assert f"check {SHOWN}: version absent → v1\\ndecision: accept" in lines
    assert f"  c1#0 {SHOWN}: absent → fail" in lines
    assert any(line.endswith(f"/regrades/{SHOWN}") for line in lines)
    # The run's regrades table: the regrade's directory name.
    shown = onrecord("show", str(run), "--no-progress")
    assert shown.returncode == 0, shown.stderr
    assert not _verdict_lines(shown.stdout), shown.stdout
    assert f"│ {SHOWN} │" in shown.stdout
    # The hint's command: one line, and it shows the regrade when pasted into bash.
    hint = line_after("show one: ", shown.stdout)
    assert hint.endswith(f"/regrades/{SHOWN}'")
    assert " $'/" in hint
    pasted = subprocess.run(
        ["bash", "-c", hint.replace("onrecord", str(Path(sys.executable).parent / "onrecord"), 1)],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)},
    )
    assert pasted.returncode == 0, pasted.stderr
    assert "decision: indeterminate" in pasted.stdout  # the regrade's, not the run's
    # The regrade's episode: its verdicts table (name, version) and evidence table.
    episode = onrecord("show", str(run / "regrades" / FORGED), "--episode", "c1#0", "--no-progress")
    assert episode.returncode == 0, episode.stderr
    assert not _verdict_lines(episode.stdout), episode.stdout
    assert episode.stdout.count(SHOWN) >= 2  # the verdict's row and the evidence's
    assert "v1\\ndecision: accept" in episode.stdout


def _printed(*renderables: Any) -> str:
    console = Console(width=200, record=True, emoji=False)
    for renderable in renderables:
        console.print(renderable)
    return console.export_text()


def test_world_model_tables_show_a_model_id_on_one_line() -> None:
    row = {
        "model_id": FORGED,
        "mean_steps": 20.0,
        "steps": [20],
        "reached_cap": 0,
        "seeds": 1,
        "return_ci": None,
        "normalized_score": 0.1,
        "prediction_gap": 0.2,
    }
    effect = {
        "coordinate": "cart_velocity",
        "horizon": 1,
        "pairs": 3,
        "real_effect": 0.1,
        "predicted_effect": 0.2,
        "effect_error": 0.1,
    }
    text = _printed(loop_table([row]), intervention_table({FORGED: [effect]}))
    assert not _verdict_lines(text), text
    assert text.count(SHOWN) == 2


def test_suite_summaries_show_names_on_one_line() -> None:
    console = Console(width=200, record=True, emoji=False)
    _remittance_summary(
        console,
        {"agents": {FORGED: {"decision": "reject", "failing_checks": {"t": [FORGED]}}}},
        [],
    )
    _ledger_summary(
        console,
        {
            "episodes": [
                {"name": FORGED, "decisions": {"full_policy": "reject"}, "expected": "reject"}
            ],
            "classic": [{"name": FORGED, "decision": "reject", "expected": "reject"}],
        },
        [],
    )
    text = console.export_text()
    assert not _verdict_lines(text), text
    assert text.count(SHOWN) == 4  # the agent, its failing check, the episode, the run
