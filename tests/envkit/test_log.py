from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from onrecord.envkit import ToolWorld, read_action_log
from onrecord.envkit.log import EVENT_FIELDS
from onrecord.errors import SchemaError

ROOT = Path(__file__).parent.parent.parent


def test_every_event_has_the_documented_fields(world: ToolWorld) -> None:
    world.reset(run_id="run-1", seed=4)
    world.call("get_claim", {"claim_id": 1})
    world.call("allocate", {"claim_id": 1, "amount": 2.5})
    world.call("nope")
    events = world.log.events
    assert all(sorted(event) == sorted(EVENT_FIELDS) for event in events)
    assert [(e["step"], e["tool"], e["status"], e["state_version"]) for e in events] == [
        (1, "get_claim", "ok", 0),
        (2, "allocate", "ok", 1),
        (3, "nope", "rejected", 1),
    ]
    assert events[1]["arguments"] == {"claim_id": 1, "amount": 2.5}
    assert events[1]["result"] == {"allocation_id": 1}
    assert all(e["run_id"] == "run-1" and e["task_id"] is None for e in events)
    assert all(isinstance(e["ts"], float) and e["duration_ns"] >= 0 for e in events)


def test_streamed_log_is_flushed_at_episode_end_and_reads_back(
    world: ToolWorld, tmp_path: Path
) -> None:
    path = tmp_path / "log" / "actions.jsonl"
    world.reset(log_path=path)
    for amount in (1.0, 2.0, 3.0):
        world.call("allocate", {"claim_id": 1, "amount": amount})
    world.end_episode()
    read = read_action_log(path)
    assert read.complete
    assert len(read) == 3
    assert list(read) == world.log.events
    assert path.read_bytes() == world.log.to_bytes()


def test_reset_starts_a_new_log(world: ToolWorld, tmp_path: Path) -> None:
    world.reset(log_path=tmp_path / "a.jsonl")
    world.call("get_claim", {"claim_id": 1})
    world.reset(log_path=tmp_path / "b.jsonl")
    world.call("get_claim", {"claim_id": 2})
    world.end_episode()
    assert len(read_action_log(tmp_path / "a.jsonl")) == 1
    assert read_action_log(tmp_path / "b.jsonl").events[0]["step"] == 1


def test_crashed_episode_log_is_readable_up_to_its_last_complete_line(tmp_path: Path) -> None:
    path = tmp_path / "actions.jsonl"
    # A real process writes many events and dies without ending the episode.
    script = (
        f"import sys, os; sys.path.insert(0, {str(ROOT)!r})\n"
        "from tests.envkit import claims_env\n"
        "w = claims_env.world()\n"
        f"w.reset(log_path={str(path)!r})\n"
        "for i in range(20000):\n"
        "    w.call('get_claim', {'claim_id': 1 + i % 20})\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True)
    data = path.read_bytes()
    read = read_action_log(path)
    assert read.complete is data.endswith(b"\n")
    assert 0 < len(read) < 20000
    assert [e["step"] for e in read] == list(range(1, len(read) + 1))


def test_partial_last_line_is_dropped_and_reported(tmp_path: Path, world: ToolWorld) -> None:
    world.call("get_claim", {"claim_id": 1})
    world.call("get_claim", {"claim_id": 2})
    data = world.log.to_bytes()
    path = tmp_path / "cut.jsonl"
    path.write_bytes(data[:-10])
    read = read_action_log(path)
    assert (read.complete, len(read)) == (False, 1)


def test_damage_before_the_last_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"{oops\n" + orjson.dumps({"step": 1, "tool": "x"}) + b"\n")
    with pytest.raises(SchemaError, match="line 1 is not JSON"):
        read_action_log(path)
    path.write_bytes(b"[1, 2]\n")
    with pytest.raises(SchemaError, match="line 1 is not an action event"):
        read_action_log(path)


def test_unportable_arguments_are_logged_safely(world: ToolWorld) -> None:
    event = world.call("allocate", {"claim_id": 1, "amount": float("nan")})
    assert event["status"] == "rejected"
    assert event["error"]["message"].startswith(
        "allocate: arguments are not JSON: arguments.amount is nan"
    )
    assert set(event["arguments"]) == {"$unportable"}
    world.log.to_bytes()  # still canonical JSON
