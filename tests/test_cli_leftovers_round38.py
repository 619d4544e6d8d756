"""CLI leftovers, round 38: the gate's "results not passed" at 80 columns (stacked,
each reason a whole paragraph, when a long check name leaves it no room);
``ToolWorldProvider``'s refusal of a hidden name saying what it is (a view, a typo) as
``ToolWorld`` does; and ``show``'s end line following an update of a row's key.

Real reports and episodes, the real command in a subprocess; expected values are read
from the saved records, not from the code under test."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from onrecord.envkit import Snapshot, ToolContext, ToolWorld, save_episode, tool
from onrecord.errors import InputError
from onrecord.report import CheckResult, EvaluationReport, Trial
from onrecord.runner import ToolWorldProvider
from tests.cli_process import onrecord

LONG = "dynamics/pole_angular_velocity/h32"  # a world model's check name: 34 characters
REASON = "censored: the reference ended after {} steps"


def _report(tmp_path: Path) -> Path:
    """A report of a world model's kind: a 34-character check, not measured in the
    first cases (a sentence as its reason), failed in the next."""
    trials = [
        Trial(
            {"case_id": f"heldout-{30000 + i}", "content_digest": "d" * 64},
            0,
            {"kind": "test"},
            (
                CheckResult(LONG, "v1", "not_measured", REASON.format(10 + i))
                if i < 3
                else CheckResult(LONG, "v1", "fail", "beyond tolerance"),
            ),
            settings={"environment_id": "env"},
        )
        for i in range(5)
    ]
    return EvaluationReport.from_trials(trials).save_json(tmp_path / "report.json")


def _gate(tmp_path: Path, columns: int) -> str:
    policy = tmp_path / "policy.toml"
    policy.write_text(f'name = "p"\n[[requirements]]\ncheck = "{LONG}"\nmin_pass_rate = 1\n')
    done = onrecord("gate", _report(tmp_path), "--policy", policy, columns=columns)
    assert done.returncode == 1, done.stderr
    return done.stdout


def test_gate_results_not_passed_keep_each_reason_whole_at_80_columns(tmp_path: Path) -> None:
    out = _gate(tmp_path, 80)
    saved = orjson.loads((tmp_path / "report.json").read_bytes())["trials"]
    lines = [line.rstrip() for line in out[out.index("results not passed") :].splitlines()]
    assert all(len(line) <= 80 for line in lines), out
    for trial in saved:
        (result,) = trial["results"]
        # Each reason on a line of its own, whole: before, one word a line.
        assert f"  {result['reason']}" in lines, out
        # Under its check's name (a line of its own) and its episode and status.
        episode = f"{trial['case']['case_id']}#{trial['repeat']}"
        below = lines.index(
            f"  {result['reason']}", lines.index(f"  {episode}  {result['status']}")
        )
        assert lines[below - 2] == LONG, out


def test_gate_results_not_passed_stay_one_row_each_when_wide(tmp_path: Path) -> None:
    out = _gate(tmp_path, 160)
    saved = orjson.loads((tmp_path / "report.json").read_bytes())["trials"]
    for trial in saved:
        (result,) = trial["results"]
        episode = f"{trial['case']['case_id']}#{trial['repeat']}"
        (row,) = [line for line in out.splitlines() if f" {episode} " in line]
        assert LONG in row, out
        assert result["reason"] in row, out


def test_provider_hidden_view_says_hide_the_tables_it_reads() -> None:
    snapshot = Snapshot.build(
        "round38-view",
        "CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL);"
        "CREATE VIEW open_claims AS SELECT * FROM claims WHERE status = 'open';",
        lambda conn, _rng: None,
        seed=1,
    )
    with (
        pytest.raises(InputError) as raised,
        ToolWorld(snapshot, [set_status], hidden=["open_claims"]),
    ):
        pass
    world_says = str(raised.value)
    with pytest.raises(InputError) as provided:
        ToolWorldProvider(
            snapshot, [set_status], environment_id="round38/v1", hidden=["open_claims"]
        )
    message = str(provided.value)
    assert message.startswith("ToolWorldProvider hidden lists tables ['open_claims']"), message
    assert "claims" in message.split("does not have", 1)[1]
    # The hint ToolWorld gives (a view: hide the tables it reads) is said here too.
    hint = world_says.split("; it has ['claims']", 1)[1]
    assert "reads" in hint, world_says
    assert message.endswith(hint), (message, world_says)


def test_provider_hidden_typo_says_did_you_mean() -> None:
    snapshot = Snapshot.build(
        "round38-typo",
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY);",
        lambda conn, _rng: None,
        seed=1,
    )
    with pytest.raises(InputError, match="invoices") as provided:
        ToolWorldProvider(snapshot, [set_status], environment_id="round38/v1", hidden=["invoice"])
    assert "ToolWorldProvider hidden lists tables ['invoice']" in str(provided.value)
    assert "did you mean" in str(provided.value).lower(), provided.value


@tool(writes=True, example={"id": 1, "new_id": 10})
def renumber(ctx: ToolContext, id: int, new_id: int) -> None:
    """Give a claim another id."""
    ctx.execute("UPDATE claims SET id = ? WHERE id = ?", (new_id, id))


@tool(writes=True, example={"id": 1, "status": "paid"})
def set_status(ctx: ToolContext, id: int, status: str) -> None:
    """Set a claim's status."""
    ctx.execute("UPDATE claims SET status = ? WHERE id = ?", (status, id))


