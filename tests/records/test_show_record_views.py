"""``onrecord show`` prints decisions, comparisons, closed-loop records and summaries as
tables, each file written by the real API or command line and shown by a real process.

Before: each was the one line ``verify`` prints (``policy decision (reject, 3
requirements)``): no requirement's status, pass rate or threshold, no p-value, no run's
return, no agent's decision. Output to a pipe stays plain (no ANSI escapes)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import orjson
import pytest

from onrecord.compare import Comparison, compare_sources, load_source
from onrecord.domains.remittance import load_tasks, run_demo_suite
from onrecord.dynamics import ExhaustivePlanner, PersistenceModel, get_simulator, save_runs
from onrecord.dynamics._closed_loop import run_closed_loop
from onrecord.dynamics.experiment._store import save_episodes
from onrecord.errors import SchemaError
from onrecord.runner import plan_run, start_run
from tests.cli_process import onrecord
from tests.dynamics.test_closed_loop_probe2 import RaisingModel

POLICY = """\
name = "release"
[[requirements]]
check = "reached_goal"
min_pass_rate = 0.5
[[requirements]]
check = "no_hole_visited"
critical = false
min_pass_rate = 0.75
min_cases = 3
min_coverage = 0.9
"""


def _show(path: Path) -> str:
    done = onrecord("show", str(path))
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout  # a pipe gets plain text
    return done.stdout


def _rows(text: str) -> list[list[str]]:
    """The body rows of every table in ``text``, a wrapped row joined into one."""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        cells = [cell.strip() for cell in line.strip("│").split("│")]
        if rows and not cells[0] and len(cells) == len(rows[-1]):
            rows[-1] = [f"{a} {b}".strip() for a, b in zip(rows[-1], cells, strict=True)]
        else:
            rows.append(cells)
    return rows


def _header(text: str, first: str) -> list[str]:
    line = next(line for line in text.splitlines() if line.startswith(f"┃ {first} "))
    return [cell.strip() for cell in line.strip("┃").split("┃")]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("views")
    found = {}
    for name, agent in (("goal", "walks_to_goal"), ("hole", "walks_into_hole")):
        found[name] = root / name
        start_run(found[name], plan_run("frozenlake", agent, seeds=[0, 1]))
    return found


def test_a_gate_decision_is_a_table_of_requirements(runs: dict[str, Path], tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    saved = tmp_path / "decision.json"
    done = onrecord("gate", str(runs["hole"]), "--policy", str(policy), "--output", str(saved))
    assert done.returncode == 1, done.stderr
    text = _show(saved)
    # After the verify summary (which may wrap): the verdict on a line of its own.
    assert next(line for line in text.splitlines() if line.startswith("decision")) == (
        "decision: reject"
    )
    assert _header(text, "requirement") == [
        "requirement", "critical", "status", "pass rate", "95% interval", "threshold", "cases",
        "unmeasured", "reason",
    ]  # fmt: skip
    rows = {row[0]: row for row in _rows(text)}
    assert rows["reached_goal"][1:7] == [
        "yes", "failed", "0.0% (0 of 2)", "0.0% – 65.8%", "≥ 50.0%", "1",
    ]  # fmt: skip
    assert rows["reached_goal"][8].startswith("'reached_goal' (critical) failed")
    hole = rows["no_hole_visited"]
    assert hole[1:3] == ["no", "failed"]
    assert hole[5] == "≥ 75.0%, ≥ 3 cases, coverage ≥ 90.0%"
    saved_body = orjson.loads(saved.read_bytes())
    assert len(rows) == len(saved_body["requirements"])


def test_a_run_decision_gets_the_same_table(runs: dict[str, Path]) -> None:
    for path in (runs["hole"] / "decision.json", runs["hole"]):
        text = _show(path)
        assert "decision: reject  (2 of 2 episodes)" in text
        rows = {row[0]: row for row in _rows(text) if len(row) == 9}
        assert rows["reached_goal"][2:4] == ["failed", "0.0% (0 of 2)"]


def test_a_comparison_is_shown_as_compare_prints_it(runs: dict[str, Path], tmp_path: Path) -> None:
    saved = tmp_path / "comparison.json"
    done = onrecord("compare", str(runs["goal"]), str(runs["hole"]), "--json", str(saved))
    assert done.returncode == 0, done.stderr
    text = _show(saved)
    printed = done.stdout[done.stdout.index("comparison ") :]
    tables = printed.split("\n", 1)[1]  # after compare's own header line
    assert tables.strip() in text  # the very tables `onrecord compare` printed
    # ... under one header line (show's own), not two saying the same.
    headers = [line for line in text.splitlines() if line.startswith("comparison ")]
    assert len(headers) == 1, headers
    assert headers[0].startswith("comparison 2 paired trials  A: sha256:")
    rows = {row[0]: row for row in _rows(text)}
    assert rows["reached_goal"][1:7] == ["0", "2", "0", "0", "0", "0.5"]
    assert "reached_goal: frozenlake/goal#0: pass→fail" in text


def test_a_comparison_round_trips_through_its_dict(runs: dict[str, Path], tmp_path: Path) -> None:
    comparison = compare_sources(load_source(runs["goal"]), load_source(runs["hole"]))
    assert comparison.checks[0].discordant  # a round trip of discordant pairs too
    assert Comparison.from_dict(comparison.to_dict()) == comparison
    saved = tmp_path / "comparison.json"
    onrecord("compare", str(runs["goal"]), str(runs["hole"]), "--json", str(saved))
    assert Comparison.from_dict(orjson.loads(saved.read_bytes())) == comparison
    broken = comparison.to_dict()
    broken["checks"][0]["discordant"][0]["a"] = "fail"  # fail → fail is not discordant
    with pytest.raises(SchemaError, match="not a comparison"):
        Comparison.from_dict(broken)
    with pytest.raises(SchemaError, match="not a comparison"):
        Comparison.from_dict({"pairs": -1, "checks": [], "measures": []})


@pytest.fixture(scope="module")
def closed_loop(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cartpole = get_simulator("CartPole-v1")
    runs = [
        *run_closed_loop(
            cartpole, PersistenceModel(cartpole), ExhaustivePlanner(2), seeds=[3, 4], max_steps=9
        ),
        *run_closed_loop(cartpole, RaisingModel(), ExhaustivePlanner(2), seeds=[3], max_steps=9),
    ]
    root = tmp_path_factory.mktemp("loop")
    save_episodes(root / "runs.episodes.jsonl", [run.episode for run in runs])
    save_runs(root / "alone" / "runs.jsonl", runs)
    return save_runs(root / "runs.jsonl", runs)


def test_closed_loop_records_are_a_table_of_runs(closed_loop: Path) -> None:
    text = _show(closed_loop)
    assert _header(text, "model") == [
        "model", "env", "seed", "steps", "return", "ended", "model error",
    ]  # fmt: skip
    rows = _rows(text)
    assert [row[:4] for row in rows] == [
        ["persistence/v1", "CartPole-v1", "3", "9"],
        ["persistence/v1", "CartPole-v1", "4", "9"],
        ["raising/v1", "CartPole-v1", "3", "0"],
    ]
    assert [row[4] for row in rows] == ["9", "9", "0"]  # CartPole: 1 per step survived
    assert rows[0][5] == "returned"
    # The model's own line, where it raised (an absolute path, as the traceback has it).
    source = inspect.getsourcefile(RaisingModel)
    line = inspect.getsourcelines(RaisingModel.predict)[1] + 1
    assert rows[2][6] == (
        f"step 0: builtins.RuntimeError: checkpoint not loaded (at {source}:{line} in predict)"
    )
    assert rows[0][6] == ""


def test_closed_loop_records_without_their_episodes(closed_loop: Path) -> None:
    text = _show(closed_loop.parent / "alone" / "runs.jsonl")
    rows = _rows(text)
    assert [row[3:6] for row in rows] == [["9", "—", "—"], ["9", "—", "—"], ["0", "—", "—"]]
    assert "which are not beside these records" in " ".join(text.split())


def test_a_remittance_summary_is_its_agents_table(tmp_path: Path) -> None:
    tasks = [task for task in load_tasks() if task.task_id in ("full-01", "duplicate-01")]
    run_demo_suite(tmp_path, agents=["careful", "double_poster"], tasks=tasks, repeats=1)
    text = _show(tmp_path / "remittance" / "summary.json")
    assert _header(text, "agent")[:3] == ["agent", "decision", "accept"]
    rows = {row[0]: row for row in _rows(text) if len(row) == 7}
    assert rows["careful"][1:5] == ["accept", "2", "0", "0"]
    assert rows["double_poster"][1:5] == ["reject", "1", "1", "0"]
    assert re.fullmatch(r"(\w+ \(1\)(, )?)+", rows["double_poster"][5]), rows["double_poster"]
    assert rows["careful"][6] == rows["double_poster"][6] == "yes"
    assert "ablation: what weaker graders accept" in text


def test_a_ledger_summary_is_its_episodes_table(written: dict[str, Path]) -> None:
    text = _show(written["ledger summary"])
    summary = orjson.loads(written["ledger summary"].read_bytes())
    rows = {row[0]: row for row in _rows(text) if len(row) == 5}
    for episode in summary["episodes"]:
        decisions = episode["decisions"]
        assert rows[episode["name"]][1:] == [
            decisions["final_answer"],
            decisions["final_posting"],
            decisions["full_policy"],
            episode["expected"],
        ]
    for run in summary["classic"]:
        assert rows[f"classic {run['name']}"][3:] == [run["decision"], run["expected"]]
    assert "✗" not in text  # every decision as required


@pytest.mark.parametrize("kind", ["ledger decision", "remittance decision", "gate decision"])
def test_every_decision_kind_is_a_table(written: dict[str, Path], kind: str) -> None:
    text = _show(written[kind])
    body = orjson.loads(written[kind].read_bytes())
    assert f"decision: {body['decision']}" in text
    rows = [row for row in _rows(text) if len(row) == 9]
    assert [row[0] for row in rows] == [item["check"] for item in body["requirements"]]
    assert all(row[2] == "met" for row in rows)
