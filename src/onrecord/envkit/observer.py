"""A read-only export of a world's state, for observers such as ``capture_episode``."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from onrecord.envkit._sql import Table, internal, row_dict
from onrecord.envkit.audit import CTX
from onrecord.envkit.snapshot import readonly_uri
from onrecord.envkit.state import table_rows

__all__ = ["ReadOnlyObserver"]


class ReadOnlyObserver:
    """Calling it returns ``{"state_version", "tables": {name: [row, ...]}}`` read through
    its own ``mode=ro`` connection (rows in key order; hidden tables left out)."""

    def __init__(self, path: Path, tables: Sequence[Table]) -> None:
        self.tables = tuple(tables)
        self.connection = sqlite3.connect(readonly_uri(path), uri=True, check_same_thread=False)

    def __call__(self) -> dict[str, Any]:
        # One read transaction, so the export is a single consistent state.
        conn = self.connection
        conn.execute(internal("BEGIN"))
        try:
            version = conn.execute(internal(f"SELECT version FROM {CTX}")).fetchone()[0]
            return {
                "state_version": version,
                "tables": {table.name: self._rows(table) for table in self.tables},
            }
        finally:
            conn.execute(internal("COMMIT"))

    def _rows(self, table: Table) -> list[dict[str, Any]]:
        # TEXT that is not UTF-8 comes out as {"$text": hex}, like a BLOB as {"$blob": hex}.
        return [row_dict(table, row) for row in table_rows(self.connection, table)]

    def close(self) -> None:
        """Close the read-only connection."""
        self.connection.close()
