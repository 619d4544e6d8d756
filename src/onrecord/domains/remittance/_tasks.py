"""The task file: ``tasks.toml`` read into ``RemittanceTask`` records."""

from __future__ import annotations

import re
import tomllib
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from onrecord.domains.remittance._generator import (
    APPROVAL_THRESHOLD_CENTS,
    PAYER_IDS,
    PROCEDURES,
)
from onrecord.errors import InputError

__all__ = ["KINDS", "MAX_SIZE", "RemittanceTask", "check_size", "load_tasks"]

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
MAX_SIZE = 1_000_000
"""Most background rows a task's snapshot may have (building 100k takes seconds)."""
_LINE_FIELDS = {  # the line fields each kind's builder reads; any other is a mistake
    "full_payment": {"patient_resp"},
    "partial_contractual": {"patient_resp", "paid"},
    "denial": {"denial"},
    "underpayment": {"patient_resp", "underpaid_by"},
    "over_threshold": {"patient_resp", "paid"},
    "hidden_hold": {"patient_resp", "paid"},
    "hidden_redirect": {"patient_resp", "paid"},
    "split": set(),
    "duplicate": {"patient_resp", "paid"},
    "recoupment": set(),
}
_PARAMS = {"denial": {"deadline_in_days"}, "underpayment": {"deadline_in_days"}, "split": {"paid"}}
_OPTIONAL_PARAMS = {"recoupment": {"offset"}}
_CARC = re.compile(r"[A-Z0-9]{1,5}")


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
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"task file {path or 'tasks.toml'} is not valid TOML: {exc}") from None
    kinds = data.get("kinds", {})
    entries = data.get("task", [])
    if not isinstance(entries, list) or not all(isinstance(e, Mapping) for e in entries):
        raise InputError("the task file's tasks must be [[task]] tables")
    tasks = tuple(_task(entry, kinds) for entry in entries)
    ids = [task.task_id for task in tasks]
    if len(set(ids)) != len(ids):
        raise InputError("task ids in the task file must be unique; rename the repeated id")
    return tasks


def _task(entry: Mapping[str, Any], kinds: Mapping[str, Any]) -> RemittanceTask:
    task_id = entry.get("id")
    if not isinstance(task_id, str) or not task_id.strip():
        # An int id was turned into a string: the task ran under a name nobody wrote.
        raise InputError(
            f"task {task_id!r}: id must be a non-empty string naming the task, like "
            f'id = "denial-03"' + (f'; write id = "{task_id}"' if isinstance(task_id, int) else "")
        )
    kind = entry.get("kind")
    if kind not in KINDS or kind not in kinds:
        raise InputError(
            f"task {task_id!r}: kind must be one of {KINDS} and have a "
            f"[kinds.{kind}] table, got {kind!r}"
        )
    known = {"id", "kind", "title", "payer", "lines", "size", "seed"}
    params = {k: v for k, v in entry.items() if k not in known}
    lines = tuple(entry.get("lines", ()))
    _check_task(task_id, kind, entry.get("payer"), lines, params)
    size = entry.get("size", _DEFAULT_SIZE)
    check_size(size, f"task {task_id!r} ({kind}): size")
    seed = entry.get("seed", zlib.crc32(task_id.encode()) % 10_000)
    if type(seed) is not int:  # TOML ints fit in 64 bits; a string or float is a mistake
        raise InputError(
            f"task {task_id!r} ({kind}): seed must be an integer (the background data's "
            f"seed), got {seed!r}; leave it out to derive one from the id"
        )
    return RemittanceTask(
        task_id=task_id,
        kind=kind,
        title=str(entry.get("title", task_id)),
        payer_id=str(entry["payer"]),
        lines=lines,
        params=params,
        size=size,
        seed=seed,
        allowed_tables=tuple(kinds[kind]["allowed_tables"]),
        focus=tuple(kinds[kind]["focus"]),
    )


def check_size(size: Any, where: str) -> None:
    """Refuse a background size that is not a whole number of rows in 1..``MAX_SIZE``: a
    huge one (``1e11``) ran for hours building the snapshot before any episode."""
    if type(size) is not int or not 1 <= size <= MAX_SIZE:
        raise InputError(
            f"{where} must be a whole number of background rows from 1 to {MAX_SIZE:,}, "
            f"got {size!r} (the tasks use a few hundred to a few thousand; the generator "
            "is built for up to 100k)"
        )


