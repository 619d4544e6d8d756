"""What ``verify`` and ``show`` get back for a record that is not one object, and the
helpers every record check shares: errors that name the file, the digest check."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from onrecord._canonical import content_digest
from onrecord._exceptions import describe
from onrecord.errors import (
    ConsistencyError,
    DigestMismatch,
    EvidenceError,
    InputError,
    OnrecordError,
    SchemaError,
)

__all__ = ["Bundle", "digested", "named"]


@dataclass(frozen=True)
class Bundle:
    """A verified record that is not one object: a directory or a JSON Lines file."""

    kind: str
    """What it is, e.g. ``run directory``."""
    digest: str
    """The digest that pins it (its manifest's or first record's)."""
    summary: str
    """One line: what was verified."""
    items: tuple[Any, ...] = ()
    """Verified contents to show (forecasts, episodes, a report and decision, ...)."""
    changes: tuple[dict[str, Any], ...] = field(default=())
    """A regrade's changed verdicts."""
    record: Any = None
    """The verified record itself, for ``show`` to print whole: a decision, comparison or
    summary (its dict), or closed-loop records (a tuple of dicts)."""


_T = TypeVar("_T")


def named(path: Path, load: Callable[[], _T]) -> _T:
    """Run a loader; its error names the file, and a malformed field is a schema error
    (a record can be digest-consistent and still hold garbage)."""
    try:
        return load()
    except OnrecordError as exc:
        if str(path) in str(exc):
            raise
        raise _same_kind(exc, f"{path}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise SchemaError(f"{path}: malformed record ({describe(exc)})") from exc


def _same_kind(exc: OnrecordError, message: str) -> OnrecordError:
    kind = type(exc)
    for candidate in (SchemaError, DigestMismatch, ConsistencyError, EvidenceError, InputError):
        if issubclass(kind, candidate):
            return candidate(message)
    return OnrecordError(message)


def digested(path: Path, data: dict[str, Any]) -> None:
    """A record's ``digest`` must be the digest of the rest of it."""
    if data.get("digest") != content_digest(data):
        raise DigestMismatch(f"{path} does not match its digest: it was changed after saving")
