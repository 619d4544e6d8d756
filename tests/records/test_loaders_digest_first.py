"""Every loader reports a tampered record as tampered: the digest is checked before any
field, as ``onrecord verify`` does.

Before: ``AcceptancePolicy.load`` (behind ``onrecord gate --policy``) and
``EvaluationReport.load`` checked their fields first, so an edit that broke a field was
reported as that field ("min_pass_rate must be ...", "unknown field(s)") while
``verify`` said "changed after saving". A policy without any digest field (hand-written)
still gets its fields checked first. Forecast loaders now name the file and line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._canonical import record_bytes
from onrecord.dynamics import ForecastEvidence, load_forecasts
from onrecord.episode import evaluate_episodes
from onrecord.errors import DigestMismatch, PolicyError, SchemaError
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.report import EvaluationReport
from tests.cli_process import onrecord


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("saved")
    task = frozenlake_task()
    episodes = [
        run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=seed) for seed in (1, 2)
    ]
    report = evaluate_episodes(episodes, list(task.checks))
    policy = AcceptancePolicy((CheckRequirement("reached_goal"),))
    return {
        "report": report.save_json(root / "report.json"),
        "policy": policy.save_json(root / "policy.json"),
    }


def _edited(source: Path, target: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """``source`` with ``edit`` applied and written canonically, its digest left as it
    was: what a hand edit of the saved file leaves."""
    data = orjson.loads(source.read_bytes())
    edit(data)
    target.write_bytes(record_bytes(data))
    return target


def _rate(data: dict[str, Any]) -> None:
    data["requirements"][0]["min_pass_rate"] = 2.0


def _added(data: dict[str, Any]) -> None:
    data["approved"] = True


def _requirements(data: dict[str, Any]) -> None:
    data["requirements"] = "all of them"


@pytest.mark.parametrize("edit", [_rate, _added, _requirements])
def test_a_tampered_policy_is_reported_as_tampered(
    saved: dict[str, Path], tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    policy = _edited(saved["policy"], tmp_path / "policy.json", edit)
    with pytest.raises(DigestMismatch, match="changed after saving"):
        AcceptancePolicy.load(policy)
    for args in (("gate", saved["report"], "--policy", policy), ("verify", policy)):
        done = onrecord(*args)
        assert done.returncode == 3, done.stdout
        assert "changed after saving" in done.stderr
        assert str(policy) in done.stderr


def test_a_policy_without_a_digest_field_is_checked_field_first(
    saved: dict[str, Path], tmp_path: Path
) -> None:
    def broken(data: dict[str, Any]) -> None:
        _rate(data)
        del data["digest"]

    policy = _edited(saved["policy"], tmp_path / "policy.json", broken)
    with pytest.raises(PolicyError, match="min_pass_rate"):
        AcceptancePolicy.load(policy)
    done = onrecord("gate", saved["report"], "--policy", policy)
    assert done.returncode == 3
    assert "min_pass_rate" in done.stderr

    whole = _edited(saved["policy"], tmp_path / "whole.json", lambda d: d.pop("digest"))
    with pytest.raises(SchemaError, match="needs its 'digest' field"):
        AcceptancePolicy.load(whole)


def _status(data: dict[str, Any]) -> None:
    data["trials"][0]["results"][0]["status"] = "maybe"


def _report_field(data: dict[str, Any]) -> None:
    data["override"] = "pass"


@pytest.mark.parametrize("edit", [_status, _report_field])
def test_a_tampered_report_is_reported_as_tampered(
    saved: dict[str, Path], tmp_path: Path, edit: Callable[[dict[str, Any]], None]
) -> None:
    report = _edited(saved["report"], tmp_path / "report.json", edit)
    with pytest.raises(DigestMismatch, match="changed after saving"):
        EvaluationReport.load(report)
    done = onrecord("gate", report, "--policy", saved["policy"])
    assert done.returncode == 3, done.stdout
    assert "changed after saving" in done.stderr


def test_forecast_loaders_name_the_file_and_line(tmp_path: Path) -> None:
    from onrecord.dynamics import capture_forecast, get_simulator, save_forecasts
    from onrecord.dynamics._references import capture_plan

    cartpole = get_simulator("CartPole-v1")
    plan = [0, 1, 0, 1]
    reference = capture_plan(cartpole, plan, case_id="plan-3", seed=3)
    forecast = capture_forecast(
        reference,
        lambda request: {"states": [request["initial_state"]] * len(request["actions"])},
        model_id="persistence/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 2],
        planned_actions=plan,
    )
    one = forecast.save_json(tmp_path / "forecast.json")
    one.write_bytes(one.read_bytes().replace(b'"persistence/v1"', b'"oracle/v1"'))
    with pytest.raises(DigestMismatch, match=rf"^{tmp_path / 'forecast.json'}: "):
        ForecastEvidence.load(one)
    lines = save_forecasts(tmp_path / "forecasts.jsonl", [forecast, forecast])
    raw = lines.read_bytes()
    cut = raw.index(b"\n") + 1
    lines.write_bytes(raw[:cut] + raw[cut:].replace(b'"persistence/v1"', b'"oracle/v1"'))
    with pytest.raises(DigestMismatch, match=rf"^{lines}:2: forecast digest"):
        load_forecasts(lines)
