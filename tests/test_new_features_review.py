"""Review of the newest features as a demanding user drives them: `onrecord show RUN
--episode`, `onrecord gate --output` beside a run. Real runs, real subprocesses."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from rich.console import Console

from onrecord.cli._run_episode import _tool_calls
from onrecord.runner import RunStore, plan_run, start_run
from tests.runner.conftest import onrecord
from tests.runner.test_regrade import _lake_run


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("lake") / "run"
    _lake_run(run)  # frozenlake/goal, repeats 0 and 1
    return run


@pytest.fixture(scope="module")
def remittance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("remittance") / "run"
    start_run(
        run,
        plan_run("remittance", "careful", seeds=[0], environment_config={"size": 30}),
    )
    return run


def test_a_non_ascii_digit_repeat_is_bad_input_not_a_traceback(lake: Path) -> None:
    # '²'.isdigit() is True and int('²') raises: exit 1 (a CI gate's "reject").
    done = onrecord("show", str(lake), "--episode", "frozenlake/goal#²")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr


def test_a_case_id_that_ran_several_times_names_its_episodes(lake: Path) -> None:
    # Was: "recorded no such episode", though it recorded it twice.
    done = onrecord("show", str(lake), "--episode", "frozenlake/goal")
    assert done.returncode == 3
    assert "ran 2 times" in done.stderr
    assert "frozenlake/goal#0, frozenlake/goal#1" in done.stderr
    assert "no such episode" not in done.stderr


def test_steps_select_tool_calls_by_the_step_number_shown(remittance: Path) -> None:
    case, repeat = next(RunStore.open(remittance).records()).key
    done = onrecord("show", str(remittance), "--episode", f"{case}#{repeat}", "--steps", "1")
    assert done.returncode == 0, done.stderr
    rows = re.findall(r"^│ (\d+) +│", done.stdout, flags=re.MULTILINE)
    assert rows == ["1"], done.stdout  # was the row labelled 2


def test_a_huge_tool_world_episode_shows_the_first_calls_and_the_failures() -> None:
    events = [
        {
            "step": n,
            "tool": "read",
            "status": "ok" if n != 500 else "invalid_arguments",
            "arguments": {},
            "result": n,
            "error": "bad" if n == 500 else None,
        }
        for n in range(1, 1001)
    ]
    console = Console(record=True, width=200)
    _tool_calls(console, events, None)
    text = console.export_text()
    rows = re.findall(r"^│ (\d+) +│", text, flags=re.MULTILINE)
    assert rows == [*(str(n) for n in range(1, 41)), "500"]  # was every one of 1,000
    assert "--steps all" in text


def test_gate_output_never_makes_a_run_fail_verification(lake: Path) -> None:
    policy = lake.parent / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "short"\n')
    target = lake / "regrades" / "gated" / "decision.json"
    done = onrecord("gate", str(lake), "--policy", str(policy), "--output", str(target))
    assert done.returncode == 3, done.stdout + done.stderr
    assert not (lake / "regrades" / "gated").exists()
    assert onrecord("verify", str(lake)).returncode == 0
    beside = lake / "gate.json"  # beside the run's files is fine
    done = onrecord("gate", str(lake), "--policy", str(policy), "--output", str(beside))
    assert done.returncode == 0, done.stdout + done.stderr
    assert onrecord("verify", str(lake)).returncode == 0


def test_no_output_option_makes_a_fake_regrade(lake: Path) -> None:
    # The same guard for every output option, not only gate's.
    fake = lake / "regrades" / "mine"
    for command in (
        ("compare", str(lake), str(lake), "--json", str(fake / "c.json")),
        ("report", str(lake), "-o", str(fake / "page.html")),
    ):
        done = onrecord(*command)
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "is not a regrade of the run" in done.stderr
        assert not fake.exists()
    assert onrecord("verify", str(lake)).returncode == 0
