"""The environment kit's close-match hints (``onrecord._close_names``): a tool's example
arguments. Without them ``skuu`` for ``sku`` read as a missing required field."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord._close_names import misspelt_keys

__all__ = ["unknown_example_arguments"]


def unknown_example_arguments(name: str, example: Mapping[str, Any], schema: Any) -> str | None:
    """The refusal of an ``example=`` naming an argument the tool does not take: the
    schema check names the *required* argument it lacks first, so ``skuu`` for ``sku``
    read as "missing the required field 'sku'" with no word on the ``skuu`` given."""
    known = schema.get("properties", {}) if isinstance(schema, Mapping) else {}
    unknown = [key for key in example if key not in known]
    if not unknown or not known:
        return None
    return (
        f"tool {name!r}: example has the unknown arguments {unknown}"
        f"{misspelt_keys(unknown, list(known))}; the tool takes {sorted(known)}"
    )
