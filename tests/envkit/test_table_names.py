"""``read_steps``, ``write_steps`` and ``read_before_write`` refuse a table the episode's
database does not have (and ``read_steps`` a table that is not hidden, which no step can
read): before, a misspelt name returned ``[]`` and a check built on it passed or failed
on nothing, silently. A check that raises is an evaluator error naming the tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from onrecord.envkit import (
    ToolEpisode,
    ToolWorld,
    read_before_write,
    read_before_write_check,
    read_steps,
    run_checks,
    save_episode,
    write_steps,
)
from onrecord.errors import InputError

ONRECORD = str(Path(sys.executable).with_name("onrecord"))


@pytest.fixture
def episode(world: ToolWorld, tmp_path: Path) -> ToolEpisode:
    world.reset(seed=1)
    world.call("read_note", {"note_id": 1})
    world.call("allocate", {"claim_id": 17, "amount": 5.0})
    return save_episode(world, tmp_path / "episode")


def test_known_tables_answer_as_before(episode: ToolEpisode) -> None:
    assert read_steps(episode, "notes") == [1]
    assert read_steps(episode, "notes", 1) == [1]
    assert write_steps(episode, "allocations") == [2]
    assert write_steps(episode, "claims") == []  # a table that exists and did not change
    assert read_before_write(episode, ("notes", 1), "allocations").passed is True


@pytest.mark.parametrize(
    ("call", "helper", "table"),
    [
        (lambda e: write_steps(e, "allocation"), "write_steps", "allocation"),
        (lambda e: write_steps(e, "Allocations"), "write_steps", "Allocations"),
        (lambda e: read_steps(e, "note", 1), "read_steps", "note"),
        (lambda e: read_before_write(e, "notes", "alocations"), "read_before_write", "alocations"),
        (lambda e: read_before_write(e, ("nots", 1), "allocations"), "read_before_write", "nots"),
    ],
)
def test_a_misspelt_table_names_the_tables_there_are(
    episode: ToolEpisode, call: object, helper: str, table: str
) -> None:
    with pytest.raises(InputError) as raised:
        call(episode)  # type: ignore[operator]
    message = str(raised.value)
    assert message.startswith(f"{helper}: the episode's database has no table {table!r}")
    assert "['allocations', 'claims', 'events', 'notes', 'tags']" in message


def test_reading_a_table_that_is_not_hidden_is_refused(episode: ToolEpisode) -> None:
    # Only reveals of hidden tables are logged: no step could ever read "claims".
    with pytest.raises(InputError, match=r"'claims' is not a hidden table .* \['notes'\]"):
        read_steps(episode, "claims")
    with pytest.raises(InputError, match="not a hidden table"):
        read_before_write(episode, "claims", "allocations")


def test_a_check_on_a_misspelt_table_is_an_evaluator_error(episode: ToolEpisode) -> None:
    typo = read_before_write_check("notes_first", ("note", 1), "allocations")
    [result] = run_checks(episode, [typo])
    assert result.status == "evaluator_error"
    assert "no table 'note'" in result.reason


def test_the_check_command_reports_the_misspelt_table(episode: ToolEpisode, tmp_path: Path) -> None:
    (tmp_path / "typo_checks.py").write_text(
        "from onrecord.envkit import read_before_write_check, register_check\n"
        "register_check(read_before_write_check('typo/notes_first', ('note', 1), "
        "'allocations'))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = subprocess.run(
        [ONRECORD, "check", "typo/notes_first",
         "--episode", str(episode.path), "--import", "typo_checks"],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)  # an evaluator error, not 0/1
    assert "evaluator_error" in done.stdout
    assert "no table 'note'" in done.stdout
    assert "'notes'" in done.stdout
