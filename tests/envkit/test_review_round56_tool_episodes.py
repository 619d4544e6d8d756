"""Review round 56: a saved tool-world episode whose parts were edited and re-sealed (the
part's own digest and the manifest, or the manifest alone) is refused by
``ToolEpisode.load`` naming the part, and ``onrecord verify``/``show`` exit 3 without a
traceback. Before, load read no part: a stale part digest, a diff that contradicts the
audit history and the end state, and parts of the wrong shape all verified."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord._canonical import canonical_bytes, content_digest, record_bytes
from onrecord.envkit import Snapshot, ToolContext, ToolEpisode, ToolWorld, save_episode, tool
from onrecord.envkit._episode_check import check_episode_agrees
from onrecord.errors import ConsistencyError, DigestMismatch, OnrecordError, SchemaError
from tests.cli_process import onrecord

from . import claims_env
from .test_episode_checks import CASE

Edit = Callable[[Any], object]


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The agent allocated 5.00 to claim 16 (the task asks for claim 17: the episode
    fails envkit/diff_satisfies_rules), had a call refused, closed claim 2, tagged claim 3
    and logged an event (a BLOB in a table keyed by rowid)."""
    directory = tmp_path_factory.mktemp("round56") / "episode"
    with claims_env.world() as world:
        world.reset(case=CASE, seed=7, run_id="run-1")
        world.call("read_note", {"note_id": 1})
        world.call("allocate", {"claim_id": 16, "amount": 5.0})
        world.call("allocate", {"claim_id": 999, "amount": 1.0})
        world.call("set_status", {"claim_id": 2, "status": "closed"})
        world.call("tag_claim", {"claim_id": 3, "tag": "late"})
        world.call("log_event", {"kind": "ping"})
        save_episode(world, directory)
    return directory


@pytest.fixture
def episode(original: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(original, tmp_path / "episode"))


def _pin(directory: Path, name: str, data: bytes) -> None:
    """Write a part and re-seal the manifest over it (its sha256 and its digest)."""
    (directory / name).write_bytes(data)
    manifest = orjson.loads((directory / "manifest.json").read_bytes())
    manifest["files"][name] = hashlib.sha256(data).hexdigest()
    manifest["digest"] = content_digest(manifest)
    (directory / "manifest.json").write_bytes(record_bytes(manifest))


def reseal(directory: Path, name: str, edit: Edit, *, own_digest: bool = True) -> None:
    """Edit a JSON part; recompute its own digest (unless not ``own_digest``) and the
    manifest's."""
    record = orjson.loads((directory / name).read_bytes())
    edit(record)
    if own_digest:
        record["digest"] = content_digest(record)
    _pin(directory, name, record_bytes(record))


def reseal_log(directory: Path, edit: Edit) -> None:
    lines = (directory / "actions.jsonl").read_bytes().splitlines()
    events = [orjson.loads(line) for line in lines]
    edit(events)
    _pin(directory, "actions.jsonl", b"".join(canonical_bytes(e) + b"\n" for e in events))


def refused_by_cli(directory: Path, *names: str) -> None:
    """``verify`` and ``show`` exit 3 naming each of ``names``, with no traceback."""
    for command in ("verify", "show"):
        done = onrecord(command, directory)
        output = done.stdout + done.stderr
        assert done.returncode == 3, (command, output)
        assert "Traceback" not in output, (command, output)
        for name in names:
            assert name in done.stderr, (command, output)


def _allocation(audit: dict[str, Any]) -> dict[str, Any]:
    (event,) = (e for e in audit["events"] if e["table"] == "allocations")
    return event


def _claim_2(audit: dict[str, Any]) -> dict[str, Any]:
    (event,) = (e for e in audit["events"] if e["table"] == "claims")
    return event


# -- 1. every part's own digest is checked on load --------------------------------------
STALE: dict[str, Edit] = {
    "diff.json": lambda r: r["diff"]["allocations"]["created"][0].update(claim_id=17),
    "audit.json": lambda r: _allocation(r)["new"].update(claim_id=17),
    "task.json": lambda r: r["case"].update(case_id="alloc-16"),
}


@pytest.mark.parametrize("name", sorted(STALE))
def test_a_part_edited_under_a_stale_digest_is_refused_on_load(episode: Path, name: str) -> None:
    reseal(episode, name, STALE[name], own_digest=False)  # only the manifest re-sealed
    with pytest.raises(DigestMismatch, match=rf"{name} does not match its digest"):
        ToolEpisode.load(episode)
    refused_by_cli(episode, name)


