"""What lives on the world's connection, not in its file, cannot leak from one episode
into the next (docs/envkit.md, "What lives on the connection").

A reset restores the file; settings, SQL functions, collations, callbacks and factories
belong to the connection, so no restore touched them: a tool could change what a later
episode's tools read (a replaced ``like`` or ``NOCASE``), crash the harness (a length
limit), see its SQL (a trace callback) or falsify its evidence (a row factory read by the
digest). Each test runs one episode with a misbehaving tool, resets, and compares what a
later episode sees with what a fresh world shows. Real SQLite files throughout.
"""

from __future__ import annotations

import contextlib
import sqlite3
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, tool

SCHEMA = """
CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL CHECK (stock >= 0),
                    note TEXT NOT NULL DEFAULT '');
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL);
"""
FORBIDDEN = "forbidden_statement"


def _populate(conn: sqlite3.Connection, _: object) -> None:
    conn.executemany(
        "INSERT INTO items (sku, stock) VALUES (?, ?)", [("Bolt", 3), ("nut", 2), ("washer", 1)]
    )
    conn.execute("INSERT INTO notes VALUES (1, 'call the payer')")


@pytest.fixture(scope="module")
def snap() -> Snapshot:
    return Snapshot.build("connection-isolation", SCHEMA, _populate)


# -- the tools of every world: readers whose answers depend on the connection ---------
@tool
def like_b(ctx: ToolContext) -> list[str]:
    """LIKE is case-insensitive unless case_sensitive_like or a replaced like() says so."""
    return [row["sku"] for row in ctx.query("SELECT sku FROM items WHERE sku LIKE 'b%'")]


@tool
def bolt_nocase(ctx: ToolContext) -> list[str]:
    return [
        row["sku"] for row in ctx.query("SELECT sku FROM items WHERE sku = 'bolt' COLLATE NOCASE")
    ]


@tool
def counts(ctx: ToolContext) -> Any:
    return ctx.one("SELECT count(*) AS n, sum(stock) AS total, typeof(sku) AS kind FROM items")


@tool
def listing(ctx: ToolContext) -> list[Any]:
    return [list(row.values()) for row in ctx.query("SELECT sku, stock FROM items")]


@tool
def shouted(ctx: ToolContext) -> Any:
    """Uses a function and a collation a tool registers; a fresh world has neither."""
    try:
        return ctx.one("SELECT shout(sku) AS s FROM items ORDER BY sku COLLATE loose LIMIT 1")
    except sqlite3.OperationalError as exc:
        return str(exc)


@tool(writes=True)
def restock(ctx: ToolContext, sku: str = "nut") -> None:
    ctx.execute("UPDATE items SET stock = stock + 1 WHERE sku = ?", (sku,))


@tool(writes=True)
def cheat(ctx: ToolContext) -> None:
    """A CHECK the world enforces (unless ignore_check_constraints were on)."""
    with contextlib.suppress(sqlite3.IntegrityError):
        ctx.execute("UPDATE items SET stock = -5 WHERE sku = 'washer'")


READERS = ("like_b", "bolt_nocase", "counts", "listing", "shouted")


def _world(snap: Snapshot, path: Path, *extra: Any) -> ToolWorld:
    return ToolWorld(
        snap, [like_b, bolt_nocase, counts, listing, shouted, restock, cheat, *extra], path=path
    )


def _episode(world: ToolWorld) -> dict[str, Any]:
    """What an episode sees: every reader's answer, a write's diff, the evidence."""
    world.reset(seed=3)
    seen: dict[str, Any] = {name: world.call(name)["result"] for name in READERS}
    seen["cheat"] = world.call("cheat")["status"]
    seen["restock"] = world.call("restock", {"sku": "nut"})["status"]
    seen["diff"] = world.diff()
    seen["history"] = [(e["step"], e["op"], e["key"]) for e in world.audit_history()]
    seen["digest"] = world.state_digest()
    return seen


