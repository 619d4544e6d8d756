"""An update that changes only a value's storage class (INTEGER 1 to REAL 1.0) is a
change: the end-state diff counts it, so the row history of `onrecord show` and the
HTML report's audit history must name the column, not list an update of nothing."""

from __future__ import annotations

from pathlib import Path

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool
from onrecord.html._episode import _audit_rows
from tests.cli_process import onrecord


@tool(writes=True)
def set_value(ctx: ToolContext, id: int, value: float) -> None:
    """Set a row's untyped value (SQLite keeps the storage class it is given)."""
    ctx.execute("UPDATE items SET v = ? WHERE id = ?", (value, id))


def _episode(tmp_path: Path) -> Path:
    snapshot = Snapshot.build(
        "storage-class",
        "CREATE TABLE items (id INTEGER PRIMARY KEY, v);",  # no type: no affinity
        lambda conn, _rng: conn.execute("INSERT INTO items VALUES (1, 1)"),
        seed=1,
    )
    with ToolWorld(snapshot, [set_value]) as world:
        world.reset(seed=1)
        world.call("set_value", {"id": 1, "value": 1.0})
        saved = save_episode(world, tmp_path / "episode")
    # What the diff says: the row changed (1 and 1.0 are different stored values).
    assert [c["key"] for c in saved.diff["items"]["changed"]] == [1]
    return tmp_path / "episode"


def test_show_names_a_column_whose_storage_class_changed(tmp_path: Path) -> None:
    done = onrecord("show", _episode(tmp_path), columns=200)
    assert done.returncode == 0, done.stderr
    assert "v: 1 → 1.0" in done.stdout, done.stdout


def test_the_html_audit_names_a_column_whose_storage_class_changed() -> None:
    event = {"seq": 1, "step": 0, "table": "items", "op": "update", "key": 1,
             "old": {"id": 1, "v": 1}, "new": {"id": 1, "v": 1.0}}  # fmt: skip
    (row,) = _audit_rows([event])
    # Values as the evidence stores them, as text (round 40): the REAL reads 1.0.
    assert row["changes"] == [["v", "1", "1.0"]]
