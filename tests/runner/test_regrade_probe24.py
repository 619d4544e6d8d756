"""Probe 24: re-grading tool-world runs rebuilds exactly the end state the run recorded
and gives exactly the run's verdicts, for remittance agents and for a world of one's own
with its own triggers, composite and text keys, BLOB/REAL/NULL values, TEXT that is not
UTF-8, WITHOUT ROWID and AUTOINCREMENT tables, rows deleted and created again, and UNIQUE
values that move between rows; an edited diff is refused and leaves the run as it was.
Workers import the world by path (``tests.runner.test_regrade_probe24:ledger``)."""

from __future__ import annotations

import hashlib
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord import EvalCase
from onrecord._canonical import content_digest, record_bytes
from onrecord.envkit import Snapshot, ToolContext, ToolEpisode, no_other_changes, passed, tool
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.errors import ConsistencyError
from onrecord.runner import (
    AgentContext,
    ToolWorldProvider,
    agent_factory,
    plan_run,
    regrade_run,
    start_run,
)
from tests.runner.conftest import ROOT, onrecord

ENV = "tests.runner.test_regrade_probe24:ledger"

SCHEMA = """
CREATE TABLE accounts (owner TEXT NOT NULL, currency TEXT NOT NULL, balance REAL,
                       note BLOB, label TEXT, PRIMARY KEY (owner, currency)) WITHOUT ROWID;
CREATE TABLE totals (currency TEXT PRIMARY KEY, total REAL NOT NULL);
CREATE TABLE seats (id INTEGER PRIMARY KEY, person TEXT NOT NULL UNIQUE,
                    rank INTEGER NOT NULL UNIQUE CHECK (rank > 0));
CREATE TABLE journal (id INTEGER PRIMARY KEY AUTOINCREMENT, entry TEXT NOT NULL);
CREATE TABLE loose (a TEXT, b INTEGER);
CREATE TRIGGER keep_totals AFTER INSERT ON accounts BEGIN
  INSERT INTO totals VALUES (NEW.currency, coalesce(NEW.balance, 0))
  ON CONFLICT (currency) DO UPDATE SET total = total + coalesce(NEW.balance, 0);
END;
CREATE TRIGGER no_negative BEFORE UPDATE OF balance ON accounts
  WHEN NEW.balance < 0 BEGIN SELECT RAISE(ABORT, 'negative balance'); END;
"""


def populate(conn: sqlite3.Connection, rng: Any) -> None:
    conn.executemany(
        "INSERT INTO accounts VALUES (?, ?, ?, ?, ?)",
        [
            ("ana", "EUR", 10.5, b"\x00\xff", "a"),
            ("ana", "USD", None, None, None),
            ("ben", "EUR", 2.25, b"", "b"),
        ],
    )
    conn.executemany(
        "INSERT INTO seats VALUES (?, ?, ?)", [(1, "ana", 1), (2, "ben", 2), (3, "cai", 3)]
    )
    conn.executemany("INSERT INTO journal (entry) VALUES (?)", [("opened",), ("seeded",)])
    conn.executemany("INSERT INTO loose VALUES (?, ?)", [("x", 1), ("y", None)])


@tool(writes=True, example={"sql": "UPDATE seats SET rank = 9 WHERE id = 1"})
def execute(ctx: ToolContext, sql: str) -> dict[str, Any]:
    """Run one SQL statement (a back door: the probe's agents script every write)."""
    return {"rows": ctx.execute(sql).rowcount}


@tool(writes=True, example={"owner": "ana", "currency": "EUR", "blob": "00"})
def put_raw(ctx: ToolContext, owner: str, currency: str, blob: str) -> dict[str, Any]:
    """Store a BLOB note and a label that is not UTF-8 (bytes from hex)."""
    raw = bytes.fromhex(blob)
    ctx.execute(
        "INSERT INTO accounts (owner, currency, balance, note, label) "
        "VALUES (?, ?, ?, ?, CAST(? AS TEXT))",
        (owner, currency, 1e308 * 10, raw, raw),
    )
    return {"ok": True}


TASKS = [EvalCase({"n": 1}, {"rules": [no_other_changes()]}, case_id="t1")]

