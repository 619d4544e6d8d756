"""Generated columns (VIRTUAL and STORED): derived from a row's other columns, so the
evidence holds the stored columns only; a rule naming one says so rather than claiming
the column does not exist."""

from __future__ import annotations

from pathlib import Path

import pytest

from onrecord import EvalCase
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    changed,
    check_rules,
    run_checks,
    save_episode,
    tool,
)
from onrecord.errors import InputError

SCHEMA = """
CREATE TABLE "order" (id INTEGER PRIMARY KEY, qty INTEGER, price INTEGER,
    total INTEGER GENERATED ALWAYS AS (qty * price) STORED,
    label TEXT GENERATED ALWAYS AS ('#' || id) VIRTUAL);
INSERT INTO "order" (id, qty, price) VALUES (1, 1, 10), (2, 2, 5);
"""


@tool(writes=True, example={"order_id": 1, "qty": 3})
def set_qty(ctx: ToolContext, order_id: int, qty: int) -> None:
    """Change an order's quantity."""
    ctx.execute('UPDATE "order" SET qty = ? WHERE id = ?', (qty, order_id))


def test_a_rule_on_a_generated_column_names_what_to_write_instead(tmp_path: Path) -> None:
    snap = Snapshot.build("generated", SCHEMA)
    case = EvalCase("x", {"rules": [changed("order", where={"id": 1}, to={"total": 30})]})
    with ToolWorld(snap, [set_qty]) as world:
        world.reset(case=case)
        assert world.call("set_qty", {"order_id": 1, "qty": 3})["status"] == "ok"
        assert world.diff() == world.scan_diff()
        assert world.diff()["order"]["changed"][0]["after"] == {"id": 1, "qty": 3, "price": 10}
        episode = save_episode(world, tmp_path / "ep")
        world.reset()
        assert world.state_digest() == snap.digest
    loaded = ToolEpisode.load(tmp_path / "ep")
    assert loaded.end_state_digest() == loaded.manifest["end_state_digest"]
    (result,) = run_checks(episode, ["envkit/diff_satisfies_rules"])
    assert result.status == "evaluator_error"
    assert "'total' is a generated column: it is derived from the others" in result.reason
    with pytest.raises(InputError, match="name the columns it is computed from"):
        check_rules(
            episode.diff,
            [changed("order", to={"total": 30})],
            tables={"order": ("id", "qty", "price")},
        )
