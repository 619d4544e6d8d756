"""How rules and diff comparisons read a diff and show its values in their sentences."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord._canonical import canonical_bytes
from onrecord.envkit._sql import encode_reals
from onrecord.envkit.diff import StateDiff

__all__ = ["KINDS", "SHOWN", "canon", "clip", "entries", "show", "summary"]

KINDS = ("created", "changed", "deleted")
"""The kinds of row change a table's diff lists."""
SHOWN = 300
"""Most characters of one value a sentence shows: a row holding a 5 MB document would
otherwise be copied whole into every sentence about it, and into the report."""


def canon(value: Any) -> bytes:
    """Canonical JSON with infinite REALs as ``{"$real": ...}``: plain JSON writes them
    as ``null``, and a row holding an infinity would then match, or read as, a NULL."""
    return canonical_bytes(encode_reals(value))


def show(value: Any) -> str:
    """``value`` as it appears in a sentence (canonical JSON, cut to ``SHOWN``)."""
    return clip(canon(value).decode())


def clip(text: str) -> str:
    """``text``, or its first ``SHOWN`` characters and how long it is."""
    if len(text) <= SHOWN:
        return text
    return f"{text[:SHOWN]}… ({len(text)} characters)"


def entries(diff: StateDiff, table: str, kind: str) -> list[Any]:
    """The ``kind`` entries of ``table`` in ``diff`` (none when it did not change)."""
    return list(diff.get(table, {}).get(kind, []))


def summary(table_diff: Mapping[str, list[Any]]) -> str:
    """``rows: 1 created, 2 changed``."""
    parts = [f"{len(table_diff[kind])} {kind}" for kind in KINDS if table_diff.get(kind)]
    return "rows: " + ", ".join(parts)