# Each agent: the calls it makes before finish.
SCRIPTS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    # UNIQUE values moved between rows (through a temporary value, as SQLite needs):
    # the diff holds only the end, rank 1 <-> 2 and a chain of people.
    "swap_ranks": [
        ("execute", {"sql": "UPDATE seats SET rank = rank + 100 WHERE id IN (1, 2)"}),
        ("execute", {"sql": "UPDATE seats SET rank = 2 WHERE id = 1"}),
        ("execute", {"sql": "UPDATE seats SET rank = 1 WHERE id = 2"}),
    ],
    "shift_people": [
        ("execute", {"sql": "UPDATE seats SET person = person || '-'"}),
        ("execute", {"sql": "UPDATE seats SET person = 'dan' WHERE id = 3"}),
        ("execute", {"sql": "UPDATE seats SET person = 'cai' WHERE id = 2"}),
        ("execute", {"sql": "UPDATE seats SET person = 'ben' WHERE id = 1"}),
    ],
    # A row of each kind: changed, deleted, created (the edits below start from it).
    "reseat": [
        ("execute", {"sql": "UPDATE seats SET rank = 5 WHERE id = 1"}),
        ("execute", {"sql": "DELETE FROM seats WHERE id = 3"}),
        ("execute", {"sql": "INSERT INTO seats VALUES (4, 'dan', 4)"}),
    ],
    # The user's AFTER INSERT trigger writes totals; its BEFORE UPDATE trigger refuses.
    "own_triggers": [
        ("execute", {"sql": "INSERT INTO accounts VALUES ('cai', 'EUR', 4.0, NULL, 'c')"}),
        ("execute", {"sql": "UPDATE accounts SET balance = -1 WHERE owner = 'ana'"}),
        ("put_raw", {"owner": "dan", "currency": "GBP", "blob": "ff00fe"}),
    ],
    # Deleted, then created again under the same key (composite, WITHOUT ROWID), and
    # AUTOINCREMENT rows created and deleted, a keyless table's rows by rowid.
    "recreate": [
        ("execute", {"sql": "DELETE FROM accounts WHERE owner = 'ben'"}),
        ("execute", {"sql": "INSERT INTO accounts VALUES ('ben', 'EUR', 0.1, x'01', NULL)"}),
        ("execute", {"sql": "INSERT INTO journal (entry) VALUES ('a'), ('b')"}),
        ("execute", {"sql": "DELETE FROM journal WHERE entry = 'b' OR id = 1"}),
        ("execute", {"sql": "DELETE FROM loose WHERE a = 'x'"}),
        ("execute", {"sql": "INSERT INTO loose VALUES (x'ff', 2.5)"}),
        ("execute", {"sql": "UPDATE loose SET b = NULL, a = CAST(x'80' AS TEXT)"}),
    ],
}