@pytest.fixture(scope="module")
def fresh(snap: Snapshot, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    with _world(snap, tmp_path_factory.mktemp("fresh") / "world.db") as world:
        return _episode(world)


def _misbehave(
    snap: Snapshot, path: Path, body: Callable[[ToolContext], Any], *, writes: bool = True
) -> tuple[ToolWorld, dict[str, Any]]:
    """A world whose first episode runs ``body`` as a tool; returns the world and the call."""

    @tool(writes=writes, name="misbehave")
    def misbehave(ctx: ToolContext) -> None:
        body(ctx)

    world = _world(snap, path, misbehave)
    return world, world.call("misbehave")


def _assert_same_as_fresh(world: ToolWorld, fresh: dict[str, Any]) -> None:
    assert world.diff() == {}  # the misbehaving call changed nothing in its own episode
    assert world.state_digest() == world.snapshot.digest
    assert _episode(world) == fresh
    assert _episode(world) == fresh  # and again: nothing was left half-restored


# -- settings a tool may change for its own call: put back when the call ends ---------
def _limit_length(ctx: ToolContext) -> None:
    ctx.connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 3)


def _limit_compound(ctx: ToolContext) -> None:
    ctx.connection.setlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT, 1)


def _row_factory(ctx: ToolContext) -> None:
    ctx.connection.row_factory = lambda cursor, row: tuple(reversed(row))


def _sqlite_row(ctx: ToolContext) -> None:
    ctx.connection.row_factory = sqlite3.Row  # innocent: dict-like rows for the tool


def _text_factory(ctx: ToolContext) -> None:
    ctx.connection.text_factory = bytes


CALL_SCOPED: dict[str, Callable[[ToolContext], Any]] = {
    "setlimit_length": _limit_length,
    "setlimit_compound_select": _limit_compound,
    "row_factory": _row_factory,
    "sqlite_row": _sqlite_row,
    "text_factory": _text_factory,
}


@pytest.mark.parametrize("name", sorted(CALL_SCOPED))
def test_a_setting_a_tool_changes_lasts_for_its_call_only(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any], name: str
) -> None:
    # Before: a length limit crashed the harness's own diff, a row factory changed the
    # state digest, and both reached every later episode.
    world, event = _misbehave(snap, tmp_path / "world.db", CALL_SCOPED[name])
    with world:
        assert event["status"] == "ok"
        conn = world.conn
        assert (conn.row_factory, conn.text_factory) == (None, str)
        assert conn.getlimit(sqlite3.SQLITE_LIMIT_LENGTH) > 10**6
        assert conn.getlimit(sqlite3.SQLITE_LIMIT_COMPOUND_SELECT) > 1
        _assert_same_as_fresh(world, fresh)


def test_a_row_factory_cannot_falsify_the_reads_a_tool_logs(snap: Snapshot, tmp_path: Path) -> None:
    @tool(name="peek")
    def peek(ctx: ToolContext) -> Any:
        ctx.connection.row_factory = lambda cursor, row: (2, "forged")
        ctx.connection.text_factory = bytes
        return ctx.reveal("notes", 1)

    with ToolWorld(snap, [peek], path=tmp_path / "world.db", hidden=["notes"]) as world:
        event = world.call("peek")
        assert event["status"] == "ok"
        assert event["reads"] == [{"table": "notes", "key": 1}]
        assert event["result"] == {"id": 1, "body": "call the payer"}


