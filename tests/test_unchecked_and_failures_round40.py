"""Round 40: a world-model report's unchecked coordinates are said where a reviewer
looks (``onrecord show``, ``gate`` and its Markdown, the HTML page); an unobserved
horizon's reason survives ``ForecastMetrics.to_dict``; an observer failure says which
read failed. Real Pendulum episodes and the installed ``onrecord`` command throughout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import EvalCase
from onrecord.dynamics import ForecastEvidence, capture_forecast
from onrecord.dynamics_metrics import forecast_metrics, forecast_report
from onrecord.integrations.gymnasium import capture_episode
from tests.cli_process import onrecord
from tests.dynamics.test_state_gaps_round40 import PENDULUM, persistence
from tests.dynamics.test_state_gaps_round40 import forecast_of as pendulum_forecast

TORQUES = [[1.0]] * 4
UNCHECKED = "unchecked coordinates: theta_dot (no tolerance)"
POLICY = 'name = "wm"\n[[requirements]]\ncheck = "dynamics/*/h1"\n'


def _observer_place() -> str:
    """Where the observer below raises: an observer error names its line (round 51)."""
    with open(__file__, encoding="utf-8") as source:
        lines = source.read().splitlines()
    line = lines.index('            raise RuntimeError(failing_reads[holder["reads"]])') + 1
    return f" (at {__file__}:{line} in observe)"


def pendulum_reference(failing_reads: dict[int, str]) -> Any:
    """A real Pendulum episode whose observer raises on the reads numbered in
    ``failing_reads`` (1 is the read after reset, 2 the one after action 0)."""
    holder: dict[str, Any] = {"reads": 0}

    def factory() -> Any:
        holder["env"] = gym.make("Pendulum-v1")
        return holder["env"]

    def interact(env: Any, observation: Any, info: Any) -> str:
        for torque in TORQUES:
            env.step(np.asarray(torque, dtype=np.float32))
        return "plan sent"

    def observe() -> dict[str, Any]:
        holder["reads"] += 1
        if holder["reads"] in failing_reads:
            raise RuntimeError(failing_reads[holder["reads"]])
        return {"state": [float(v) for v in holder["env"].unwrapped.state]}

    return capture_episode(
        factory,
        interact,
        case=EvalCase("Swing", case_id="pendulum/swing"),
        environment_id="Pendulum-v1",
        observer_id="internal-state/v1",
        observe=observe,
        seed=3,
        max_steps=len(TORQUES),
    )


def forecast_of(reference: Any) -> ForecastEvidence:
    return pendulum_forecast(reference, [1, 3, 4], TORQUES)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A report with tolerances for theta only, one with both, and a policy."""
    folder = tmp_path_factory.mktemp("wm")
    forecast = forecast_of(pendulum_reference({}))
    partial = forecast_report([forecast], {"theta": 10}).save_json(folder / "partial.json")
    both = {"theta": 10, "theta_dot": 100}
    full = forecast_report([forecast], both).save_json(folder / "full.json")
    policy = folder / "policy.toml"
    policy.write_text(POLICY, encoding="utf-8")
    return {"partial": partial, "full": full, "policy": policy}


def test_show_says_which_coordinates_no_check_covers(reports: dict[str, Path]) -> None:
    shown = onrecord("show", reports["partial"])
    assert shown.returncode == 0, shown.stderr
    assert UNCHECKED in shown.stdout.splitlines()
    full = onrecord("show", reports["full"])
    assert full.returncode == 0, full.stderr
    assert "unchecked" not in full.stdout


def test_an_accepting_gate_says_it_too(reports: dict[str, Path]) -> None:
    gate = onrecord("gate", reports["partial"], "--policy", reports["policy"])
    assert gate.returncode == 0, gate.stderr  # accepted: theta h1 passes
    assert "decision: accept" in gate.stdout
    assert UNCHECKED in gate.stdout.splitlines()
    full = onrecord("gate", reports["full"], "--policy", reports["policy"])
    assert full.returncode == 0, full.stderr
    assert "unchecked" not in full.stdout


