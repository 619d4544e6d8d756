"""Open any saved onrecord record by its schema."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from onrecord._canonical import load_record_bytes
from onrecord.episode import EPISODE_SCHEMA, EpisodeEvidence
from onrecord.errors import SchemaError
from onrecord.policy import POLICY_SCHEMA, AcceptancePolicy
from onrecord.report import REPORT_SCHEMA, EvaluationReport

__all__ = ["load_any"]


def load_any(path: str | Path) -> Any:
    """Load and verify an episode, report or policy file, whichever it is."""
    data = load_record_bytes(Path(path).read_bytes(), str(path))
    schema = data.get("schema")
    if schema == EPISODE_SCHEMA:
        return EpisodeEvidence.from_dict(data)
    if schema == REPORT_SCHEMA:
        return EvaluationReport.from_dict(data)
    if schema == POLICY_SCHEMA:
        return AcceptancePolicy.from_dict(data)
    raise SchemaError(
        f"{path}: unknown schema {schema!r}; onrecord reads "
        f"{EPISODE_SCHEMA}, {REPORT_SCHEMA} and {POLICY_SCHEMA}"
    )