def _claims() -> Snapshot:
    return Snapshot.build(
        "round38-keys",
        "CREATE TABLE claims (id INTEGER PRIMARY KEY, status TEXT NOT NULL);",
        lambda conn, _rng: conn.executemany(
            "INSERT INTO claims VALUES (?, 'open')", [(1,), (2,), (3,)]
        ),
        seed=1,
    )


def _end_line(episode: Path) -> str:
    done = onrecord("show", episode)
    assert done.returncode == 0, done.stderr
    (end,) = [line for line in done.stdout.splitlines() if line.startswith("at the end:")]
    return end


def test_a_renumbered_row_changed_and_restored_is_not_put_back(tmp_path: Path) -> None:
    with ToolWorld(_claims(), [renumber, set_status]) as world:
        world.reset(seed=1)
        world.call("set_status", {"id": 2, "status": "paid"})  # lasting
        world.call("renumber", {"id": 1, "new_id": 10})  # row 1 gone, row 10 created
        world.call("set_status", {"id": 10, "status": "paid"})
        world.call("set_status", {"id": 10, "status": "open"})
        saved = save_episode(world, tmp_path / "episode")
    diff = saved.diff["claims"]
    assert [row["id"] for row in diff["created"]] == [10]
    assert [row["id"] for row in diff["deleted"]] == [1]
    # Row 10 did not exist at the start: grouped under its old key it read "put back".
    assert _end_line(tmp_path / "episode") == ("at the end: claims 1 created, 1 changed, 1 deleted")


def test_a_row_renumbered_and_back_is_put_back(tmp_path: Path) -> None:
    with ToolWorld(_claims(), [renumber, set_status]) as world:
        world.reset(seed=1)
        world.call("set_status", {"id": 2, "status": "paid"})  # lasting
        world.call("renumber", {"id": 3, "new_id": 30})
        world.call("renumber", {"id": 30, "new_id": 3})
        saved = save_episode(world, tmp_path / "episode")
    assert [change["key"] for change in saved.diff["claims"]["changed"]] == [2]
    assert not saved.diff["claims"]["created"]
    assert not saved.diff["claims"]["deleted"]
    # Row 3 ends as it started, and row 30 was created and deleted: both written and
    # neither in the end state, as an insert then a delete is listed.
    assert _end_line(tmp_path / "episode") == (
        "at the end: claims 1 changed — changed during the episode and put back by its "
        "end: claims rows 3, 30"
    )
