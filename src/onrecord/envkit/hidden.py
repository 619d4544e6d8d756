"""Hidden state: records an agent sees only by calling a tool that reveals them.

Declare hidden tables with ``ToolWorld(..., hidden=["case_notes"])``; tools read them
with ``ctx.reveal(table, key)``, which logs ``{"table", "key"}`` in the event's ``reads``.
A tool's own SQL that reads one is logged as ``{"table", "rows": "unknown"}``
(``_sql_reads``): the table was read, but which rows is unknown, so it counts as a read of
the table and never as a read of any one key.
The helpers here turn the saved log and audit into "read X before writing Y" verdicts.
A table name the episode's database does not have (a typo in a check) is an
``InputError`` naming the tables it has, so a check built on them is an evaluator error
rather than a verdict about nothing; so is reading a table that is not hidden (only
reads of hidden tables are logged, so no step ever reads it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from onrecord._canonical import canonical_bytes
from onrecord.envkit._check_args import check_label, check_target
from onrecord.envkit._sql import portable_value
from onrecord.envkit._sql_reads import unknown_rows
from onrecord.envkit.episode import ToolEpisode
from onrecord.episode import OutcomeCheck, OutcomeVerdict
from onrecord.errors import InputError

__all__ = ["ANY", "read_before_write", "read_before_write_check", "read_steps", "write_steps"]

ANY: Any = object()
"""Matches any key."""


def _key_matches(wanted: Any, key: Any) -> bool:
    return wanted is ANY or canonical_bytes(_same_number(wanted)) == canonical_bytes(
        _same_number(key)
    )


def _same_number(key: Any) -> Any:
    """A key with whole REALs as integers: SQLite tells keys apart by value, so the row a
    tool revealed as ``1`` is the row the audit keys ``1.0`` in a REAL key column. A
    ``bytes`` or ``RawText`` key is written as the log and audit write it."""
    if type(key) is float and key.is_integer() and -(2**63) <= key < 2**63:
        return int(key)
    if isinstance(key, list | tuple):
        return [_same_number(item) for item in key]
    return portable_value(key)


def _known(episode: ToolEpisode, table: Any, helper: str) -> None:
    """Refuse a table the episode's database does not have: it would match nothing, and
    a check would pass or fail on a misspelt name without saying so."""
    tables = episode.tables
    if type(table) is not str or table not in tables:
        raise InputError(
            f"{helper}: the episode's database has no table {table!r}; its tables are "
            f"{sorted(tables)} (names as the schema declares them, letter case included)"
        )


def _hidden(episode: ToolEpisode, table: Any, helper: str) -> None:
    """Refuse a table no step can read: only reveals of hidden tables are logged."""
    _known(episode, table, helper)
    hidden = sorted(episode.manifest.get("hidden", ()))
    if table not in hidden:
        raise InputError(
            f"{helper}: {table!r} is not a hidden table of this episode, and reads are "
            f"logged only for hidden tables, so no step ever reads it; "
            f"hidden tables: {hidden or 'none'}"
        )


def read_steps(episode: ToolEpisode, table: str, key: Any = ANY) -> list[int]:
    """Steps whose successful call read ``table``: revealed a record of it, or (with no
    ``key``) ran SQL that read it. With ``key``, only the steps that revealed that
    record: a read by SQL logs no rows, so it is never counted as a read of one key.

    ``InputError`` when ``table`` is not one of the episode's hidden tables."""
    _hidden(episode, table, "read_steps")
    return _steps(episode, lambda read: read["table"] == table and _read_matches(key, read))


def _read_matches(key: Any, read: dict[str, Any]) -> bool:
    if "key" in read:
        return _key_matches(key, read["key"])
    return key is ANY and unknown_rows(read)


