"""Schema names that clash with onrecord's own audit names (SQLite names ignore case):
refused up front, never dropped with their rows nor left to a bare SQLite error."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from onrecord.envkit import Snapshot
from onrecord.errors import InputError

KEYED = "CREATE TABLE t (id INTEGER PRIMARY KEY);"


def test_a_user_table_named_like_the_context_table_in_upper_case_is_kept_or_refused(
    tmp_path: Path,
) -> None:
    # Was: DROP TABLE IF EXISTS _onrecord_ctx (names ignore case) dropped the user's
    # table and its row, and the snapshot built without it.
    path = tmp_path / "owner.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(
            f"CREATE TABLE _ONRECORD_CTX (a); INSERT INTO _ONRECORD_CTX VALUES (1); {KEYED}"
        )
    with pytest.raises(InputError, match="_ONRECORD_CTX"):
        Snapshot.from_file(path)
    with sqlite3.connect(path) as conn:  # the owner's file is untouched
        assert conn.execute("SELECT a FROM _ONRECORD_CTX").fetchall() == [(1,)]


@pytest.mark.parametrize(
    "clash",
    [
        "CREATE TABLE _ONRECORD_AUDIT_0 (a);",
        "CREATE TABLE _Onrecord_audit_tables (a);",
        "CREATE INDEX _onrecord_audit_0 ON t (id);",
        "CREATE TRIGGER _ONRECORD_AUDIT_0_U AFTER UPDATE ON t BEGIN SELECT 1; END;",
    ],
)
def test_a_clashing_name_is_an_input_error_naming_it(clash: str) -> None:
    # Was: sqlite3.OperationalError "... already exists" from the audit's install.
    with pytest.raises(InputError, match="has a name onrecord's audit uses"):
        Snapshot.build("clash", KEYED + clash)


def test_an_upper_case_prefix_without_a_clash_is_an_ordinary_audited_table() -> None:
    snap = Snapshot.build("upper", "CREATE TABLE _ONRECORD_notes (id INTEGER PRIMARY KEY, v);")
    assert [table.name for table in snap.tables] == ["_ONRECORD_notes"]
