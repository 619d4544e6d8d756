from __future__ import annotations

import sqlite3
from pathlib import Path

from onrecord.envkit import (
    ToolWorld,
    diff_through_step,
    read_before_write,
    read_before_write_check,
    read_steps,
    replay,
    save_episode,
    step_diff,
    write_steps,
)
from onrecord.episode import run_check

from . import claims_env


def episode_with(
    world: ToolWorld, tmp_path: Path, calls: list[tuple[str, dict]], name: str, seed: int = 3
):
    world.reset(seed=seed)
    for tool, arguments in calls:
        world.call(tool, arguments)
    return save_episode(world, tmp_path / name)


TABLES = ("claims", "allocations", "notes", "tags", "events")


def rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    """Every row of the claims environment's tables, read with plain SQL."""
    return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES}


def saved_rows(episode) -> dict[str, list[tuple]]:
    """The rows of the episode's saved final.sqlite, opened with the sqlite3 module."""
    conn = sqlite3.connect(f"file:{episode.path / 'final.sqlite'}?mode=ro", uri=True)
    try:
        return rows(conn)
    finally:
        conn.close()


READ = ("read_note", {"note_id": 1})
WRITE = ("allocate", {"claim_id": 17, "amount": 5.0})


def test_hidden_reads_are_logged_with_their_step(world: ToolWorld, tmp_path: Path) -> None:
    episode = episode_with(world, tmp_path, [("get_claim", {"claim_id": 17}), READ, WRITE], "ep")
    assert episode.actions[1]["reads"] == [{"table": "notes", "key": 1}]
    assert episode.actions[1]["result"]["body"] == "payer called: pay half"
    assert read_steps(episode, "notes") == [2]
    assert read_steps(episode, "notes", 2) == []
    assert write_steps(episode, "allocations") == [3]


def test_read_before_write_pass_fail_and_not_measured(world: ToolWorld, tmp_path: Path) -> None:
    good = episode_with(world, tmp_path, [READ, WRITE], "good")
    late = episode_with(world, tmp_path, [WRITE, READ], "late")
    never = episode_with(world, tmp_path, [WRITE], "never")
    idle = episode_with(world, tmp_path, [READ], "idle")
    verdict = read_before_write(good, ("notes", 1), "allocations")
    assert verdict.passed is True
    assert verdict.reason == "notes key 1 was read at step 1, before the first change at step 2"
    assert read_before_write(late, ("notes", 1), "allocations").reason == (
        "allocations changed at step 1, but notes key 1 was read only at step 2"
    )
    assert read_before_write(never, "notes", "allocations").passed is False
    assert read_before_write(idle, "notes", "allocations").passed is None
    made = read_before_write_check("notes_before_allocation", ("notes", 1), "allocations")
    assert run_check(made, late).status == "fail"


def test_reveal_refuses_tables_that_are_not_hidden(snap, tmp_path: Path) -> None:
    with ToolWorld(snap, claims_env.TOOLS) as world:  # no hidden tables declared
        event = world.call(*READ)
        assert event["status"] == "rejected"
        assert "is not a hidden table" in event["error"]["message"]


def test_replay_reproduces_the_end_state(world: ToolWorld, tmp_path: Path) -> None:
    calls = [
        READ,
        WRITE,
        ("log_event", {"kind": "k"}),
        ("set_status", {"claim_id": 2, "status": "x"}),
        ("allocate", {"claim_id": 999, "amount": 1.0}),
    ]
    episode = episode_with(world, tmp_path, calls, "ep")
    with claims_env.world(world.snapshot) as fresh:
        result = replay(fresh, episode)
        replayed = rows(fresh.conn)
    assert result.matches
    assert result.divergence is None
    assert result.replayed_calls == 4
    assert result.recorded_digest == episode.manifest["end_state_digest"]
    assert result.replayed_digest == result.recorded_digest
    # The oracle is the recorded end state itself, read with plain SQL from the saved
    # final.sqlite, not the replay's own digest: every row, the random event bytes too.
    assert replayed == saved_rows(episode)
    assert replayed["allocations"] == [(1, 17, 5.0, "")]  # the rejected 999 left no row
    assert [row[3] for row in replayed["claims"] if row[0] == 2] == ["x"]
    assert [kind for kind, _ in replayed["events"]] == ["k", "seed"]


def test_replay_shows_where_it_diverges(world: ToolWorld, tmp_path: Path) -> None:
    world.reset(seed=3)
    world.call(*WRITE)
    world.inject_failure("set_status")
    world.call("set_status", {"claim_id": 2, "status": "x"})
    # A change made behind the log's back (e.g. another process) at step 2.
    world.conn.execute("UPDATE claims SET payer = 'zzz' WHERE id = 3")
    episode = save_episode(world, tmp_path / "ep")
    with claims_env.world(world.snapshot) as fresh:
        result = replay(fresh, episode)
    assert not result.matches
    assert result.divergence is not None
    assert result.divergence.step == 2
    assert result.divergence.reason == "step 2 changed different rows in the replay"
    assert [c["key"] for c in result.divergence.recorded["claims"]["changed"]] == [2, 3]
    assert [c["key"] for c in result.divergence.replayed["claims"]["changed"]] == [2]


def test_step_diffs(world: ToolWorld, tmp_path: Path) -> None:
    episode = episode_with(
        world,
        tmp_path,
        [
            WRITE,
            ("set_status", {"claim_id": 17, "status": "paid"}),
            ("set_status", {"claim_id": 17, "status": "open"}),
        ],
        "ep",
    )
    assert list(step_diff(episode, 1)) == ["allocations"]
    assert step_diff(episode, 2)["claims"]["changed"][0]["after"]["status"] == "paid"
    assert list(diff_through_step(episode, 2)) == ["allocations", "claims"]
    assert (
        diff_through_step(episode, 3)
        == episode.diff
        == {"allocations": episode.diff["allocations"]}
    )