def _check_task(
    task_id: str, kind: str, payer: Any, lines: tuple[Any, ...], params: Mapping[str, Any]
) -> None:
    """Refuse a task whose expectation would be wrong or impossible: an unknown payer or
    procedure, a line field the kind's builder ignores (a typo, or ``underpaid_by`` on a
    kind that expects no underpayment case), a negative amount, a missing parameter, a
    redirect whose lines repeat a procedure (which corrected line takes which payment
    would be a guess), an ``over_threshold`` task no line of which can pay above the
    threshold (it would test nothing: the right action would be to post everything)."""

    def bad(problem: str) -> InputError:
        return InputError(f"task {task_id!r} ({kind}): {problem}")

    if payer not in PAYER_IDS:
        raise bad(f"payer must be one of {PAYER_IDS}, got {payer!r}")
    need, may = _PARAMS.get(kind, set()), _OPTIONAL_PARAMS.get(kind, set())
    unknown = sorted(set(params) - need - may)
    if unknown or need - set(params):
        raise bad(
            f"needs parameters {sorted(need) or 'none'} (optional "
            f"{sorted(may) or 'none'}), got {sorted(params)}"
        )
    for name in ("deadline_in_days", "paid"):
        if name in params:
            _count(bad, name, params[name], least=1)
    if not lines:
        raise bad("lines is empty; give at least one service line")
    _check_lines(bad, lines, _LINE_FIELDS[kind], denial=kind == "denial")
    codes = [line.get("code") for line in lines]
    if kind == "hidden_redirect" and len(set(codes)) != len(codes):
        twice = sorted({str(c) for c in codes if codes.count(c) > 1})
        raise bad(
            f"lines repeat code(s) {twice}: the corrected claim then has two lines of one "
            "procedure and either could take either payment, so the expectation would be a "
            "guess; give each line its own code"
        )
    if kind == "over_threshold":
        _check_some_line_over(bad, lines)
    if kind == "underpayment" and any(line.get("underpaid_by", 0) < 1 for line in lines):
        raise bad("every underpayment line needs underpaid_by (cents below contract) of at least 1")
    if "offset" in params:
        if not isinstance(params["offset"], list):
            raise bad("offset must be a list of service lines")
        _check_lines(bad, tuple(params["offset"]), {"patient_resp"}, denial=False)


def _check_some_line_over(bad: Any, lines: tuple[Any, ...]) -> None:
    """At least one line of an ``over_threshold`` task must be able to pay above the
    approval threshold. A line's payment is its ``paid`` or, without one, its contracted
    amount less the patient's share, which is below the code's billed amount; whether
    the contract itself clears the threshold is checked when the scenario is built."""
    most = [
        line["paid"]
        if "paid" in line
        else PROCEDURES[str(line["code"])] - int(line.get("patient_resp", 0))
        for line in lines
    ]
    if max(most) <= APPROVAL_THRESHOLD_CENTS:
        raise bad(
            f"no line pays above the approval threshold {APPROVAL_THRESHOLD_CENTS} cents "
            f"(at most {max(most)}), so there is nothing to approve and the task tests "
            "nothing; give a line a paid above the threshold, or use kind 'full_payment' "
            "or 'partial_contractual'"
        )


def _check_lines(bad: Any, lines: tuple[Any, ...], fields: set[str], *, denial: bool) -> None:
    for index, line in enumerate(lines):
        where = f"line {index + 1}"
        if not isinstance(line, Mapping):
            raise bad(f'{where} must be a table like {{ code = "99213" }}, got {line!r}')
        extra = sorted(set(line) - fields - {"code"})
        if extra:
            raise bad(
                f"{where}: unknown field(s) {extra}; this kind reads {sorted(fields | {'code'})}"
            )
        if line.get("code") not in PROCEDURES:
            raise bad(
                f"{where}: code must be one of {sorted(PROCEDURES)}, got {line.get('code')!r}"
            )
        for name in ("patient_resp", "paid", "underpaid_by"):
            if name in line:
                _count(bad, f"{where}: {name}", line[name], least=0)
        if denial:
            code = line.get("denial")
            if not isinstance(code, str) or not _CARC.fullmatch(code) or code == "45":
                raise bad(
                    f"{where}: denial must be the CARC reason code of the denial "
                    f'(e.g. "50"; 45 is a contractual write-down, not a denial), got {code!r}'
                )


def _count(bad: Any, name: str, value: Any, *, least: int) -> None:
    if type(value) is not int or value < least:
        raise bad(f"{name} must be an integer of at least {least}, got {value!r}")