def test_the_markdown_summary_says_it_under_the_verdict(reports: dict[str, Path]) -> None:
    gate = onrecord("gate", reports["partial"], "--policy", reports["policy"], "--markdown", "-")
    assert gate.returncode == 0, gate.stderr
    lines = gate.stdout.splitlines()
    line = "⚠️ unchecked coordinates: theta\\_dot (no tolerance)"
    assert line in lines
    assert lines.index(line) < next(i for i, x in enumerate(lines) if x.startswith("| "))
    full = onrecord("gate", reports["full"], "--policy", reports["policy"], "--markdown", "-")
    assert "unchecked" not in full.stdout


def test_the_html_page_lists_it_among_the_findings(reports: dict[str, Path]) -> None:
    for name, expected in (("partial", True), ("full", False)):
        data_file = reports[name].with_suffix(".data.json")
        page = reports[name].with_suffix(".html")
        made = onrecord("report", reports[name], "-o", page, "--json", data_file)
        assert made.returncode == 0, made.stderr
        findings = json.loads(data_file.read_text(encoding="utf-8"))["findings"]
        html = page.read_text(encoding="utf-8")
        assert (UNCHECKED in findings) is expected
        assert (f"<li>{UNCHECKED}</li>" in html) is expected
        if not expected:
            assert "unchecked" not in html


def test_a_finding_about_one_episode_is_singular(tmp_path: Path) -> None:
    # The state after action 3 is not observed: theta/h3 unmeasured in one episode.
    forecast = forecast_of(pendulum_reference({4: "encoder glitch"}))
    report = forecast_report([forecast], {"theta": 10, "theta_dot": 100})
    path = report.save_json(tmp_path / "gap.json")
    made = onrecord("report", path, "--json", tmp_path / "data.json")
    assert made.returncode == 0, made.stderr
    findings = json.loads((tmp_path / "data.json").read_text(encoding="utf-8"))["findings"]
    assert "dynamics/theta/h3 was not measured in 1 episode" in findings


def test_to_dict_keeps_why_a_state_was_not_observed() -> None:
    forecast = forecast_of(pendulum_reference({4: "encoder glitch"}))
    table = forecast_metrics(forecast).to_dict()["coordinates"]
    why = "the observer failed: RuntimeError: encoder glitch" + _observer_place()
    for name in PENDULUM:
        cells = table[name]["horizons"]
        assert cells["h3"] == {"censored": False, "measured": False, "unobserved": why}
        assert "unobserved" not in cells["h1"]
        assert "unobserved" not in cells["h4"]
    # The printed form and the dict say the same.
    assert f"theta h3: not observed: {why}" in str(forecast_metrics(forecast))


def test_a_complete_forecasts_cells_are_as_before() -> None:
    table = forecast_metrics(forecast_of(pendulum_reference({}))).to_dict()["coordinates"]
    cells = [cell for per in table.values() for cell in per["horizons"].values()]
    assert all("unobserved" not in cell and cell["measured"] for cell in cells)


def test_the_read_after_reset_and_after_step_0_are_told_apart() -> None:
    episode = pendulum_reference({1: "cold start", 2: "first step glitch", 6: "last read"})
    observe = [f for f in episode.failures() if f["phase"] == "observe"]
    assert [(f["read"], f["index"], f["message"]) for f in observe] == [
        ("after_reset", 0, "RuntimeError: cold start" + _observer_place()),
        ("after_step", 0, "RuntimeError: first step glitch" + _observer_place()),
        ("before_cleanup", len(TORQUES), "RuntimeError: last read" + _observer_place()),
    ]


def test_a_forecast_names_step_0s_failure_not_resets() -> None:
    # Reads 1 (after reset) and 3 (after action 1) fail: horizon 2's reason is read 3's.
    episode = pendulum_reference({1: "cold start", 3: "second step glitch"})
    forecast = capture_forecast(
        episode,
        persistence,
        model_id="persistence/v1",
        contract="pendulum-state/v1",
        coordinates=PENDULUM,
        horizons=[1, 2],
        planned_actions=TORQUES,
    )
    assert forecast.unobserved == {
        2: "the observer failed: RuntimeError: second step glitch" + _observer_place()
    }
