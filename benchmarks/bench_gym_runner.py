"""Runner overhead on Gymnasium workloads, against bare loops timed in the same run.

    python -m benchmarks.bench_gym_runner            # full: ~1-2 minutes on 2 cores
    python -m benchmarks.bench_gym_runner --quick    # fewer rounds, same figures

1. CartPole-v1, 200 episodes × 500 steps (the ``cartpole`` example, ``balances``).
2. FrozenLake-v1 4x4, 2,000 episodes of 6 steps (``frozenlake``, ``walks_to_goal``):
   per-episode fixed costs dominate.
3. CartPole-v1 by its Gymnasium id (the default observer of any id), 200 × 500 steps,
   with the same balancing controller as a ``module:callable`` agent.

Each row is a whole ``start_run`` into a fresh directory (recording, fsyncs, the report
and decision at the end), in-process and in a process pool of 2 workers (start-up
included: spawn, imports). The baselines run the same policy on the same seeds: "bare"
reuses one environment (``reset`` + ``step``), "bare, fresh env" builds it with
``gymnasium.make`` every episode as the runner must. Rounds interleave every variant
and the best of each counts, so a noisy spell slows them all; the ratios are run time
over each bare loop's time (the pool's time counted twice: its two cores' ideal).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym

from onrecord.runner import (
    Executor,
    InProcessExecutor,
    ProcessPoolExecutor,
    RunProtocol,
    plan_run,
    start_run,
)

_FROZEN_PATH = (1, 1, 2, 2, 1, 2)  # walks_to_goal on the 4x4 lake


def balance(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """The ``balances`` controller as a plain ``interact`` agent (for the id row)."""
    while True:
        action = int(observation[2] + 0.5 * observation[3] > 0)
        observation, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"


def _cartpole_bare(seeds: int, fresh: bool) -> Callable[[], int]:
    def loop() -> int:
        steps = 0
        env = gym.make("CartPole-v1")
        for seed in range(seeds):
            if fresh:
                env.close()
                env = gym.make("CartPole-v1")
            observation, _ = env.reset(seed=seed)
            while True:
                action = int(observation[2] + 0.5 * observation[3] > 0)
                observation, _, terminated, truncated, _ = env.step(action)
                steps += 1
                if terminated or truncated:
                    break
        env.close()
        return steps

    return loop


def _frozenlake_bare(seeds: int, fresh: bool) -> Callable[[], int]:
    def loop() -> int:
        steps = 0
        env = gym.make("FrozenLake-v1", is_slippery=False)
        for seed in range(seeds):
            if fresh:
                env.close()
                env = gym.make("FrozenLake-v1", is_slippery=False)
            env.reset(seed=seed)
            for action in _FROZEN_PATH:
                _, _, terminated, truncated, _ = env.step(action)
                steps += 1
                if terminated or truncated:
                    break
        env.close()
        return steps

    return loop


def _run(plan: RunProtocol, make: Callable[[], Executor], root: Path) -> Callable[[], int]:
    def once() -> int:
        with tempfile.TemporaryDirectory(dir=root) as tmp, make() as executor:
            result = start_run(Path(tmp) / "run", plan, executor=executor)
        if not result.complete or result.errors:
            raise SystemExit(f"episodes failed to record: {result.errors[:3]}")
        return sum(int(trial.measures.get("steps", 0)) for trial in result.report.trials)

    return once


def _best(variants: dict[str, Callable[[], int]], rounds: int) -> dict[str, tuple[float, int]]:
    best: dict[str, tuple[float, int]] = {name: (float("inf"), 0) for name in variants}
    for _ in range(rounds):
        for name, variant in variants.items():
            started = time.perf_counter()
            steps = variant()
            seconds = time.perf_counter() - started
            if seconds < best[name][0]:
                best[name] = (seconds, steps)
    return best


def workload(
    title: str,
    episodes: int,
    bare: Callable[[int, bool], Callable[[], int]],
    plan: RunProtocol,
    root: Path,
    rounds: int,
) -> dict[str, float]:
    """Time one workload's variants; print episodes/s, steps/s and ratios."""
    print(f"{title} ({episodes} episodes, best of {rounds} interleaved rounds)")
    timed = _best(
        {
            "bare": bare(episodes, False),
            "bare, fresh env": bare(episodes, True),
            "run, in-process": _run(plan, InProcessExecutor, root),
            "run, pool of 2": _run(plan, lambda: ProcessPoolExecutor(2), root),
        },
        rounds,
    )
    base, fresh = timed["bare"][0], timed["bare, fresh env"][0]
    ratios = {}
    for name, (seconds, steps) in timed.items():
        cores = 2 if "pool" in name else 1
        ratios[name] = seconds * cores / base
        print(
            f"  {name:<17} {seconds:7.3f} s  {episodes / seconds:8.1f} ep/s  "
            f"{steps / seconds:9.0f} steps/s  {seconds * cores / base:5.2f}x bare  "
            f"{seconds * cores / fresh:5.2f}x fresh" + ("  (per core)" if cores > 1 else "")
        )
    return ratios


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    args = parser.parse_args()
    rounds = 2 if args.quick else 5
    seeds = list(range(200))
    with tempfile.TemporaryDirectory(prefix="bench-gym-runner-") as tmp:
        root = Path(tmp)
        workload(
            "1. cartpole, balances, 500 steps",
            200,
            _cartpole_bare,
            plan_run("cartpole", "balances", seeds=seeds),
            root,
            rounds,
        )
        workload(
            "2. frozenlake, walks_to_goal, 6 steps",
            2000,
            _frozenlake_bare,
            plan_run("frozenlake", "walks_to_goal", seeds=list(range(2000))),
            root,
            rounds,
        )
        workload(
            "3. CartPole-v1 by id (default observer), balancing agent, 500 steps",
            200,
            _cartpole_bare,
            plan_run(
                "CartPole-v1",
                "benchmarks.bench_gym_runner:balance",
                seeds=seeds,
                max_steps=500,
            ),
            root,
            rounds,
        )


if __name__ == "__main__":
    main()
