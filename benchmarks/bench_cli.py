"""Command-line start-up: wall time of whole ``onrecord`` processes, as a CI job runs them.

Run: ``python -m benchmarks.bench_cli``. Every process is timed in interleaved rounds
(each round runs every command once; the best round counts), against a bare interpreter
start-up (``python -c pass``) measured in the same rounds.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks._timing import best_times_interleaved, row
from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task

ROUNDS = 15
SCRIPT = str(Path(sys.executable).parent / "onrecord")
# What --version and --help may take: interpreter start-up (~15 ms) and argparse.
SMALL_BOUND = 0.1


def _small_records(folder: Path) -> tuple[Path, Path]:
    """A report of one FrozenLake episode and a policy for it."""
    task = frozenlake_task()
    episodes = [run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=1)]
    report = evaluate_episodes(episodes, list(task.checks)).save_json(folder / "report.json")
    policy = AcceptancePolicy((CheckRequirement("reached_goal"),)).save_json(folder / "p.json")
    return report, policy


def _process(command: Sequence[str]) -> Callable[[], object]:
    def run() -> None:
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    return run


def _small_run(folder: Path) -> Path:
    """A run directory of two FrozenLake episodes."""
    from onrecord.runner import plan_run, start_run

    start_run(folder / "run", plan_run("frozenlake", "walks_to_goal", seeds=[1, 2]))
    return folder / "run"


def _fresh_runs(folder: Path, command: Sequence[str]) -> Callable[[], object]:
    """``command`` with ``--out`` a new directory under ``folder`` at every call."""
    calls = iter(range(10**6))

    def run() -> None:
        out = folder / f"out-{next(calls)}"
        subprocess.run(
            [*command, "--out", str(out)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )

    return run


def main() -> None:
    print(f"# command-line start-up (whole processes, best of {ROUNDS} interleaved rounds)")
    with tempfile.TemporaryDirectory() as tmp:
        report, policy = _small_records(Path(tmp))
        run = _small_run(Path(tmp))
        commands: dict[str, list[str]] = {
            "python -c pass (interpreter start-up)": [sys.executable, "-c", "pass"],
            "python -c 'import numpy' (what reading no longer imports)": [
                sys.executable,
                "-c",
                "import numpy",
            ],
            "python -c 'import onrecord.cli.main'": [
                sys.executable,
                "-c",
                "import onrecord.cli.main",
            ],
            "onrecord --version": [SCRIPT, "--version"],
            "onrecord --help": [SCRIPT, "--help"],
            "onrecord verify REPORT (1 episode)": [SCRIPT, "verify", str(report)],
            "onrecord gate REPORT --policy P": [
                SCRIPT,
                "gate",
                str(report),
                "--policy",
                str(policy),
            ],
            "onrecord show REPORT": [SCRIPT, "show", str(report)],
            "onrecord verify RUN (2 FrozenLake episodes)": [SCRIPT, "verify", str(run)],
            "onrecord show RUN": [SCRIPT, "show", str(run)],
        }
        runs = {
            "onrecord run remittance (1 task, 1 episode)": [
                *(SCRIPT, "run", "remittance", "--agent", "careful", "--tasks", "full-01"),
                *("--seeds", "0", "--no-progress"),
            ],
        }
        functions = [_process(c) for c in commands.values()]
        functions += [_fresh_runs(Path(tmp), c) for c in runs.values()]
        times = dict(
            zip(
                [*commands, *runs],
                best_times_interleaved(functions, rounds=ROUNDS),
                strict=True,
            )
        )
    for name, seconds in times.items():
        if name in ("onrecord --version", "onrecord --help"):
            print(row(name, f"{seconds * 1000:.0f} ms", "≤ 100 ms", seconds <= SMALL_BOUND))
        else:
            print(row(name, f"{seconds * 1000:.0f} ms", "(info)", True))


if __name__ == "__main__":
    main()
