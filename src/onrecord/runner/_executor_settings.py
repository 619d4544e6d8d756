"""The executor a run was started with, kept in ``run.json`` for its resumes.

A run started on a process pool because its agent may kill its process (``os._exit``, a
crash) was resumed in-process when ``--resume`` named no executor: the agent then killed
onrecord itself (exit 7, no word). ``run.json`` keeps the executor's settings beside the
protocol (like ``episode_timeout``: a resume may change them), and a resume that names
none runs with them. A run written before they were kept has none: it resumes in-process,
as it always did.
"""

from __future__ import annotations

from typing import Any

from onrecord.errors import SchemaError

__all__ = ["ExecutorChoice", "check_settings", "resumed_choice"]

ExecutorChoice = tuple[str | None, int | None, str | None]
"""(executor name, workers, Ray address) as ``make_executor`` takes them (None: not given)."""

_NAMES = ("inprocess", "process", "ray")


def check_settings(value: Any, where: str) -> dict[str, Any] | None:
    """``value`` (``run.json``'s ``executor``) if it is settings onrecord writes, None
    when the run has none; anything else is refused naming ``where``."""
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or value.get("name") not in _NAMES
        or not set(value) <= {"name", "workers", "address"}
        or not _positive(value.get("workers"))
        or not (value.get("address") is None or isinstance(value["address"], str))
    ):
        raise SchemaError(
            f"{where} is {value!r}, not the settings of an executor onrecord writes "
            "(name inprocess, process or ray; workers; address): the run.json was "
            "edited; pass --executor and --workers to resume it, or restore it from a copy"
        )
    return value


def _positive(workers: Any) -> bool:
    return workers is None or (type(workers) is int and workers >= 1)


def resumed_choice(
    recorded: dict[str, Any] | None, name: str | None, workers: int | None, address: str | None
) -> ExecutorChoice:
    """The executor a resume runs with: what the command line names, the rest the run's.

    Naming an executor (or a Ray address, which implies one) replaces the run's settings
    whole; ``--workers`` alone changes the worker count of the run's pool or cluster (of
    an in-process run it asks for a pool, as on a new run); naming nothing keeps them."""
    if recorded is None or name is not None or address is not None:
        return name, workers, address
    kept = recorded["name"]
    if workers is not None:
        if kept == "inprocess":
            return None, workers, None
        return kept, workers, recorded.get("address")
    return kept, recorded.get("workers"), recorded.get("address")
