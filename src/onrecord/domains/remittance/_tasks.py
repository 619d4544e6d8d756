"""The task file: ``tasks.toml`` read into ``RemittanceTask`` records."""

from __future__ import annotations

import tomllib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from onrecord.errors import InputError

__all__ = ["KINDS", "RemittanceTask", "load_tasks"]

KINDS = (
    "full_payment",
    "partial_contractual",
    "denial",
    "underpayment",
    "over_threshold",
    "hidden_hold",
    "hidden_redirect",
    "split",
    "duplicate",
    "recoupment",
)
_DEFAULT_SIZE = 300


@dataclass(frozen=True)
class RemittanceTask:
    """One remittance to post, with the scenario parameters its builder needs."""

    task_id: str
    """Stable name, e.g. ``denial-03``; the case id of every episode of this task."""
    kind: str
    """Scenario builder and expectation family (one of ``KINDS``)."""
    title: str
    """One line a person reads in a report."""
    payer_id: str
    """The insurer that sent the remittance."""
    lines: tuple[Mapping[str, Any], ...]
    """Service lines of the claim the remittance pays (see the task file's header)."""
    params: Mapping[str, Any]
    """Kind-specific parameters (``deadline_in_days``, ``paid``, ``offset``)."""
    size: int
    """Background rows in the start snapshot."""
    seed: int
    """Seed of the background data; derived from ``task_id`` unless given."""
    allowed_tables: tuple[str, ...]
    """Tables the task may change (from its kind)."""
    focus: tuple[str, ...]
    """Named checks the task is built to exercise."""


def load_tasks(path: str | Path | None = None) -> tuple[RemittanceTask, ...]:
    """Read the task file (the packaged ``tasks.toml`` by default)."""
    if path is None:
        text = resources.files("onrecord.domains.remittance").joinpath("tasks.toml").read_text()
    else:
        text = Path(path).read_text()
    data = tomllib.loads(text)
    kinds = data.get("kinds", {})
    tasks = tuple(_task(entry, kinds) for entry in data.get("task", []))
    ids = [task.task_id for task in tasks]
    if len(set(ids)) != len(ids):
        raise InputError("task ids in the task file must be unique; rename the repeated id")
    return tasks


def _task(entry: Mapping[str, Any], kinds: Mapping[str, Any]) -> RemittanceTask:
    kind = entry.get("kind")
    if kind not in KINDS or kind not in kinds:
        raise InputError(
            f"task {entry.get('id')!r}: kind must be one of {KINDS} and have a "
            f"[kinds.{kind}] table, got {kind!r}"
        )
    known = {"id", "kind", "title", "payer", "lines", "size", "seed"}
    task_id = str(entry["id"])
    return RemittanceTask(
        task_id=task_id,
        kind=kind,
        title=str(entry.get("title", task_id)),
        payer_id=str(entry["payer"]),
        lines=tuple(entry.get("lines", ())),
        params={k: v for k, v in entry.items() if k not in known},
        size=int(entry.get("size", _DEFAULT_SIZE)),
        seed=int(entry.get("seed", zlib.crc32(task_id.encode()) % 10_000)),
        allowed_tables=tuple(kinds[kind]["allowed_tables"]),
        focus=tuple(kinds[kind]["focus"]),
    )