# -- 2. the diff is the one the saved history and end state say -------------------------
def test_a_forged_diff_is_refused_and_no_longer_passes_grading(episode: Path) -> None:
    check = ("check", "envkit/diff_satisfies_rules", "--episode", episode)
    assert onrecord(*check).returncode == 1  # the agent allocated to claim 16
    reseal(episode, "diff.json", STALE["diff.json"])  # says claim 17, re-sealed
    with pytest.raises(ConsistencyError, match=r"diff\.json: field 'diff' disagrees") as info:
        ToolEpisode.load(episode)
    assert "audit.json" in str(info.value)
    assert "'allocations'" in str(info.value)
    refused_by_cli(episode, "diff.json")
    done = onrecord(*check)
    assert done.returncode == 3, done.stderr
    assert "diff.json" in done.stderr


def test_a_value_rewritten_as_an_equal_one_of_another_type_is_refused(episode: Path) -> None:
    # 5 == 5.0 in Python, but the database holds a REAL: the diff must say 5.0.
    reseal(episode, "diff.json", lambda r: r["diff"]["allocations"]["created"][0].update(amount=5))
    with pytest.raises(ConsistencyError, match=r"diff\.json: field 'diff'"):
        ToolEpisode.load(episode)


FORGED_TOGETHER: dict[str, tuple[Edit, Edit]] = {
    "an allocation's claim": (
        lambda r: _allocation(r)["new"].update(claim_id=17),
        lambda r: r["diff"]["allocations"]["created"][0].update(claim_id=17),
    ),
    "a changed row's value before": (
        lambda r: _claim_2(r)["old"].update(status="disputed"),
        lambda r: r["diff"]["claims"]["changed"][0]["before"].update(status="disputed"),
    ),
}


@pytest.mark.parametrize("forgery", sorted(FORGED_TOGETHER))
def test_a_diff_and_audit_forged_together_are_refused_by_verify(
    episode: Path, forgery: str
) -> None:
    audit_edit, diff_edit = FORGED_TOGETHER[forgery]
    reseal(episode, "audit.json", audit_edit)
    reseal(episode, "diff.json", diff_edit)
    loaded = ToolEpisode.load(episode)  # they agree with each other
    with pytest.raises(ConsistencyError, match=r"audit\.json: field 'events' disagrees"):
        check_episode_agrees(loaded)  # but not with the history final.sqlite holds
    refused_by_cli(episode, "audit.json", "final.sqlite")


def test_a_history_forged_inside_final_sqlite_too_is_refused_by_verify(episode: Path) -> None:
    reseal(episode, "audit.json", FORGED_TOGETHER["an allocation's claim"][0])
    reseal(episode, "diff.json", FORGED_TOGETHER["an allocation's claim"][1])
    database = episode / "final.sqlite"
    conn = sqlite3.connect(database)
    (shadow,) = conn.execute(
        "SELECT shadow FROM _onrecord_audit_tables WHERE tbl = 'allocations'"
    ).fetchone()
    conn.execute(f'UPDATE "{shadow}" SET n1 = 17')  # the audit's copy of claim_id, not the row
    conn.commit()
    conn.close()
    _pin(episode, "final.sqlite", database.read_bytes())
    loaded = ToolEpisode.load(episode)
    assert loaded.end_state_digest() == loaded.manifest["end_state_digest"]  # rows untouched
    with pytest.raises(ConsistencyError, match=r"diff\.json: field 'diff' disagrees with the row"):
        check_episode_agrees(loaded)
    refused_by_cli(episode, "diff.json", "final.sqlite")


@tool(writes=True)
def record_extremes(ctx: ToolContext) -> None:
    """Store an infinite REAL and a BLOB, and delete a row."""
    ctx.execute("INSERT INTO m VALUES (2, 9e999, x'00ff')")
    ctx.execute("DELETE FROM m WHERE id = 1")


def test_an_infinity_forged_as_null_is_refused_and_the_genuine_one_verifies(
    tmp_path: Path,
) -> None:
    def populate(conn: sqlite3.Connection, rng: object) -> None:
        conn.execute("INSERT INTO m VALUES (1, 1.5, NULL)")

    schema = "CREATE TABLE m (id INTEGER PRIMARY KEY, v REAL, b BLOB)"
    with ToolWorld(Snapshot.build("extremes", schema, populate), [record_extremes]) as world:
        world.reset()
        assert world.call("record_extremes", {})["status"] == "ok"
        save_episode(world, tmp_path / "episode")
    check_episode_agrees(ToolEpisode.load(tmp_path / "episode"))  # inf, BLOB, a deletion
    reseal(tmp_path / "episode", "diff.json", lambda r: r["diff"]["m"]["created"][0].update(v=None))
    with pytest.raises(ConsistencyError, match=r"diff\.json: field 'diff'"):
        ToolEpisode.load(tmp_path / "episode")


# -- 3. parts of the wrong shape ---------------------------------------------------------
def _steps_1_1(events: list[dict[str, Any]]) -> None:
    events[1]["step"] = 1


