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

__all__ = ["UNNAMED", "Bundle", "digested", "named"]


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
    (a record can be digest-consistent and still hold garbage).

    Loaders name the field and its fix themselves; a KeyError, TypeError and the like is
    a field one of them did not check. This net keeps it from a traceback and exit 1
    (which a CI job reads as "reject") and says so (``UNNAMED``): a test that meets it
    has found a loader to fix, not a refusal to expect."""
    try:
        return load()
    except OnrecordError as exc:
        if str(path) in str(exc):
            raise
        raise _same_kind(exc, f"{path}: {exc}") from exc
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise SchemaError(
            f"{path}: {UNNAMED} ({describe(exc)}): re-create it with the command that wrote "
            "it; if onrecord wrote it so, please report a bug with this message"
        ) from exc


UNNAMED = "malformed record, in a way onrecord's checks do not name"
"""What opens the refusal of a record a loader failed on without naming the field."""


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