def test_an_owners_progress_handler_and_tracer_come_back_after_a_tools(
    snap: Snapshot, tmp_path: Path
) -> None:
    seen: list[str] = []
    ticks: list[int] = []

    def body(ctx: ToolContext) -> None:
        ctx.connection.set_trace_callback(seen.append)
        ctx.connection.set_progress_handler(lambda: ticks.append(1) and 0, 1)
        ctx.execute("SELECT count(*) FROM items").fetchall()

    world, event = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        assert event["status"] == "ok"
        assert seen
        assert ticks
        owner: list[int] = []
        world.conn.set_progress_handler(lambda: owner.append(1) and 0, 1)
        during_call, ticked = len(seen), len(ticks)
        # Before: the tool's tracer saw the harness's RELEASE, diff and reset, and the
        # next episode's statements, and its progress handler ran on all of them.
        assert world.call("misbehave")["status"] == "ok"
        after = len(seen)
        world.diff()
        world.reset()
        world.call("restock")
        assert len(seen) == after
        assert not any("onrecord" in sql for sql in seen[during_call:])
        assert len(ticks) > ticked  # the second call's handler ran in its call
        assert owner  # the world owner's handler is the one in place outside the call


# -- replacing what the world or SQLite defines: refused, the call changes nothing ----
class _Zero:
    def step(self, *args: Any) -> None:
        pass

    def finalize(self) -> int:
        return 0

    def value(self) -> int:
        return 0

    def inverse(self, *args: Any) -> None:
        pass


REPLACEMENTS: dict[str, Callable[[ToolContext], Any]] = {
    "function_like": lambda ctx: ctx.connection.create_function("LIKE", 2, lambda p, s: 1),
    "function_typeof": lambda ctx: ctx.connection.create_function("typeof", 1, lambda v: "x"),
    "aggregate_count": lambda ctx: ctx.connection.create_aggregate("count", 0, _Zero),
    "window_sum": lambda ctx: ctx.connection.create_window_function("sum", 1, _Zero),
    "collation_nocase": lambda ctx: ctx.connection.create_collation("nocase", lambda a, b: 1),
    "collation_binary": lambda ctx: ctx.connection.create_collation("BINARY", lambda a, b: 0),
    "isolation_level": lambda ctx: setattr(ctx.connection, "isolation_level", "DEFERRED"),
    "load_extension_sql": lambda ctx: ctx.execute("SELECT load_extension('/nonexistent')"),
    "deserialize": lambda ctx: ctx.connection.deserialize(ctx.connection.serialize()),
    "temp_trigger_on_onrecord_table": lambda ctx: ctx.execute(
        "CREATE TEMP TRIGGER sneak AFTER UPDATE ON main._onrecord_ctx "
        "BEGIN DELETE FROM items WHERE sku = 'nut'; END"
    ),
}


@pytest.mark.parametrize("name", sorted(REPLACEMENTS))
def test_replacing_what_the_world_relies_on_is_refused(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any], name: str
) -> None:
    def body(ctx: ToolContext) -> None:
        ctx.execute("UPDATE items SET stock = 0 WHERE sku = 'Bolt'")
        with contextlib.suppress(sqlite3.DatabaseError):  # refused even when caught
            REPLACEMENTS[name](ctx)

    world, event = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        assert event["status"] == "error"
        assert event["error"]["type"] == FORBIDDEN, event["error"]
        assert world.conn.isolation_level is None
        assert world.conn.execute("SELECT 'a' = 'A' COLLATE NOCASE").fetchone() == (1,)
        _assert_same_as_fresh(world, fresh)


def test_functions_and_collations_a_tool_adds_last_for_its_episode(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any]
) -> None:
    def body(ctx: ToolContext) -> None:
        ctx.connection.create_function("shout", 1, lambda text: text.upper())
        ctx.connection.create_collation("loose", lambda a, b: (a > b) - (a < b))

    world, event = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        assert event["status"] == "ok"
        assert world.call("shouted")["result"] == {"s": "BOLT"}  # later calls may use them
        assert world.call("misbehave")["status"] == "ok"  # registered again: its own
        # Before: the next episode's tools could use them, where a fresh world has none.
        _assert_same_as_fresh(world, fresh)
        assert fresh["shouted"] == "no such function: shout"


