"""A tool world played as a Gymnasium env (``ToolWorldEnv`` under ``onrecord run``),
its episode view read in a real headless Chromium: each step says what became of its
call and gives the call's error.

Before: every step of such an episode read ``ok`` (the capture status: the env
answered), a rejected call's error was nowhere on the page, and a long episode's
timeline dropped a late rejected call (only steps whose *capture* failed were kept).
Ordinary Gymnasium episodes (FrozenLake) keep their timeline: no ``call`` column."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord.html import write_report
from onrecord.runner import GymnasiumProvider, agent_factory, plan_run, start_run
from tests.core import show_tool_world
from tests.html.test_browser_probe import _drive

pytestmark = pytest.mark.browser

LONG, LATE = 700, 600
"""Steps of the long episode; the step whose call is rejected, after the first 450."""

_READ = (
    "const view = document.getElementById('episode-view');"
    "const timeline = view.querySelector('table.timeline');"
    "out.headers = [...timeline.querySelectorAll('thead th')].map(th => th.textContent);"
    "const rows = [...timeline.querySelectorAll('tr.event')];"
    "out.rows = rows.map(r => [...r.cells].map(c => c.textContent));"
    "out.classes = rows.map(r => r.className);"
    "out.callColor = rows.length && rows[0].cells.length > 3"
    " ? getComputedStyle(rows[0].cells[3]).color : null;"
    "out.gaps = [...timeline.querySelectorAll('tr.gap')].map(r => r.textContent);"
    "out.summary = (view.querySelector('.call-summary') || {}).textContent || null;"
)


def _late_agent(env: Any, observation: Any, info: Any) -> str:
    for step in range(LONG - 1):
        sku = "gone" if step == LATE else "nut"
        env.step(json.dumps({"tool": "pick", "arguments": {"sku": sku, "qty": 0, "memo": ""}}))
    env.step('{"tool": "finish"}')
    return "finished"


@agent_factory
def late(context: Any) -> Any:
    return _late_agent


def make() -> GymnasiumProvider:
    """``show_tool_world``'s stockroom, with an agent whose one refused call is late."""
    return GymnasiumProvider(
        make_for_task=show_tool_world.Stockroom,
        environment_id="show-stockroom/v1",
        tasks=[show_tool_world.CASE],
        checks=[show_tool_world.picked],
        observe=lambda env: {"state_version": env.unwrapped.world.state_version},
        observer_id="state-version/v1",
        agents={"clumsy": show_tool_world.clumsy, "late": late},
    )


def _run(path: Path, agent: str, max_steps: int) -> Path:
    start_run(
        path,
        plan_run(
            "tests.html.test_tool_world_calls_browser:make",
            agent,
            seeds=[0],
            max_steps=max_steps,
        ),
    )
    return path


def test_each_step_shows_its_calls_status_and_error(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "clumsy", 60)
    page = write_report(run, tmp_path / "r.html", data_json=tmp_path / "r.json")
    episode = orjson.loads((tmp_path / "r.json").read_bytes())["episodes"][0]
    out = _drive(page, _READ, tmp_path)
    assert out["headers"] == ["step", "action", "status", "call", "result / error", "state"]
    rows = {int(row[0]): row for row in out["rows"]}
    assert len(rows) == len(show_tool_world.ACTIONS) == episode["timeline_total"]
    # step, status (the capture's), call, error: before, "ok" and no error on each
    assert [rows[0][2], rows[0][3]] == ["ok", "rejected"]
    assert rows[0][4] == "rule_violation: there is no item 'zzz'"
    assert [rows[1][2], rows[1][3]] == ["ok", "error"]
    assert rows[1][4].startswith("tool_error: pick: IntegrityError: CHECK constraint failed")
    assert [rows[2][2], rows[2][3]] == ["ok", "rejected"]
    assert rows[2][4].startswith("unknown_tool: there is no tool named 'nope'")
    assert [rows[3][3], rows[3][4]] == ["ok", "reward 0"]  # a call that did its work
    assert [rows[49][3], rows[50][3]] == ["rejected", "finished"]
    assert rows[49][4] == "rule_violation: there is no item 'gone'"
    assert "call-rejected" in out["classes"][0].split()
    assert out["callColor"] == "rgb(130, 80, 223)"  # the page's colour for rejected
    assert out["summary"] == "tool calls: 1 finished, 46 ok, 1 error, 3 rejected"
    assert episode["call_counts"] == {"ok": 46, "finished": 1, "error": 1, "rejected": 3}


def test_a_late_rejected_call_stays_in_a_long_timeline(tmp_path: Path) -> None:
    run = _run(tmp_path / "run", "late", LONG + 10)
    page = write_report(run, tmp_path / "r.html", data_json=tmp_path / "r.json")
    episode = orjson.loads((tmp_path / "r.json").read_bytes())["episodes"][0]
    assert episode["timeline_total"] == LONG
    out = _drive(page, _READ, tmp_path)
    steps = [int(row[0]) for row in out["rows"]]
    assert len(steps) == 500 == len(episode["timeline"])
    # Before: the first 450 and the last 50 steps; the rejected call was left out.
    assert LATE in steps
    late_row = out["rows"][steps.index(LATE)]
    assert [late_row[2], late_row[3]] == ["ok", "rejected"]
    assert late_row[4] == "rule_violation: there is no item 'gone'"
    shown = len(steps) + sum(int("".join(filter(str.isdigit, gap))) for gap in out["gaps"])
    assert shown == LONG
    assert all(gap.count("steps not shown") == 1 for gap in out["gaps"])
    assert out["summary"] == f"tool calls: 1 finished, {LONG - 2} ok, 1 rejected"


def test_an_ordinary_gymnasium_timeline_has_no_call_column(lake_run: Path, tmp_path: Path) -> None:
    page = write_report(lake_run, tmp_path / "r.html", data_json=tmp_path / "r.json")
    data = orjson.loads((tmp_path / "r.json").read_bytes())
    assert all("call_counts" not in episode for episode in data["episodes"])
    assert all("call" not in event for e in data["episodes"] for event in e["timeline"])
    out = _drive(page, _READ, tmp_path)
    assert out["headers"] == ["step", "action", "status", "result / error", "state"]
    assert out["rows"]
    assert all(len(row) == 5 for row in out["rows"])
    assert out["summary"] is None
