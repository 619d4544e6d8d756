"""Round 38 probe: a pharmacy stock ledger built from docs/envkit.md, with a schema that
has what real schemas have (composite keys, WITHOUT ROWID, a table keyed by rowid, an
UPSERT on a UNIQUE constraint, INSERT OR REPLACE, ON DELETE CASCADE, a trigger of its
own, a generated column, a view, NULLs and every storage class), cross-checked against
plain SELECTs of the world's file, not the kit's own readers."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvalCase
from onrecord.envkit import (
    Snapshot,
    SnapshotError,
    ToolContext,
    ToolWorld,
    changed,
    created,
    no_other_changes,
    replay,
    save_episode,
    tool,
    tool_episode_trial,
)
from onrecord.errors import InputError, OnrecordError

SCHEMA = """
CREATE TABLE drugs (ndc TEXT PRIMARY KEY, name TEXT NOT NULL, unit_price REAL,
                    label BLOB, touched INTEGER NOT NULL DEFAULT 0);
CREATE TABLE stock (ndc TEXT NOT NULL REFERENCES drugs(ndc) ON DELETE CASCADE,
                    lot TEXT NOT NULL, qty INTEGER NOT NULL CHECK (qty >= 0),
                    value REAL GENERATED ALWAYS AS (qty * 1.5) VIRTUAL,
                    PRIMARY KEY (ndc, lot)) WITHOUT ROWID;
CREATE TABLE movements (ndc TEXT, lot TEXT, delta INTEGER, note TEXT);
CREATE TABLE prices (id INTEGER PRIMARY KEY AUTOINCREMENT, ndc TEXT NOT NULL,
                     payer TEXT NOT NULL, price REAL, UNIQUE (ndc, payer));
CREATE TABLE holds (ndc TEXT PRIMARY KEY REFERENCES drugs(ndc) ON DELETE CASCADE,
                    reason TEXT);
CREATE TRIGGER stock_move AFTER UPDATE OF qty ON stock BEGIN
  INSERT INTO movements VALUES (NEW.ndc, NEW.lot, NEW.qty - OLD.qty, NULL);
END;
CREATE TRIGGER drug_touch AFTER UPDATE OF unit_price ON drugs BEGIN
  UPDATE drugs SET touched = touched + 1 WHERE ndc = NEW.ndc;
END;
CREATE VIEW on_hand AS SELECT ndc, sum(qty) AS qty FROM stock GROUP BY ndc;
"""
TABLES = ("drugs", "stock", "movements", "prices", "holds", "sqlite_sequence")


def _populate(conn: sqlite3.Connection, rng: random.Random) -> None:
    conn.executemany(
        "INSERT INTO drugs (ndc, name, unit_price, label) VALUES (?, ?, ?, ?)",
        [("A1", "amox", 1.25, b"\x00\x01"), ("B2", "ibu", None, None), ("C3", "cod", 9.5, b"")],
    )
    conn.executemany(
        "INSERT INTO stock (ndc, lot, qty) VALUES (?, ?, ?)",
        [("A1", "L1", 10), ("A1", "L2", 5), ("B2", "L1", 7), ("C3", "L9", 2)],
    )
    conn.executemany(
        "INSERT INTO prices (ndc, payer, price) VALUES (?, ?, ?)",
        [("A1", "P1", 1.0), ("B2", "P1", 2.0)],
    )
    conn.execute("INSERT INTO holds VALUES ('C3', 'controlled')")
    conn.execute("INSERT INTO movements VALUES ('A1', 'L1', 10, 'opening')")


@tool(writes=True)
def dispense(ctx: ToolContext, ndc: str, lot: str, qty: int) -> dict[str, Any]:
    """Dispense qty from a lot (the schema's trigger logs the movement)."""
    sql = "UPDATE stock SET qty = qty - ? WHERE ndc = ? AND lot = ? AND qty >= ?"
    if ctx.execute(sql, (qty, ndc, lot, qty)).rowcount != 1:
        ctx.reject(f"cannot dispense {qty} of {ndc}/{lot}")
    return {}


@tool(writes=True)
def set_price(ctx: ToolContext, ndc: str, payer: str, price: float) -> dict[str, Any]:
    """Set a payer's price (UPSERT on the UNIQUE (ndc, payer))."""
    ctx.execute(
        "INSERT INTO prices (ndc, payer, price) VALUES (?, ?, ?) "
        "ON CONFLICT (ndc, payer) DO UPDATE SET price = excluded.price",
        (ndc, payer, price),
    )
    return {}


@tool(writes=True)
def set_unit_price(ctx: ToolContext, ndc: str, price: float | None) -> dict[str, Any]:
    """Set a drug's unit price (the schema's trigger bumps `touched`)."""
    ctx.execute("UPDATE drugs SET unit_price = ? WHERE ndc = ?", (price, ndc))
    return {}


@tool(writes=True)
def hold(ctx: ToolContext, ndc: str, reason: str) -> dict[str, Any]:
    """Place or replace a hold."""
    ctx.execute("INSERT OR REPLACE INTO holds VALUES (?, ?)", (ndc, reason))
    return {}


@tool(writes=True)
def release(ctx: ToolContext, ndc: str) -> dict[str, Any]:
    """Release a hold."""
    ctx.execute("DELETE FROM holds WHERE ndc = ?", (ndc,))
    return {}


@tool(writes=True)
def discontinue(ctx: ToolContext, ndc: str) -> dict[str, Any]:
    """Delete a drug; its stock and hold go by cascade."""
    ctx.execute("DELETE FROM drugs WHERE ndc = ?", (ndc,))
    return {}


@tool(writes=True)
def receive(ctx: ToolContext, ndc: str, lot: str, qty: int) -> dict[str, Any]:
    """Receive stock, then fail printing the label (half the work, then a raise)."""
    ctx.execute("UPDATE stock SET qty = qty + ? WHERE ndc = ? AND lot = ?", (qty, ndc, lot))
    raise RuntimeError("label printer jammed")


@tool(writes=True)
def scratch_note(ctx: ToolContext, note: str) -> dict[str, Any]:
    """Write a movement note, then delete it again."""
    rowid = ctx.execute("INSERT INTO movements (note) VALUES (?)", (note,)).lastrowid
    ctx.execute("DELETE FROM movements WHERE rowid = ?", (rowid,))
    return {}


@tool
def on_hand(ctx: ToolContext, ndc: str) -> dict[str, Any]:
    """Read the view."""
    return {"rows": ctx.query("SELECT ndc, qty FROM on_hand WHERE ndc = ?", (ndc,))}


TOOLS = [dispense, set_price, set_unit_price, hold, release, discontinue, receive,
         scratch_note, on_hand]  # fmt: skip
SNAPSHOT = Snapshot.build("pharmacy", SCHEMA, _populate, seed=1)
CASE = EvalCase(
    {"ndc": "A1", "lot": "L1", "qty": 3},
    {"rules": [
        changed("stock", where={"ndc": "A1", "lot": "L1"}, to={"qty": 7}),
        created("movements", where={"ndc": "A1", "lot": "L1", "delta": -3}),
        no_other_changes(),
    ]},
    case_id="dispense-A1",
)  # fmt: skip


def _select_all(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every table as plain SQL reads it, rowids included where a table has them."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            table: conn.execute(
                f"SELECT {'' if table == 'stock' else 'rowid, '}* FROM {table} ORDER BY 1, 2"
            ).fetchall()
            for table in TABLES
        }
    finally:
        conn.close()


