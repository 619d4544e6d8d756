"""Domain environments: remittance snapshot generation and episode cost, ledger run.

Run: ``python -m benchmarks.bench_domains``. Ratios are against baselines measured in
this same run: a bare loop of the same tool calls on the same world (no agent, no
saving, no checks) for a remittance episode; SQLite ``executemany`` of the same rows for
snapshot generation.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from benchmarks._timing import best_time
from onrecord.domains.ledger import run_ledger_experiment
from onrecord.domains.remittance import (
    REMITTANCE_CHECKS,
    SCHEMA,
    Generator,
    RemittanceEnvironment,
    ScriptedAgent,
    load_tasks,
    remittance_trial,
)
from onrecord.domains.remittance._generator import insert_rows


def bench_generation() -> None:
    for rows in (1_000, 10_000, 100_000):
        generator = Generator(3)
        start = time.perf_counter()
        generator.background(rows)
        build = time.perf_counter() - start
        total = sum(len(r) for r in generator.rows.values())

        def insert(generator: Generator = generator) -> None:
            db = sqlite3.connect(":memory:")
            db.executescript(SCHEMA)
            insert_rows(generator, db)
            db.close()

        write = best_time(insert, repeat=3)
        print(
            f"snapshot {rows:>7} rows requested: {total:>7} rows, generate {build * 1e3:7.1f} "
            f"ms + insert {write * 1e3:7.1f} ms"
        )


def bench_episode() -> None:
    task = next(t for t in load_tasks() if t.task_id == "partial-04")  # 300 background rows
    env = RemittanceEnvironment(task)
    with tempfile.TemporaryDirectory() as scratch:
        first = env.run(ScriptedAgent("careful", env.brief), Path(scratch) / "first")
        calls = [(e["tool"], e["arguments"]) for e in first.episode.actions]

        def bare() -> None:
            env.world.reset()
            for tool, arguments in calls:
                env.world.call(tool, arguments)

        counter = iter(range(10**9))

        def full() -> None:
            run = env.run(ScriptedAgent("careful", env.brief), Path(scratch) / f"ep{next(counter)}")
            remittance_trial(run.episode, REMITTANCE_CHECKS)

        base, whole = best_time(bare, repeat=20), best_time(full, repeat=20)
    env.close()
    print(
        f"remittance episode ({len(calls)} calls): bare tool loop {base * 1e3:.2f} ms, "
        f"agent + save + 9 checks {whole * 1e3:.2f} ms ({whole / base:.1f}x, "
        f"{1 / whole:.0f} episodes/s in one process)"
    )


def bench_ledger() -> None:
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        run_ledger_experiment(scratch)
        print(
            f"ledger experiment (18 attempts + 5 native runs): {time.perf_counter() - start:.2f} s"
        )


if __name__ == "__main__":
    bench_generation()
    bench_episode()
    bench_ledger()