def test_a_function_the_world_owner_registered_is_kept_and_not_replaceable(
    snap: Snapshot, tmp_path: Path
) -> None:
    def body(ctx: ToolContext) -> None:
        ctx.connection.create_function("shout", 1, lambda text: "forged")

    world, _ = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        world.conn.create_function("shout", 1, lambda text: text.upper())
        world.conn.create_collation("loose", lambda a, b: (a > b) - (a < b))
        event = world.call("misbehave")
        assert event["error"]["type"] == FORBIDDEN
        assert "shout" in event["error"]["message"]
        world.reset()
        assert world.call("shouted")["result"] == {"s": "BOLT"}


# -- pragmas and ATTACH were already refused: kept so (regression) --------------------
PRAGMAS = [
    "recursive_triggers = OFF",
    "case_sensitive_like = ON",
    "foreign_keys = ON",
    "defer_foreign_keys = ON",
    "reverse_unordered_selects = ON",
    "journal_mode = DELETE",
    "synchronous = FULL",
    "temp_store = MEMORY",
    "cache_size = 7",
    "query_only = ON",
    "ignore_check_constraints = ON",
    "writable_schema = ON",
    "automatic_index = OFF",
    "busy_timeout = 1",
    "main.cache_size = 9",
    "case_sensitive_like(1)",
]


@pytest.mark.parametrize("pragma", PRAGMAS)
def test_a_tool_cannot_set_a_pragma(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any], pragma: str
) -> None:
    name = pragma.split("=")[0].split("(")[0].split(".")[-1].strip()
    world, event = _misbehave(
        snap, tmp_path / "world.db", lambda ctx: ctx.execute(f"PRAGMA {pragma}")
    )
    with world:
        assert event["error"]["type"] == FORBIDDEN
        reference = sqlite3.connect(":memory:")
        if name not in ("journal_mode", "synchronous", "recursive_triggers", "foreign_keys"):
            assert (
                world.conn.execute(f"PRAGMA {name}").fetchall()
                == reference.execute(f"PRAGMA {name}").fetchall()
            )
        _assert_same_as_fresh(world, fresh)


def test_a_tool_cannot_attach_and_write_another_database(snap: Snapshot, tmp_path: Path) -> None:
    other = tmp_path / "side.db"

    def body(ctx: ToolContext) -> None:
        ctx.execute("ATTACH DATABASE ? AS side", (str(other),))
        ctx.execute("CREATE TABLE side.t (x)")

    world, event = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        assert event["error"]["type"] == FORBIDDEN
        assert [row[1] for row in world.conn.execute("PRAGMA database_list")] == ["main", "temp"]
        assert not other.exists()


# -- a thread a tool leaves running ----------------------------------------------------
@contextlib.contextmanager
def _stray(
    snap: Snapshot, path: Path, work: Callable[[sqlite3.Connection], Any]
) -> Iterator[tuple[ToolWorld, list[BaseException]]]:
    """A world whose tool starts a thread that runs ``work`` only after the call returned
    (an event, not a sleep, orders it); yields the world and what the thread raised."""
    go, errors = threading.Event(), []
    threads: list[threading.Thread] = []

    def body(ctx: ToolContext) -> None:
        conn = ctx.connection

        def later() -> None:
            go.wait()
            try:
                work(conn)
            except BaseException as exc:  # the test inspects it
                errors.append(exc)

        threads.append(threading.Thread(target=later, daemon=True))
        threads[-1].start()

    world, event = _misbehave(snap, path, body)
    with world:
        assert event["status"] == "ok"
        go.set()
        threads[0].join()
        yield world, errors


STRAY_WORK: dict[str, Callable[[sqlite3.Connection], Any]] = {
    "write": lambda conn: conn.execute("INSERT INTO notes (body) VALUES ('ghost')"),
    "pragma": lambda conn: conn.execute("PRAGMA case_sensitive_like = ON"),
    "temp_table": lambda conn: conn.execute("CREATE TEMP TABLE scratch (x)"),
    "function": lambda conn: conn.create_function("like", 2, lambda p, s: 1),
    "setlimit": lambda conn: conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 3),
    "row_factory": lambda conn: setattr(conn, "row_factory", lambda c, r: r[::-1]),
    # The text of the world's own statement: before, served from the statement cache,
    # where the authorizer never sees it, so the stray began a transaction of its own.
    "internal_savepoint": lambda conn: conn.execute("SAVEPOINT onrecord_call -- onrecord"),
}


