"""SQL functions and collations on a connection: which names SQLite defines before any
tool runs (a tool may not replace them), and how to remove one a tool registered."""

from __future__ import annotations

import sqlite3

from onrecord.envkit._sql import internal

__all__ = ["function_names", "unregister"]


# SQLite's core functions, for builds without PRAGMA function_list (before 3.30, or
# built with SQLITE_OMIT_INTROSPECTION_PRAGMAS), where the connection cannot list them.
_CORE_FUNCTIONS = frozenset(
    [
        "abs",
        "avg",
        "changes",
        "char",
        "coalesce",
        "count",
        "cume_dist",
        "date",
        "datetime",
        "dense_rank",
        "first_value",
        "format",
        "glob",
        "group_concat",
        "hex",
        "ifnull",
        "iif",
        "instr",
        "json",
        "json_extract",
        "julianday",
        "lag",
        "last_insert_rowid",
        "last_value",
        "lead",
        "length",
        "like",
        "likelihood",
        "likely",
        "lower",
        "ltrim",
        "max",
        "min",
        "nth_value",
        "ntile",
        "nullif",
        "percent_rank",
        "printf",
        "quote",
        "random",
        "randomblob",
        "rank",
        "replace",
        "round",
        "row_number",
        "rtrim",
        "sign",
        "soundex",
        "sqlite_version",
        "strftime",
        "substr",
        "substring",
        "sum",
        "time",
        "total",
        "total_changes",
        "trim",
        "typeof",
        "unicode",
        "unlikely",
        "upper",
        "zeroblob",
    ]
)


def function_names(conn: sqlite3.Connection) -> set[str]:
    """The SQL functions the connection has before any tool runs, in lower case."""
    try:
        listed = {
            name.lower()
            for (name,) in conn.execute(internal("SELECT name FROM pragma_function_list"))
        }
    except sqlite3.Error:
        listed = set()
    return listed | _CORE_FUNCTIONS


def unregister(conn: sqlite3.Connection, method: str, name: str, narg: int) -> None:
    """Remove a registration. SQLite deletes a function given no implementation; of
    Python's methods only ``create_window_function(name, narg, None)`` passes none
    (``create_function(name, narg, None)`` registers one that raises), and it deletes
    a scalar or aggregate function of that name and argument count alike."""
    if method == "create_collation":
        sqlite3.Connection.create_collation(conn, name, None)
    else:
        sqlite3.Connection.create_window_function(conn, name, narg, None)