CALLS: list[tuple[str, Any]] = [
    ("dispense", {"ndc": "A1", "lot": "L1", "qty": 3}),  # 1: + the trigger's movement
    ("set_price", {"ndc": "A1", "payer": "P1", "price": 1.5}),  # 2: upsert updates
    ("set_price", {"ndc": "A1", "payer": "P2", "price": 4.0}),  # 3: upsert inserts
    ("set_unit_price", {"ndc": "B2", "price": 2.0}),  # 4: + the trigger's touch
    ("set_unit_price", {"ndc": "B2", "price": None}),  # 5: price back, touched 2
    ("hold", {"ndc": "C3", "reason": "controlled"}),  # 6: REPLACE, same values
    ("hold", {"ndc": "A1", "reason": "recount"}),  # 7
    ("release", {"ndc": "A1"}),  # 8: created then deleted
    ("discontinue", {"ndc": "B2"}),  # 9: cascades to stock B2/L1
    ("receive", {"ndc": "A1", "lot": "L2", "qty": 5}),  # 10: raises after its write
    ("scratch_note", {"note": "tmp"}),  # 11: a row written then deleted
    ("dispense", {"ndc": "A1", "lot": "L1", "qty": "three"}),  # 12: malformed
    ("dispense", "qty=3"),  # 13: not an object
    ("on_hand", {"ndc": "A1"}),  # 14
]