@pytest.mark.parametrize("name", sorted(STRAY_WORK))
def test_a_thread_a_tool_left_running_cannot_change_the_world(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any], name: str
) -> None:
    # Before: the thread's INSERT was committed between calls (audited at the step of
    # the call before, no call logged, no state version) and reached the next episode;
    # its pragma or function changed what every later episode read.
    with _stray(snap, tmp_path / "world.db", STRAY_WORK[name]) as (world, errors):
        assert len(errors) == 1, errors
        # SQLite's own "not authorized" for SQL; the world's sentence for the rest.
        assert "not authorized" in str(errors[0])
        assert world.audit_history() == []
        assert world.conn.row_factory is None
        _assert_same_as_fresh(world, fresh)


def test_a_thread_a_tool_joins_within_its_call_writes_as_the_call(
    snap: Snapshot, tmp_path: Path
) -> None:
    def body(ctx: ToolContext) -> None:
        worker = threading.Thread(
            target=lambda: ctx.execute("UPDATE items SET stock = 7 WHERE sku = 'nut'")
        )
        worker.start()
        worker.join()

    world, event = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        assert event["status"] == "ok"
        assert event["state_version"] == 1
        assert [(e["step"], e["key"]) for e in world.audit_history()] == [(1, "nut")]


def _in_a_thread_of_its_own(conn: sqlite3.Connection) -> None:
    """The stray starts a thread (as a pool it keeps would) that writes; its error is
    the stray's."""
    errors: list[BaseException] = []

    def write() -> None:
        try:
            conn.execute("INSERT INTO notes (body) VALUES ('ghost')")
        except BaseException as exc:  # the test inspects it
            errors.append(exc)

    child = threading.Thread(target=write)
    child.start()
    child.join()
    if errors:
        raise errors[0]


def test_a_thread_a_stray_starts_after_the_call_may_only_read_too(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any]
) -> None:
    # Before: only threads alive when the call returned were strays, so the stray's own
    # thread, born after it, wrote between calls, unaudited by any call.
    with _stray(snap, tmp_path / "world.db", _in_a_thread_of_its_own) as (world, errors):
        assert len(errors) == 1, errors
        assert "not authorized" in str(errors[0])
        assert world.audit_history() == []
        _assert_same_as_fresh(world, fresh)


def test_a_new_thread_of_the_harness_still_runs_calls_while_a_stray_lives(
    snap: Snapshot, tmp_path: Path
) -> None:
    """A thread born between calls while a tool's thread lives is the harness's once it
    calls the world (its own SAVEPOINT comes before the tool runs)."""
    release = threading.Event()

    def body(ctx: ToolContext) -> None:
        threading.Thread(target=release.wait, daemon=True).start()
        for n in range(300):  # evicts the world's cached statements: prepared anew
            ctx.execute(f"SELECT {n}")

    world, event = _misbehave(snap, tmp_path / "world.db", body)
    with world:
        assert event["status"] == "ok"
        events: list[dict[str, Any]] = []
        worker = threading.Thread(target=lambda: events.append(world.call("restock")))
        worker.start()
        worker.join()
        release.set()
        assert [e["status"] for e in events] == ["ok"]
        assert [(e["step"], e["key"]) for e in world.audit_history()] == [(2, "nut")]