def _scripted(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    @agent_factory
    def factory(context: AgentContext) -> Any:
        steps = iter([*calls, ("finish", {"message": "done"})])

        def act(observation: Mapping[str, Any]) -> dict[str, Any]:
            name, arguments = next(steps)
            return {"tool": name, "arguments": arguments}

        return act

    return factory


@agent_factory
def runs_sql(context: AgentContext) -> Any:
    """Runs the task's own statements (``input["sql"]``), for generated tasks."""
    return _scripted([("execute", {"sql": sql}) for sql in context.case.input["sql"]])(context)


def _whole_state(episode: ToolEpisode) -> OutcomeVerdict:
    """Passes with a digest of every user table as a scan returns it (no ORDER BY: in
    rowid order) with each row's rowid and values' storage classes: equal reasons, live
    and re-graded, mean equal end states, unchanged tables and row order included."""
    conn = episode.connect()
    conn.text_factory = bytes  # TEXT that is not UTF-8 too
    try:
        names = conn.execute(
            "SELECT name, wr FROM pragma_table_list WHERE type = 'table' AND schema = 'main' "
            "AND name NOT LIKE 'sqlite!_%' ESCAPE '!' AND name NOT LIKE '!_onrecord!_%' "
            "ESCAPE '!' ORDER BY name"
        ).fetchall()
        digest = hashlib.sha256()
        for name, without_rowid in names:
            rowid = "" if without_rowid else "rowid, "
            rows = conn.execute(f'SELECT {rowid}* FROM "{name.decode()}"').fetchall()
            digest.update(repr((name, [(v, type(v).__name__) for r in rows for v in r])).encode())
    finally:
        conn.close()
    return passed(digest.hexdigest())


WHOLE_STATE = OutcomeCheck("whole_state", "v1", _whole_state)


def ledger() -> Any:
    """``module:factory``: the probe's world."""
    return ToolWorldProvider(
        Snapshot.build("ledger", SCHEMA, populate),
        [execute, put_raw],
        environment_id="ledger/v1",
        tasks=TASKS,
        checks=[WHOLE_STATE],
        agents={"runs_sql": runs_sql, **{name: _scripted(c) for name, c in SCRIPTS.items()}},
        max_steps=40,
    )


# -- helpers ----------------------------------------------------------------------------


def _trials(path: Path) -> list[Any]:
    return orjson.loads((path / "report.json").read_bytes())["trials"]


def _files(run_dir: Path) -> dict[str, bytes]:
    """Every file of the run, by relative path, with its bytes."""
    return {
        str(path.relative_to(run_dir)): path.read_bytes()
        for path in sorted(run_dir.rglob("*"))
        if path.is_file()
    }


def _regraded_equals_run(run_dir: Path, name: str = "same") -> None:
    regrade = regrade_run(run_dir, name=name)
    assert regrade.changes == ()
    # Every trial as the run graded it: each check's status, reason and evidence, the
    # measures and the coverage issues.
    assert _trials(regrade.path) == _trials(run_dir)


def _reseal(run_dir: Path, edit: Any) -> None:
    """Apply ``edit`` to the first record's evidence and recompute its digests (what a
    hand edit that knows the format does)."""
    path = run_dir / "episodes.jsonl"
    lines = path.read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    edit(record["evidence"])
    record["evidence"]["digest"] = content_digest(
        {k: v for k, v in record["evidence"].items() if k != "digest"}
    )
    # The trial graded the evidence by that digest: a forge consistent with every
    # digest of the record names the new one there too (verify checks they agree).
    record["trial"]["source"]["digest"] = record["evidence"]["digest"]
    record["digest"] = content_digest({k: v for k, v in record.items() if k != "digest"})
    path.write_bytes(record_bytes(record) + b"".join(lines[1:]))


# -- the run's own checks give the run's verdicts -----------------------------------------


@pytest.mark.parametrize(
    "agent",
    [
        "careful",
        "double_poster",
        "change_and_restore",
        "crash_after_commit",
        "claims_done_without_writing",
    ],
)
def test_regrading_a_remittance_run_gives_its_verdicts(tmp_path: Path, agent: str) -> None:
    protocol = plan_run("remittance", agent, seeds=[0, 1], environment_config={"size": 12})
    start_run(tmp_path / "run", protocol)
    _regraded_equals_run(tmp_path / "run")


@pytest.mark.parametrize("agent", sorted(SCRIPTS))
def test_regrading_an_own_world_rebuilds_its_end_state(tmp_path: Path, agent: str) -> None:
    # Before: UNIQUE values moved between rows (swap_ranks, shift_people) made regrade
    # fail with "UNIQUE constraint failed ... the run directory was edited".
    start_run(tmp_path / "run", plan_run(ENV, agent, seeds=[0, 1]))
    trials = _trials(tmp_path / "run")
    assert {r["name"]: r["status"] for r in trials[0]["results"]}["whole_state"] == "pass"
    _regraded_equals_run(tmp_path / "run")


STATEMENTS = st.sampled_from(
    [
        "UPDATE seats SET rank = rank + 100",
        "UPDATE seats SET rank = rank - 100 WHERE rank > 100",
        "UPDATE seats SET rank = 4 WHERE rank = 1",
        "UPDATE seats SET rank = 1 WHERE rank = 3",
        "UPDATE seats SET rank = 3 WHERE rank = 4",
        "UPDATE seats SET person = person || '+' WHERE id = 2",
        "UPDATE seats SET person = 'ana' WHERE id = 3",
        "UPDATE seats SET person = 'zed' WHERE person = 'ana'",
        "DELETE FROM seats WHERE id = 1",
        "INSERT INTO seats (person, rank) VALUES ('eve', 7)",
        "INSERT OR REPLACE INTO seats VALUES (1, 'ben', 9)",
        "DELETE FROM accounts WHERE owner = 'ana' AND currency = 'USD'",
        "INSERT INTO accounts VALUES ('ana', 'USD', 1.5, x'00', CAST(x'c3' AS TEXT))",
        "UPDATE accounts SET balance = balance * 2, note = x'' WHERE currency = 'EUR'",
        "INSERT INTO journal (entry) VALUES ('x')",
        "DELETE FROM journal WHERE id = (SELECT max(id) FROM journal)",
        "DELETE FROM loose WHERE rowid = 1",
        "INSERT INTO loose VALUES ('z', 1e999)",
        "UPDATE totals SET total = -total",
    ]
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(statements=st.lists(STATEMENTS, min_size=1, max_size=8))
def test_property_regrading_reproduces_any_sequence_of_writes(
    tmp_path_factory: pytest.TempPathFactory, statements: list[str]
) -> None:
    # Statements that fail (a UNIQUE or CHECK constraint, the user's trigger) are
    # rejected calls: the world rolls them back, and they are part of the test too.
    run_dir = tmp_path_factory.mktemp("run") / "run"
    task = EvalCase({"sql": statements}, {"rules": [no_other_changes()]}, case_id="gen")
    start_run(run_dir, plan_run(ENV, "runs_sql", tasks=[task]))
    _regraded_equals_run(run_dir)


# -- an edited diff is refused, and the run is left as it was -----------------------------


def _reseat_run(run_dir: Path) -> None:
    start_run(run_dir, plan_run(ENV, "reseat", seeds=[0]))


EDITS = {
    # Only a row as it was before the episode: no end-state digest covers it, but rules
    # (changed(where=...)) grade it. Before: accepted, graded as edited.
    "before": lambda diff: diff["seats"]["changed"][0]["before"].update(rank=3),
    "key": lambda diff: diff["seats"]["changed"][0].update(key=2),
    "deleted row": lambda diff: diff["seats"]["deleted"][0].update(rank=30),
    # Rows the schema refuses once applied: SQLite's error, as an edited run.
    "unique": lambda diff: diff["seats"]["created"].append({"id": 9, "person": "ana", "rank": 9}),
    "check": lambda diff: diff["seats"]["created"].append({"id": 9, "person": "x", "rank": -1}),
    "primary key": lambda diff: diff["seats"]["created"].append(
        {"id": 2, "person": "x", "rank": 9}
    ),
    "after": lambda diff: diff["seats"]["changed"][0]["after"].update(rank=6),
}


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_an_edited_diff_is_refused_and_nothing_is_written(tmp_path: Path, edit: str) -> None:
    run_dir = tmp_path / "run"
    _reseat_run(run_dir)
    _reseal(run_dir, lambda evidence: EDITS[edit](evidence["diff"]))
    before = _files(run_dir)
    with pytest.raises(ConsistencyError, match=r"'t1'|t1#0"):
        regrade_run(run_dir, name="edited")
    assert _files(run_dir) == before  # nothing written, nothing half-written
    assert not (run_dir / "regrades").exists() or not any((run_dir / "regrades").iterdir())


def test_an_edited_before_is_refused_by_the_cli(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    _reseat_run(run_dir)
    _reseal(run_dir, lambda evidence: EDITS["before"](evidence["diff"]))
    done = onrecord("regrade", str(run_dir), "--name", "edited", "--no-progress")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "the recorded diff of 't1' says rows of tables ['seats']" in done.stderr
    assert "changed after recording" in done.stderr
    assert not (run_dir / "regrades" / "edited").exists()


# -- an interrupted regrade leaves nothing behind -----------------------------------------


def _slow(episode: ToolEpisode) -> OutcomeVerdict:
    """Says, in a file, that re-grading has begun; then holds until the test's signal
    lands. (It slept 0.2 s per episode before: a test process not scheduled for 2.4 s,
    on a busy CI machine, signalled a regrade that had already finished.)"""
    Path(os.environ["PROBE24_STARTED"]).touch()
    deadline = time.monotonic() + 120  # a bound on a test that never signals
    while time.monotonic() < deadline:
        time.sleep(0.01)  # short naps: the signal's handler runs between them
    raise RuntimeError("held for 120 s and the test never signalled")


SLOW = OutcomeCheck("slow", "v1", _slow)
REGRADE_ARGS = ["--checks", f"{__name__}:SLOW", "--name", "cut", "--no-progress"]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_regrade_leaves_nothing_half_written(
    tmp_path: Path, signum: signal.Signals
) -> None:
    run_dir = tmp_path / "run"
    start_run(run_dir, plan_run(ENV, "recreate", seeds=list(range(12))))
    files = _files(run_dir)
    started, scratch = tmp_path / "started", tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PROBE24_STARTED": str(started)}
    env["TMPDIR"] = str(scratch)  # where the rebuilt end states are
    process = subprocess.Popen(
        [str(Path(sys.executable).parent / "onrecord"), "regrade", str(run_dir), *REGRADE_ARGS],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        # Not before the work: a signal then would test an empty regrade.
        assert started.exists(), "the regrade never reached its checks"
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 130, stderr  # as Ctrl-C, SIGTERM too
    assert _files(run_dir) == files  # no regrades/cut, no .regrade-* staging, run intact
    assert [p.name for p in run_dir.iterdir() if p.name.startswith(".regrade")] == []
    assert list(scratch.iterdir()) == []  # the rebuilt end state is removed too
    verified = onrecord("verify", str(run_dir))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    regrade_run(run_dir, name="cut")  # the name is free: nothing took it