def test_misbehaving_calls_are_recorded_exactly_as_the_database_changed(
    tmp_path: Path,
) -> None:
    with ToolWorld(SNAPSHOT, TOOLS, foreign_keys=True) as world:
        world.reset(seed=0, run_id="r", case=CASE)
        before = _select_all(world.path)
        events = [world.call(name, arguments) for name, arguments in CALLS]
        after = _select_all(world.path)
        statuses = [(event["status"], (event["error"] or {}).get("type")) for event in events]
        assert statuses == [("ok", None)] * 9 + [
            ("error", "tool_error"),
            ("ok", None),
            ("rejected", "invalid_arguments"),
            ("rejected", "invalid_arguments"),
            ("ok", None),
        ]
        assert events[-1]["result"] == {"rows": [{"ndc": "A1", "qty": 12}]}
        # What plain SQL sees changed, table by table.
        assert after["drugs"] == [before["drugs"][0], before["drugs"][2]]
        assert after["stock"] == [("A1", "L1", 7, 10.5), ("A1", "L2", 5, 7.5), ("C3", "L9", 2, 3.0)]
        assert after["movements"] == [*before["movements"], (2, "A1", "L1", -3, None)]
        assert after["prices"] == [(1, 1, "A1", "P1", 1.5), (2, 2, "B2", "P1", 2.0),
                                   (4, 4, "A1", "P2", 4.0)]  # fmt: skip
        # REPLACE moved C3 to another rowid, which is not state in a TEXT-keyed table.
        assert [row[1:] for row in after["holds"]] == [row[1:] for row in before["holds"]]
        history, diff = world.history_and_diff()
        assert diff == world.scan_diff()
        assert {table: {kind: len(rows) for kind, rows in changes.items()}
                for table, changes in diff.items()} == {
            "drugs": {"created": 0, "changed": 0, "deleted": 1},
            "movements": {"created": 1, "changed": 0, "deleted": 0},
            "prices": {"created": 1, "changed": 1, "deleted": 0},
            "stock": {"created": 0, "changed": 1, "deleted": 1},
        }  # fmt: skip
        assert "value" not in diff["stock"]["changed"][0]["after"]  # generated: derived
        assert [(e["step"], e["table"], e["op"]) for e in history] == [
            (1, "stock", "update"), (1, "movements", "insert"),
            (2, "prices", "update"), (3, "prices", "insert"),
            (4, "drugs", "update"), (4, "drugs", "update"),
            (5, "drugs", "update"), (5, "drugs", "update"),
            (6, "holds", "delete"), (6, "holds", "insert"),
            (7, "holds", "insert"), (8, "holds", "delete"),
            (9, "stock", "delete"), (9, "drugs", "delete"),
            (11, "movements", "insert"), (11, "movements", "delete"),
        ]  # fmt: skip
        episode = save_episode(world, tmp_path / "episode")
        trial = tool_episode_trial(
            episode, ["envkit/diff_satisfies_rules", "envkit/rejected_calls_changed_nothing"]
        )
        # 6 rows in the diff; 16 audited writes; held C3 (REPLACE, same values), held A1
        # (created, deleted) and the scratch note (created, deleted) are put back.
        assert trial.measures == {"tool_calls": 14.0, "rejected_calls": 3.0,
                                  "rows_changed": 6.0, "row_writes": 16.0,
                                  "rows_put_back": 3.0}  # fmt: skip
        assert [(r.name, r.status) for r in trial.results] == [
            ("envkit/diff_satisfies_rules", "fail"),
            ("envkit/rejected_calls_changed_nothing", "pass"),
        ]
        world.reset(seed=0)
        assert _select_all(world.path) == before
        assert world.state_digest() == SNAPSHOT.digest
    with ToolWorld(SNAPSHOT, TOOLS, foreign_keys=True) as again:
        result = replay(again, episode)
        assert result.matches, result.divergence
        assert _select_all(again.path) == after


def test_a_tool_whose_first_parameter_is_an_argument_is_refused_when_declared() -> None:
    # ``ctx`` forgotten: ``ndc`` would take the context and the agent could never send it.
    def lookup(ndc: str) -> dict[str, Any]:
        return {}

    with pytest.raises(InputError, match=r"tool 'lookup': its first parameter 'ndc' is typed"):
        tool(lookup)


@pytest.mark.parametrize("hint", ["int", "list[str]", "str | None", "Literal['a']"])
def test_every_argument_type_as_the_first_parameter_is_refused(hint: str) -> None:
    namespace: dict[str, Any] = {}
    exec(f"from typing import Literal\ndef f(x: {hint}, y: int) -> dict: ...", namespace)
    with pytest.raises(InputError, match=r"make the context the first parameter"):
        tool(namespace["f"])


def test_a_keyword_only_first_parameter_is_refused_when_declared() -> None:
    # The world calls function(ctx, **arguments): this one would fail every call.
    def lookup(*, ndc: str) -> dict[str, Any]:
        return {}

    with pytest.raises(InputError, match=r"'ndc' is keyword-only"):
        tool(lookup)


def test_context_parameters_written_as_usual_are_accepted() -> None:
    def plain(ctx, ndc: str) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        return {}

    def local_hint(ctx: NotImportedAnywhere, ndc: str) -> dict[str, Any]:  # type: ignore[name-defined]  # noqa: F821
        return {}

    def any_hint(ctx: Any, ndc: str) -> dict[str, Any]:
        return {}

    for function in (plain, local_hint, any_hint):
        assert list(tool(function).parameters["properties"]) == ["ndc"]


def test_populate_sql_failing_is_a_snapshot_error_naming_populate() -> None:
    def populate(conn: sqlite3.Connection, rng: random.Random) -> None:
        conn.execute("INSERT INTO stock (ndc, lot, qty) VALUES ('A1', 'L1', -1)")

    with pytest.raises(SnapshotError, match=r"snapshot 'bad': populate failed: IntegrityError: "
                       r"CHECK constraint failed") as caught:  # fmt: skip
        Snapshot.build("bad", SCHEMA, populate)
    assert isinstance(caught.value, OnrecordError)
    assert isinstance(caught.value.__cause__, sqlite3.IntegrityError)
