"""How capture and the closed loop keep an exception raised by the user's code (the
factory, the environment's reset and step, the observer, a model's predict or a
planner): with the line that raised it, so a developer can go there from the record
(``onrecord._exceptions.raised_at``).

onrecord's own refusals (a malformed step, an unportable state: ``OnrecordError``) are
kept as they were: their place is onrecord's, and their message says what to fix."""

from __future__ import annotations

from onrecord._exceptions import describe, error_record, raised_at
from onrecord.errors import OnrecordError

__all__ = ["described", "raised_record"]


def raised_record(exc: BaseException) -> dict[str, str]:
    """``error_record``, its message followed by `` (at FILE:LINE in FUNCTION)``."""
    record = error_record(exc)
    record["message"] += _user_place(exc)
    return record


def described(exc: BaseException) -> str:
    """``Type: message (at FILE:LINE in FUNCTION)``, as an observer error is kept."""
    return describe(exc) + _user_place(exc)


def _user_place(exc: BaseException) -> str:
    # Empty for an interrupt too (raised_at): where one lands differs every time.
    return "" if isinstance(exc, OnrecordError) else raised_at(exc)
