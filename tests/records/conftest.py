"""Every kind of file onrecord writes, written once by the real API (and the real
command line for `gate --output` and `compare --json`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

from onrecord import AcceptancePolicy, CheckRequirement, EvalCase
from onrecord.domains.ledger import run_ledger_experiment, save_ledger_result
from onrecord.domains.remittance import load_tasks, run_demo_suite
from onrecord.dynamics import (
    ExhaustivePlanner,
    PersistenceModel,
    capture_forecast,
    get_simulator,
    run_closed_loop,
    save_forecasts,
    save_runs,
)
from onrecord.dynamics._references import capture_plan
from onrecord.dynamics.experiment import build_protocol
from onrecord.dynamics.experiment._store import save_episodes, write_json, write_manifest
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.integrations.gymnasium import capture_episode
from onrecord.runner import plan_run, regrade_run, start_run
from tests.cli_process import onrecord


class _Big(gym.Env[Any, Any]):
    """Observations of 400 float32 (1,600 bytes): saved as blobs beside the evidence."""

    observation_space = gym.spaces.Box(-1, 1, (400,), np.float32)
    action_space = gym.spaces.Discrete(2)

    def reset(self, *, seed: int | None = None, options: Any = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        self.steps = 0
        return np.zeros(400, np.float32), {}

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        self.steps += 1
        return np.full(400, self.steps / 10, np.float32), 0.0, self.steps >= 3, False, {}


def _three_steps(env: Any, observation: Any, info: Any) -> str:
    for _ in range(3):
        env.step(1)
    return "done"


def _persistence(request: dict[str, Any]) -> dict[str, Any]:
    return {"states": [request["initial_state"]] * len(request["actions"])}


def _dynamics(root: Path, files: dict[str, Path]) -> None:
    cartpole = get_simulator("CartPole-v1")
    plan = [0, 1, 0, 1, 1, 0, 0, 1]
    reference = capture_plan(cartpole, plan, case_id="plan-7", seed=7)
    forecast = capture_forecast(
        reference,
        _persistence,
        model_id="persistence/v1",
        contract=cartpole.contract,
        coordinates=cartpole.coordinates,
        horizons=[1, 4],
        planned_actions=plan,
    )
    files["forecast"] = forecast.save_json(root / "forecast.json")
    files["forecast lines"] = save_forecasts(root / "forecasts.jsonl", [forecast, forecast])
    runs = run_closed_loop(
        cartpole, PersistenceModel(cartpole), ExhaustivePlanner(2), seeds=[0, 1], max_steps=12
    )
    files["closed loop"] = save_runs(root / "alone" / "runs.jsonl", runs)
    files["closed loop, one run"] = save_runs(root / "alone" / "one.json", runs[:1])
    # A world-model output directory, as `worldmodel run` writes one: closed-loop records
    # with their episodes, a protocol, tables and models without digests, a manifest.
    wm = root / "wm"
    write_json(wm / "protocol.json", build_protocol(smoke=True))
    save_episodes(
        wm / "data" / "closed_loop" / "persistence_v1.episodes.jsonl", [r.episode for r in runs]
    )
    save_runs(wm / "closed_loop" / "persistence_v1.jsonl", runs)
    write_json(wm / "tables.json", {"closed_loop": [{"model_id": "persistence/v1"}]})
    write_json(wm / "models" / "persistence_v1.json", PersistenceModel(cartpole).describe())
    (wm / "plots").mkdir()
    (wm / "plots" / "plot.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    write_manifest(wm)
    files.update(
        {
            "wm closed loop": wm / "closed_loop" / "persistence_v1.jsonl",
            "wm protocol": wm / "protocol.json",
            "wm tables": wm / "tables.json",
            "wm model": wm / "models" / "persistence_v1.json",
            "wm plot": wm / "plots" / "plot.png",
            "wm directory": wm,
        }
    )


def _runs(root: Path, files: dict[str, Path]) -> None:
    run = root / "run"
    start_run(run, plan_run("frozenlake", "walks_into_hole", seeds=[0, 1]))
    regrade_run(run, name="again")
    files.update(
        {
            "run directory": run,
            "run decision": run / "decision.json",
            "regrade directory": run / "regrades" / "again",
            "regrade decision": run / "regrades" / "again" / "decision.json",
        }
    )
    big = root / "big-run"  # a Gymnasium run whose large observations are side files
    start_run(big, plan_run("tests.records.conftest:_Big", "random", seeds=[0]))
    files["run side file"] = next((big / "files").iterdir())
    run_demo_suite(
        root / "suite",
        agents=["careful", "double_poster"],
        tasks=load_tasks()[:2],
        repeats=1,
        episodes_dir=root / "tool",
    )
    suite = root / "suite" / "remittance"
    episode = root / "tool" / "careful" / "full-01" / "r0"
    files.update(
        {
            "remittance decision": suite / "careful.decision.json",
            "remittance summary": suite / "summary.json",
            "tool-world episode": episode,
            "tool-world audit": episode / "audit.json",
            "tool-world database": episode / "final.sqlite",
        }
    )
    ledger = root / "ledger"
    save_ledger_result(run_ledger_experiment(ledger), ledger)
    attempt = ledger / "runs" / "correct-seed7-attempt1"
    files.update(
        {
            "ledger directory": ledger,
            "ledger decision": attempt / "decision.json",
            "ledger evidence": attempt / "evidence.json",
            "ledger database": attempt / "ledger.sqlite",
            "ledger protocol": ledger / "protocol.json",
            "ledger summary": ledger / "summary.json",
        }
    )


@pytest.fixture(scope="session")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Kind → a file (or directory) onrecord wrote, verified as it was written."""
    root = tmp_path_factory.mktemp("written")
    task = frozenlake_task()
    episodes = [
        run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=seed) for seed in (1, 2)
    ]
    files: dict[str, Path] = {
        "episode": episodes[0].save_json(root / "episode.json"),
        "report": evaluate_episodes(episodes, list(task.checks)).save_json(root / "report.json"),
        "policy": AcceptancePolicy((CheckRequirement("reached_goal"),)).save_json(
            root / "policy.json"
        ),
    }
    big = capture_episode(
        _Big,
        _three_steps,
        case=EvalCase("large observations", case_id="big"),
        environment_id="big/v1",
        observer_id="steps/v1",
        observe=lambda: {"steps": 1},
        seed=0,
        max_steps=5,
    )
    files["episode with blobs"] = big.save_json(root / "big.json")
    files["blob"] = next((root / "big.json.blobs").iterdir())
    _dynamics(root, files)
    _runs(root, files)
    files["gate decision"] = root / "gate.json"
    done = onrecord(
        "gate",
        str(files["report"]),
        "--policy",
        str(files["policy"]),
        "--output",
        str(root / "gate.json"),
    )
    assert done.returncode == 0, done.stderr
    files["comparison"] = root / "comparison.json"
    done = onrecord(
        "compare",
        str(files["run directory"]),
        str(files["run directory"]),
        "--json",
        str(root / "comparison.json"),
    )
    assert done.returncode == 0, done.stderr
    return files
