"""``onrecord demo``: the main job on the embedded default, with a readable summary."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress
from rich.table import Table

from onrecord.cli._render import make_console
from onrecord.episode import evaluate_episodes
from onrecord.examples import (
    CARTPOLE_AGENTS,
    FROZENLAKE_AGENTS,
    cartpole_task,
    frozenlake_task,
    run_gym_task,
)

__all__ = ["register", "run_gym_demo"]

SEEDS = (7, 8, 9)


def register(subparsers: Any) -> None:
    """Add the ``demo`` subcommand."""
    parser = subparsers.add_parser(
        "demo", help="run the built-in demonstration and write its reports",
        description="Evaluate reference agents on real environments, print an agent × "
                    "decision table and write JSON reports to --output-dir.")
    parser.add_argument("--output-dir", default="demo-output", type=Path)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run every demo section; exit 0 when each decision is the expected one."""
    console = make_console()
    rows = run_gym_demo(args.output_dir, console)
    table = Table("environment", "agent", "decision", "expected", "why", title="gymnasium")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print(f"reports written to {args.output_dir}/")
    return 0 if all(row[2] == row[3] for row in rows) else 1


_EXPECTED = {"walks_to_goal": "accept", "walks_into_hole": "reject",
             "gives_up_early": "indeterminate", "balances": "accept", "always_left": "reject"}


def run_gym_demo(output_dir: Path, console: Console) -> list[tuple[str, str, str, str, str]]:
    """FrozenLake and CartPole reference agents, 3 seeds each."""
    plan = [(frozenlake_task(), FROZENLAKE_AGENTS), (cartpole_task(), CARTPOLE_AGENTS)]
    rows = []
    with Progress(console=console, transient=True) as progress:
        bar = progress.add_task("gymnasium episodes", total=sum(len(a) for _, a in plan) * 3)
        for task, agents in plan:
            for name, make_agent in agents.items():
                episodes = []
                for seed in SEEDS:
                    episodes.append(run_gym_task(task, make_agent(), seed=seed))
                    progress.advance(bar)
                report = evaluate_episodes(episodes, task.checks)
                stem = f"{task.case.case_id.replace('/', '-')}-{name}"
                report.save_json(output_dir / "gymnasium" / f"{stem}.report.json")
                for episode in episodes:
                    episode.save_json(output_dir / "gymnasium" / "evidence" /
                                      f"{episode.digest}.json")
                decision = task.policy.evaluate(report)
                rows.append((task.env_id, name, decision.decision, _EXPECTED[name],
                             decision.headline))
    return rows