SHAPES: dict[str, tuple[str, str, Edit]] = {
    "audit without events": ("audit.json", "field 'events' is missing", lambda r: r.pop("events")),
    "audit events 0": ("audit.json", "field 'events' must be", lambda r: r.update(events=0)),
    "audit without tables": ("audit.json", "field 'tables' is missing", lambda r: r.pop("tables")),
    "audit event step a list": (
        "audit.json",
        "'events' item 0 'step'",
        lambda r: r["events"][0].update(step=[3]),
    ),
    "audit event op a list": (
        "audit.json",
        "'events' item 0 'op'",
        lambda r: r["events"][0].update(op=["insert"]),
    ),
    "audit event row short of a column": (
        "audit.json",
        "'events' item 0 'new'",
        lambda r: r["events"][0]["new"].pop("amount"),
    ),
    "audit event twice": (
        "audit.json",
        "'events' item 4 'seq'",
        lambda r: r["events"].append(r["events"][0]),
    ),
    "diff missing": ("diff.json", "field 'diff' is missing", lambda r: r.pop("diff")),
    "diff true": ("diff.json", "field 'diff' must be a diff", lambda r: r.update(diff=True)),
    "diff kind a number": (
        "diff.json",
        "field 'diff'['allocations']['created'] must be a list",
        lambda r: r["diff"]["allocations"].update(created=5),
    ),
    "task case a number": ("task.json", "field 'case' must be", lambda r: r.update(case=5)),
    "task case under a stale case digest": (
        "task.json",
        "field 'case' is not a saved case",
        lambda r: r["case"].update(input="Allocate 5.00 to claim 16"),
    ),
    "two calls numbered 1": ("actions.jsonl", "'step' of call 2", _steps_1_1),
    "a call's step a list": (
        "actions.jsonl",
        "'step' of call 1",
        lambda e: e[0].update(step=[1]),
    ),
    "a call's status null": (
        "actions.jsonl",
        "'status' of call 1",
        lambda e: e[0].update(status=None),
    ),
    "a call without its state version": (
        "actions.jsonl",
        "call 2 (line 2) lacks the fields ['state_version']",
        lambda e: e[1].pop("state_version"),
    ),
}


@pytest.mark.parametrize("variant", sorted(SHAPES))
def test_a_part_of_the_wrong_shape_is_refused_naming_the_part_and_field(
    episode: Path, variant: str
) -> None:
    name, field, edit = SHAPES[variant]
    if name == "actions.jsonl":
        reseal_log(episode, edit)
    else:
        reseal(episode, name, edit)
    with pytest.raises(SchemaError) as info:
        ToolEpisode.load(episode)
    message = str(info.value)
    assert f"{episode / name}: " in message
    assert field in message
    assert "restore the episode from a copy" in message
    refused_by_cli(episode, name)


# -- any single re-sealed change to diff.json's rows -------------------------------------
VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.binary(max_size=3).map(lambda data: {"$blob": data.hex()}),
)


def _rows(diff: dict[str, Any]) -> list[tuple[str, str, int, str | None]]:
    """(table, kind, index, side) of every row the diff lists."""
    places: list[tuple[str, str, int, str | None]] = []
    for table, changes in sorted(diff.items()):
        for kind, entries in sorted(changes.items()):
            for index in range(len(entries)):
                sides: list[str | None] = ["before", "after"] if kind == "changed" else [None]
                places.extend((table, kind, index, side) for side in sides)
    return places


def _mutate(diff: dict[str, Any], data: st.DataObject) -> None:
    table, kind, index, side = data.draw(st.sampled_from(_rows(diff)), label="row")
    entries = diff[table][kind]
    row = entries[index] if side is None else entries[index][side]
    how = data.draw(st.sampled_from(["value", "drop row", "copy row", "drop column", "add column"]))
    if how == "drop row":
        del entries[index]
    elif how == "copy row":
        entries.insert(index, entries[index])
    elif how == "drop column":
        del row[data.draw(st.sampled_from(sorted(row)))]
    elif how == "add column":
        row[data.draw(st.text(min_size=1, max_size=6).filter(lambda c: c not in row))] = 1
    else:
        column = data.draw(st.sampled_from(sorted(row)), label="column")
        row[column] = data.draw(
            VALUES.filter(lambda v: canonical_bytes(v) != canonical_bytes(row[column]))
        )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_single_resealed_change_to_the_diff_rows_is_refused(
    original: Path, data: st.DataObject
) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        episode = Path(shutil.copytree(original, Path(scratch) / "episode"))
        reseal(episode, "diff.json", lambda record: _mutate(record["diff"], data))
        with pytest.raises(OnrecordError, match=r"diff\.json"):
            ToolEpisode.load(episode)
