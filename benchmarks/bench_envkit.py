"""Environment kit: reset, diffs, audit-trigger cost, action-log throughput.

Run: ``python -m benchmarks.bench_envkit``. Every ratio is against a baseline measured
in this same run (TARGETS.md): the SQLite backup API for reset, a bare fold of the audit
tables for the audit diff, ``sqldiff --primarykey`` for the full scan.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks._timing import best_time, best_times_interleaved, row
from onrecord.envkit import ActionLog, Snapshot, ToolWorld, save_episode
from onrecord.envkit._sql import Table
from onrecord.envkit.audit import audit_tables

SCHEMA = """
CREATE TABLE items (id INTEGER PRIMARY KEY, account INTEGER NOT NULL, amount REAL NOT NULL,
                    memo TEXT);
CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance REAL NOT NULL);
"""


def build(rows: int, *, schema: str = SCHEMA, name: str = "bench") -> Snapshot:
    """100 accounts and ``rows`` items (the same rows whatever the schema's constraints)."""

    def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
        conn.executemany(
            "INSERT INTO accounts VALUES (?, ?, ?)", [(i, f"acct-{i}", 0.0) for i in range(100)]
        )
        conn.executemany(
            "INSERT INTO items VALUES (?, ?, ?, ?)",
            [(i, i % 100, round(rng.uniform(1, 1000), 2), f"memo {i}") for i in range(rows)],
        )

    return Snapshot.build(f"{name}-{rows}", schema, populate, seed=1)


def mutate(world: ToolWorld, rows: int) -> None:
    """Change 1 % of the rows: half updates, a quarter inserts, a quarter deletes."""
    share = max(4, rows // 100)
    conn = world.conn
    conn.execute("BEGIN")
    conn.executemany(
        "UPDATE items SET amount = amount + 1 WHERE id = ?",
        [(i,) for i in range(0, rows, rows // (share // 2))],
    )
    conn.executemany(
        "INSERT INTO items VALUES (?, 1, 1.0, 'new')", [(rows + i,) for i in range(share // 4)]
    )
    conn.executemany(
        "DELETE FROM items WHERE id = ?", [(i,) for i in range(1, rows, rows // (share // 4))]
    )
    conn.execute("COMMIT")


def timed_after(
    prepare: Callable[[], None], action: Callable[[], object], repeat: int = 7
) -> float:
    """Best time of ``action`` with an untimed ``prepare`` before each run."""
    best = float("inf")
    for _ in range(repeat):
        prepare()
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def bare_fold(conn: sqlite3.Connection, layout: list[tuple[Table, str]]) -> int:
    """Baseline: read every shadow table and keep the first old / last new per key."""
    count = 0
    for table, shadow in layout:
        width = len(table.columns)
        first: dict[object, object] = {}
        last: dict[object, object] = {}
        for record in conn.execute(f'SELECT * FROM "{shadow}" ORDER BY _seq'):
            key = record[3] if record[2] != "I" else record[3 + width]
            first.setdefault(key, record[3 : 3 + width])
            last[key] = record[3 + width :]
        count += len(first)
    return count


def bench_size(rows: int, folder: Path) -> list[str]:
    lines = [f"-- {rows:,} rows, 1 % changed"]
    snapshot = build(rows)
    with ToolWorld(snapshot, [], path=folder / f"world-{rows}.db") as world:
        prepare = lambda: mutate(world, rows)  # noqa: E731
        # A page copy makes the next statement on every connection re-parse the schema,
        # an undo does not: what an episode pays is the reset plus its first statement.
        first = lambda: world.conn.execute("SELECT count(*) FROM accounts").fetchone()  # noqa: E731
        reset = timed_after(prepare, lambda: (world.reset(), first()))
        backup = timed_after(prepare, lambda: (snapshot.connection.backup(world.conn), first()))
        lines.append(
            row(
                "reset + next query vs backup API + next query",
                f"{reset * 1e3:.2f} ms {reset / backup:.2f}x",
                "<= 2x",
                reset / backup <= 2,
            )
        )
        alone = timed_after(prepare, world.reset)
        copy = timed_after(prepare, lambda: snapshot.connection.backup(world.conn))
        lines.append(
            row(
                "  reset alone vs backup API alone",
                f"{alone * 1e3:.2f} ms {alone / copy:.2f}x",
                "info",
                True,
            )
        )
        world.reset()
        mutate(world, rows)
        layout = audit_tables(world.conn)
        # Interleaved, and many calls per timing: at 1k rows one diff takes ~40 us.
        calls = max(1, 2000 // rows * 10)
        ours, bare = (
            seconds / calls
            for seconds in best_times_interleaved(
                (
                    lambda: [world.diff() for _ in range(calls)],
                    lambda: [bare_fold(world.conn, layout) for _ in range(calls)],
                ),
                rounds=15,
            )
        )
        lines.append(
            row(
                "audit diff vs bare fold of the audit tables",
                f"{ours * 1e3:.2f} ms {ours / bare:.2f}x",
                "<= 2x",
                ours / bare <= 2,
            )
        )
        scan = best_time(world.scan_diff, repeat=5)
        lines.append(_vs_sqldiff(snapshot, world, scan, folder))
    return lines


def _vs_sqldiff(snapshot: Snapshot, world: ToolWorld, scan: float, folder: Path) -> str:
    tool = shutil.which("sqldiff")
    if tool is None:
        return row(
            "full-scan diff (sqldiff not installed: apt-get install sqlite3-tools)",
            f"{scan * 1e3:.1f} ms",
            "<= 1.5x",
            True,
        )
    before = snapshot.save(folder / f"{snapshot.name}-{world.path.stem}.db")
    world.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    command = [tool, "--primarykey", str(before), str(world.path)]
    reference = best_time(
        lambda: subprocess.run(command, check=True, capture_output=True), repeat=5
    )
    return row(
        "full-scan diff vs sqldiff --primarykey",
        f"{scan * 1e3:.1f} ms {scan / reference:.2f}x",
        "<= 1.5x",
        scan / reference <= 1.5,
    )


FK_SCHEMA = """
CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, balance REAL NOT NULL);
CREATE TABLE items (id INTEGER PRIMARY KEY,
                    account INTEGER NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
                    amount REAL NOT NULL, memo TEXT);
"""


def bench_foreign_keys(folder: Path, rows: int = 100_000) -> list[str]:
    """Reset of a world that enforces foreign keys (``ToolWorld(..., foreign_keys=True)``)
    against the same world without: both undo the audited rows (before, enforcement
    forced a page copy, the third figure)."""

    snapshot = build(rows, schema=FK_SCHEMA, name="bench-fk")
    worlds = [
        ToolWorld(snapshot, [], path=folder / f"fk-{enforced}.db", foreign_keys=enforced)
        for enforced in (True, False)
    ]

    def episode(world: ToolWorld) -> float:
        """An episode's writes (8 updates, an account with two items, deleted: with
        enforcement the delete cascades to them), then the timed reset and the next
        query (which pays for any statement the reset made stale)."""
        conn = world.conn
        conn.execute("BEGIN")
        conn.executemany(
            "UPDATE items SET amount = amount + 1 WHERE id = ?", [(i,) for i in range(8)]
        )
        conn.execute("INSERT INTO accounts VALUES (100, 'new', 0.0)")
        conn.executemany("INSERT INTO items VALUES (?, 100, 1.0, 'new')", [(rows,), (rows + 1,)])
        conn.execute("DELETE FROM accounts WHERE id = 100")
        conn.execute("COMMIT")
        start = time.perf_counter()
        world.reset()
        conn.execute("SELECT count(*) FROM accounts").fetchone()
        return time.perf_counter() - start

    try:
        on = off = float("inf")
        for _ in range(15):  # interleaved: a noisy spell slows both
            on = min(on, episode(worlds[0]))
            off = min(off, episode(worlds[1]))
        enforced = worlds[0].conn
        copy = timed_after(
            lambda: enforced.execute("UPDATE items SET memo = 'x' WHERE id = 1"),
            lambda: (
                snapshot.connection.backup(enforced),
                enforced.execute("SELECT count(*) FROM accounts").fetchone(),
            ),
        )
    finally:
        for world in worlds:
            world.close()
    return [
        row(
            f"reset + next query, foreign_keys on vs off ({rows // 1000}k rows)",
            f"{on * 1e3:.2f} ms {on / off:.2f}x",
            "<= 3x",
            on / off <= 3,
        ),
        row(
            "  foreign_keys on: undo vs page copy (the reset before)",
            f"{on * 1e3:.2f} ms {on / copy:.3f}x",
            "info",
            True,
        ),
    ]


def bench_triggers(rows: int = 20_000) -> str:
    """Extra time per UPDATE with the audit triggers vs the same table without them."""
    audited = build(rows)
    plain = sqlite3.connect(":memory:", isolation_level=None)
    plain.executescript(SCHEMA)
    plain.executemany("INSERT INTO items VALUES (?, 1, 1.0, 'x')", [(i,) for i in range(rows)])
    with ToolWorld(audited, []) as world:

        def updates(conn: sqlite3.Connection) -> Callable[[], None]:
            def run() -> None:
                conn.execute("BEGIN")
                for i in range(rows):
                    conn.execute("UPDATE items SET amount = amount + 1 WHERE id = ?", (i,))
                conn.execute("COMMIT")

            return run

        file_plain = sqlite3.connect(world.path.with_name("plain.db"), isolation_level=None)
        file_plain.execute("PRAGMA journal_mode = WAL")
        file_plain.execute("PRAGMA synchronous = OFF")
        plain.backup(file_plain)
        with_triggers = timed_after(world.reset, updates(world.conn), repeat=5)
        without = best_time(updates(file_plain), repeat=5)
        file_plain.close()
    cost = (with_triggers - without) / rows * 1e6
    return row("audit-trigger cost per write", f"{cost:.1f} us", "<= 20 us", cost <= 20)


def bench_log(folder: Path, events: int = 100_000) -> str:
    def run() -> None:
        log = ActionLog(folder / "actions.jsonl")
        for step in range(1, events + 1):
            log.append(
                {
                    "run_id": "bench",
                    "task_id": "case-1",
                    "step": step,
                    "tool": "allocate",
                    "arguments": {"claim_id": step, "amount": 1.5},
                    "result": {"allocation_id": step},
                    "state_version": step,
                    "status": "ok",
                    "error": None,
                    "reads": [],
                    "ts": 1.7e9 + step,
                    "duration_ns": 12345,
                }
            )
        log.close()  # flush + fsync: the episode end

    rate = events / best_time(run, repeat=3)
    return row(
        "action log append, fsync at episode end",
        f"{rate / 1e3:.0f}k events/s",
        ">= 100k/s",
        rate >= 100_000,
    )


def bench_episodes(folder: Path, seconds: float = 1.0) -> list[str]:
    """Informational: reset + 10 tool calls on a 1k-row snapshot, one process; then the
    same with ``save_episode`` (end database included)."""
    from onrecord.envkit import ToolContext, tool

    @tool(writes=True)
    def bump(ctx: ToolContext, item: int) -> None:
        ctx.execute("UPDATE items SET amount = amount + 1 WHERE id = ?", (item,))

    @tool
    def look(ctx: ToolContext, item: int) -> object:
        return ctx.one("SELECT * FROM items WHERE id = ?", (item,))

    lines = []
    with ToolWorld(build(1_000), [bump, look], path=folder / "episodes.db") as world:
        for label, save in (("", False), (" + save_episode", True)):
            done, start = 0, time.perf_counter()
            while time.perf_counter() - start < seconds:
                world.reset(seed=done)
                for call in range(5):
                    world.call("look", {"item": call})
                    world.call("bump", {"item": call})
                if save:
                    save_episode(world, folder / "episodes" / str(done))
                done += 1
            rate = done / (time.perf_counter() - start)
            lines.append(
                row(f"episodes/s (reset + 10 calls{label}, 1k rows)", f"{rate:.0f}/s", "info", True)
            )
    return lines


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="bench-envkit-") as tmp:
        folder = Path(tmp)
        print(
            f"envkit benchmarks (SQLite {sqlite3.sqlite_version}, Python "
            f"{sys.version.split()[0]}, {os.cpu_count()} CPUs)"
        )
        for rows in (1_000, 100_000):
            print("\n".join(bench_size(rows, folder)))
        print("\n".join(bench_foreign_keys(folder)))
        print("-- writes and log")
        print(bench_triggers())
        print(bench_log(folder))
        print("\n".join(bench_episodes(folder)))


if __name__ == "__main__":
    main()
