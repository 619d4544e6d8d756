"""``EvalCase``: one task, with an identity that every record made from it carries."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

from onrecord._canonical import content_digest, to_portable
from onrecord.errors import InputError

__all__ = ["COMPLETIONS", "Completion", "EvalCase"]

Completion = Literal["terminated", "truncated", "either"]
COMPLETIONS: tuple[Completion, ...] = ("terminated", "truncated", "either")


@dataclass(frozen=True)
class EvalCase:
    """A task to evaluate: its input, optional expected output and stable identity."""

    input: Any
    """What the agent is asked to do; any portable JSON value."""
    expected_output: Any = None
    """What a correct answer looks like, if the task has one."""
    case_id: str | None = field(default=None, kw_only=True)
    """Stable name of the case; defaults to ``case-<first 12 hex of the content digest>``."""
    source_id: str | None = field(default=None, kw_only=True)
    """Where the case came from (a document, a seed, a dataset row)."""
    metadata: Mapping[str, Any] | None = field(default=None, kw_only=True)
    """Any portable facts about the case; part of its identity."""
    completion: Completion = field(default="terminated", kw_only=True)
    """Which ending counts as complete: natural termination, truncation (e.g. survive to
    the time limit) or either."""

    def __post_init__(self) -> None:
        for name in ("case_id", "source_id"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise InputError(
                    f"EvalCase.{name} must be a non-empty string or None, got {value!r}"
                )
        if self.metadata is not None and not isinstance(self.metadata, Mapping):
            raise InputError(
                "EvalCase.metadata must be a mapping of portable facts such as "
                f"{{'difficulty': 'hard'}}, or None; got {type(self.metadata).__name__}"
            )
        if self.completion not in COMPLETIONS:
            raise InputError(
                f"EvalCase.completion must be one of {COMPLETIONS}, got {self.completion!r}"
            )
        # Freeze a detached portable copy so later mutation of the caller's objects
        # cannot change the case behind its digest.
        object.__setattr__(self, "input", to_portable(self.input, "$.input"))
        object.__setattr__(
            self, "expected_output", to_portable(self.expected_output, "$.expected_output")
        )
        object.__setattr__(self, "metadata", to_portable(dict(self.metadata or {}), "$.metadata"))

    @cached_property  # the case is frozen, so its digest is computed once
    def content_digest(self) -> str:
        """sha256 of everything that defines the case except its names."""
        return content_digest(
            {
                "input": self.input,
                "expected_output": self.expected_output,
                "metadata": self.metadata,
                "completion": self.completion,
            }
        )

    @property
    def identity(self) -> dict[str, Any]:
        """The identity bound into every record: names plus content digest."""
        digest = self.content_digest
        return {
            "case_id": self.case_id or f"case-{digest[:12]}",
            "source_id": self.source_id,
            "content_digest": digest,
        }

    def to_dict(self) -> dict[str, Any]:
        """Portable form, with the identity, for saving inside evidence."""
        return {
            **self.identity,
            "input": self.input,
            "expected_output": self.expected_output,
            "metadata": dict(self.metadata or {}),
            "completion": self.completion,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalCase:
        """Rebuild a case saved by ``to_dict``; the content digest must still match."""
        try:
            case = cls(
                data["input"],
                data.get("expected_output"),
                case_id=data["case_id"],
                source_id=data.get("source_id"),
                metadata=data.get("metadata"),
                completion=data.get("completion", "terminated"),
            )
        except KeyError as exc:
            raise InputError(f"case record is missing the field {exc.args[0]!r}") from exc
        if data.get("content_digest") not in (None, case.content_digest):
            raise InputError(
                f"case {data['case_id']!r}: content_digest does not match its "
                "input, expected_output, metadata and completion"
            )
        return case
