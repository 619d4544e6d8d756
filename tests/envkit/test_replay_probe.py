"""Replaying an episode with hostile calls in it reproduces its statuses, error types and
end state; a call rejected for another reason than when recorded is a divergence."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Annotated

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    replay,
    save_episode,
    tool,
)

HOSTILE = st.tuples(
    st.sampled_from(["allocate", "set_status", "log_event", "get_claim", "Allocate", "nope"]),
    st.fixed_dictionaries(
        {},
        optional={
            "claim_id": st.sampled_from([1, 17, 999, 2**63, 1.0, True, "1", None]),
            "amount": st.sampled_from([1.0, 5, 1e9, -1.0, float("nan"), "5"]),
            "status": st.sampled_from(["closed", "", 3]),
            "kind": st.sampled_from(["k", "\x00"]),
            "memo": st.sampled_from(["m", "\ud800"]),
        },
    ),
)
# Valid writes (one of them always first): without them no drawn call ever succeeded,
# and the replay was only ever checked on an unchanged database.
GOOD = st.sampled_from(
    [
        ("allocate", {"claim_id": 17, "amount": 5.0}),
        ("set_status", {"claim_id": 2, "status": "closed"}),
        ("log_event", {"kind": "k"}),
    ]
)
CALLS = st.tuples(GOOD, st.lists(st.one_of(GOOD, HOSTILE), max_size=8)).map(
    lambda drawn: [drawn[0], *drawn[1]]
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(calls=CALLS, end_after=st.integers(1, 9))
def test_replay_reproduces_every_call_including_the_rejected_and_the_late(
    world: ToolWorld, tmp_path: Path, calls: list[tuple[str, dict[str, object]]], end_after: int
) -> None:
    world.reset(seed=7, run_id="probe")
    for index, (name, arguments) in enumerate(calls):
        if index == end_after:
            world.end_episode("finished")
        world.call(name, arguments)
    episode = save_episode(world, tmp_path / f"ep-{len(calls)}-{end_after}")
    recorded = [(e["status"], e["error"] and e["error"]["type"]) for e in episode.actions]
    assert len(recorded) == len(calls)  # every call logged, the refused ones too
    assert recorded[0] == ("ok", None)  # the state changed at least once
    late = recorded[end_after:]
    assert all(kind == "episode_ended" for _, kind in late)
    with closing(sqlite3.connect(f"file:{episode.path / 'final.sqlite'}?mode=ro", uri=True)) as db:
        saved = _rows(db)
    world.reset(seed=99, run_id="other")  # the replay must rebuild the state, not find it
    result = replay(world, ToolEpisode.load(episode.path))
    assert result.matches, result.divergence
    assert result.replayed_digest == episode.manifest["end_state_digest"]
    # Independent of both digests: the replayed rows are the recorded file's rows.
    assert _rows(world.conn) == saved
    writes = {"allocate", "set_status", "log_event"}
    assert result.replayed_calls == sum(name in writes for name, _ in calls)


def _rows(conn: sqlite3.Connection) -> dict[str, list[tuple]]:
    tables = ("claims", "allocations", "notes", "tags", "events")
    return {t: sorted(conn.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}


def test_a_call_rejected_for_another_reason_in_the_replay_diverges(
    snap: Snapshot, tmp_path: Path
) -> None:
    @tool(writes=True, name="close_claim")
    def by_rule(ctx: ToolContext, claim_id: int) -> None:
        if claim_id > 20:
            ctx.reject(f"claim {claim_id} does not exist")
        ctx.execute("UPDATE claims SET status = 'closed' WHERE id = ?", (claim_id,))

    @tool(writes=True, name="close_claim")
    def by_schema(ctx: ToolContext, claim_id: Annotated[int, {"maximum": 20}]) -> None:
        ctx.execute("UPDATE claims SET status = 'closed' WHERE id = ?", (claim_id,))

    with ToolWorld(snap, [by_rule]) as recording:
        recording.reset(seed=1)
        recording.call("close_claim", {"claim_id": 3})
        recording.call("close_claim", {"claim_id": 99})
        episode = save_episode(recording, tmp_path / "ep")
    with ToolWorld(snap, [by_schema]) as again:
        result = replay(again, episode)
    assert not result.matches
    assert result.divergence is not None
    assert result.divergence.step == 2
    assert "rule_violation" in result.divergence.reason
    assert "invalid_arguments" in result.divergence.reason
