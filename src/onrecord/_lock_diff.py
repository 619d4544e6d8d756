"""Where two report locks differ, as text for a refused comparison."""

from __future__ import annotations

from typing import Any

__all__ = ["where_differ"]


_SHOWN_DIFFERENCES = 4


def where_differ(a: Any, b: Any, path: str) -> str:
    """Where two lock values differ, as ``path: A …, B …`` (the first few places): "lock
    settings differ: run" did not say that it was the seeds."""
    found: list[str] = []
    _collect_differences(a, b, path, found)
    shown = "; ".join(found[:_SHOWN_DIFFERENCES])
    more = len(found) - _SHOWN_DIFFERENCES
    return shown + (f"; and {more} more" if more > 0 else "")


def _collect_differences(a: Any, b: Any, path: str, found: list[str]) -> None:
    if len(found) > _SHOWN_DIFFERENCES:
        return
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b), key=str):
            if a.get(key) != b.get(key):
                _collect_differences(
                    a.get(key), b.get(key), f"{path}.{key}" if path else key, found
                )
        return
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (item_a, item_b) in enumerate(zip(a, b, strict=True)):
            if item_a != item_b:
                _collect_differences(item_a, item_b, f"{path}[{index}]", found)
        return
    found.append(f"{path or 'value'}: {_short(a)} in A, {_short(b)} in B")


def _short(value: Any) -> str:
    text = "nothing" if value is None else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