def _steps(episode: ToolEpisode, matches: Callable[[dict[str, Any]], bool]) -> list[int]:
    """Steps whose successful call logged a read that ``matches``."""
    return [
        event["step"]
        for event in episode.actions
        if event["status"] == "ok" and any(matches(read) for read in event.get("reads", ()))
    ]


def write_steps(episode: ToolEpisode, table: str, key: Any = ANY) -> list[int]:
    """Steps at which a row of ``table`` (with ``key``) was inserted, updated or deleted.

    ``InputError`` when the episode's database has no table ``table``."""
    _known(episode, table, "write_steps")
    return sorted(
        {
            change["step"]
            for change in episode.audit
            if change["table"] == table and _key_matches(key, change["key"])
        }
    )


def read_before_write(
    episode: ToolEpisode, read: tuple[str, Any] | str, write: tuple[str, Any] | str
) -> OutcomeVerdict:
    """Pass when ``read`` was read (see :func:`read_steps`) before the first change to
    ``write``.

    ``read`` and ``write`` are a table name or ``(table, key)``. Not measured when
    ``write`` never changed (nothing to judge the order of), and when no reveal of the
    key came before it but a step's own SQL read the table (which rows it read is
    unknown). ``InputError`` when ``read`` is not a hidden table of the episode or
    ``write`` not a table of its database.
    """
    read_table, read_key = (read, ANY) if isinstance(read, str) else read
    write_table, write_key = (write, ANY) if isinstance(write, str) else write
    _hidden(episode, read_table, "read_before_write")
    _known(episode, write_table, "read_before_write")
    writes = write_steps(episode, write_table, write_key)
    reads = read_steps(episode, read_table, read_key)
    facts = {"read_steps": reads, "write_steps": writes}
    what = _label(read_table, read_key)
    if not writes:
        return OutcomeVerdict(
            None,
            f"{_label(write_table, write_key)} was never changed, so "
            f"the order of reading {what} cannot be judged",
            facts,
        )
    if reads and reads[0] < writes[0]:
        return OutcomeVerdict(
            True,
            f"{what} was read at step {reads[0]}, before the first change at step {writes[0]}",
            facts,
        )
    if read_key is not ANY:
        by_sql = _steps(episode, lambda r: r["table"] == read_table and unknown_rows(r))
        if by_sql and by_sql[0] < writes[0]:
            return OutcomeVerdict(
                None,
                f"step {by_sql[0]}'s SQL read {read_table} before the first change to "
                f"{_label(write_table, write_key)} at step {writes[0]}, but which rows it "
                f"read is unknown, so whether {what} was read first cannot be judged",
                {**facts, "sql_read_steps": by_sql},
            )
    when = f"only at step {reads[0]}" if reads else "never"
    return OutcomeVerdict(
        False,
        f"{_label(write_table, write_key)} changed at step {writes[0]}, but {what} was read {when}",
        facts,
    )


def _label(table: str, key: Any) -> str:
    return table if key is ANY else f"{table} key {canonical_bytes(_written(key)).decode()}"


def _written(key: Any) -> Any:
    """A key as the log writes it (``bytes`` as ``{"$blob": hex}``), for messages."""
    if isinstance(key, list | tuple):
        return [portable_value(item) for item in key]
    return portable_value(key)


def read_before_write_check(
    name: str, read: tuple[str, Any] | str, write: tuple[str, Any] | str, version: str = "1"
) -> OutcomeCheck:
    """An ``OutcomeCheck`` wrapping :func:`read_before_write` (register it if you like).
    ``read`` and ``write`` that are not a table name or ``(table, key)`` are refused here;
    whether the tables exist is known only from an episode's database."""
    check_target("read_before_write_check", "read", read)
    check_target("read_before_write_check", "write", write)
    check_label("read_before_write_check", "name", name)
    check_label("read_before_write_check", "version", version)

    def evaluate(episode: ToolEpisode) -> OutcomeVerdict:
        return read_before_write(episode, read, write)

    return OutcomeCheck(name, version, evaluate)