def test_a_cursor_a_tool_keeps_open_does_not_stop_the_reset(
    snap: Snapshot, tmp_path: Path, fresh: dict[str, Any]
) -> None:
    # Before: SQLite refuses to remove a function while any statement of the connection
    # runs, so a kept cursor (whatever it read) made every later reset fail.
    kept: list[sqlite3.Cursor] = []

    @tool(name="page")
    def page(ctx: ToolContext) -> Any:
        cursor = ctx.connection.execute("SELECT sku FROM items ORDER BY sku")
        kept.append(cursor)  # the next page, for a later call
        return cursor.fetchone()[0]

    @tool(name="register")
    def register(ctx: ToolContext) -> None:
        ctx.connection.create_function("shout", 1, str.upper)

    with _world(snap, tmp_path / "world.db", page, register) as world:
        assert world.call("register")["status"] == "ok"
        assert world.call("page")["result"] == "Bolt"
        _assert_same_as_fresh(world, fresh)
        with pytest.raises(sqlite3.ProgrammingError):  # the old episode's statement
            kept[0].fetchone()


def test_a_tool_typing_the_worlds_own_release_cannot_commit_its_failed_call(
    snap: Snapshot, tmp_path: Path
) -> None:
    # Before: the world's RELEASE was cached under that text, so the authorizer never saw
    # the tool's: the call's write was committed, and the call failed (tool_error) with
    # nothing left to roll back.
    def body(ctx: ToolContext) -> None:
        ctx.execute("UPDATE items SET stock = 99 WHERE sku = 'nut'")
        with contextlib.suppress(sqlite3.DatabaseError):
            ctx.connection.execute("RELEASE onrecord_call -- onrecord")
        raise RuntimeError("fails after its write")

    @tool(writes=True, name="misbehave")
    def misbehave(ctx: ToolContext) -> None:
        body(ctx)

    with _world(snap, tmp_path / "world.db", misbehave) as world:
        assert world.call("restock", {"sku": "Bolt"})["status"] == "ok"  # runs the RELEASE
        event = world.call("misbehave")
        assert event["error"]["type"] == FORBIDDEN
        assert [(e["step"], e["key"]) for e in world.audit_history()] == [(1, "Bolt")]
        assert world.conn.execute("SELECT stock FROM items WHERE sku = 'nut'").fetchone() == (2,)


def test_a_thread_a_tool_left_cannot_move_the_worlds_step_with_its_own_statement(
    snap: Snapshot, tmp_path: Path
) -> None:
    # Before: the world's own UPDATE of its context row was cached under that text, so a
    # stray thread that typed it ran it unseen between calls (the authorizer is asked
    # when a statement is prepared), moving the step later audit rows are stamped with.
    world_text = "UPDATE _onrecord_ctx SET step = ?, version = version + 1"
    with _stray(snap, tmp_path / "world.db", lambda conn: conn.execute(world_text, (42,))) as (
        world,
        errors,
    ):
        assert len(errors) == 1, errors
        assert "not authorized" in str(errors[0])
        assert world.conn.execute("SELECT step, version FROM _onrecord_ctx").fetchone() == (1, 1)


def test_a_thread_a_later_call_joins_writes_as_that_call_while_a_stray_lives(
    snap: Snapshot, tmp_path: Path
) -> None:
    """Only threads born between calls are suspect; one a call starts and joins is the
    call's, whatever thread an earlier call left running."""
    release = threading.Event()

    @tool(writes=True, name="leave")
    def leave(ctx: ToolContext) -> None:
        threading.Thread(target=release.wait, daemon=True).start()

    @tool(writes=True, name="join")
    def join(ctx: ToolContext) -> None:
        worker = threading.Thread(
            target=lambda: ctx.execute("UPDATE items SET stock = 7 WHERE sku = 'nut'")
        )
        worker.start()
        worker.join()

    with _world(snap, tmp_path / "world.db", leave, join) as world:
        try:
            assert world.call("leave")["status"] == "ok"
            event = world.call("join")
        finally:
            release.set()
        assert event["status"] == "ok", event["error"]
        assert [(e["step"], e["key"]) for e in world.audit_history()] == [(2, "nut")]
