"""Run configuration: a TOML file can hold everything the ``onrecord run`` flags hold.

Flags given on the command line override the file. Unknown keys and wrong types are
errors that name the key, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import codecs
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import orjson

from onrecord._close_names import closest
from onrecord.case import EvalCase
from onrecord.errors import InputError, OnrecordError
from onrecord.policy import AcceptancePolicy
from onrecord.runner._protocol import MAX_EPISODES, MAX_SEED
from onrecord.runner._timeout import check_timeout

__all__ = [
    "RunConfig",
    "load_config",
    "load_policy_file",
    "load_tasks",
    "parse_seeds",
    "split_names",
]

_TYPES: dict[str, tuple[type, ...]] = {
    "environment": (str,),
    "agent": (str,),
    "tasks": (list, str),
    "tasks_file": (str,),
    "repeats": (int,),
    "seeds": (list, str, int),
    "max_steps": (int,),
    "checks": (list, str),
    "policy": (str, dict),
    "options": (dict,),
    "environment_config": (dict,),
    "executor": (str,),
    "workers": (int,),
    "address": (str,),
    "out": (str,),
    "episode_timeout": (float, int),
}


@dataclass(frozen=True)
class RunConfig:
    """Settings of ``onrecord run``; None means "not given"."""

    environment: str | None = None
    agent: str | None = None
    tasks: list[str] | None = None
    tasks_file: str | None = None
    repeats: int | None = None
    seeds: list[int] | None = None
    max_steps: int | None = None
    checks: list[str] | None = None
    policy: str | dict[str, Any] | None = None
    options: dict[str, Any] | None = None
    environment_config: dict[str, Any] | None = None
    executor: str | None = None
    workers: int | None = None
    address: str | None = None
    out: str | None = None
    episode_timeout: float | None = None
    """Seconds an episode may take (not part of the protocol: a resume may change it)."""

    def merged(self, overrides: RunConfig) -> RunConfig:
        """This config with every field ``overrides`` sets replaced; the environment
        config is merged key by key (``--env-config size=10`` keeps the file's other
        settings)."""
        changes = {
            f.name: getattr(overrides, f.name)
            for f in fields(self)
            if getattr(overrides, f.name) is not None
        }
        if self.environment_config is not None and overrides.environment_config is not None:
            changes["environment_config"] = {
                **self.environment_config,
                **overrides.environment_config,
            }
        return replace(self, **changes)

    def acceptance_policy(self) -> AcceptancePolicy | None:
        """The policy the config names (a file) or holds inline, if any."""
        if self.policy is None:
            return None
        if isinstance(self.policy, dict):
            return AcceptancePolicy.from_dict(self.policy, verify_digest=False)
        return load_policy_file(self.policy)

    def cases(self) -> list[EvalCase] | None:
        """Tasks from ``tasks_file``, if set."""
        return None if self.tasks_file is None else load_tasks(self.tasks_file)


def load_policy_file(path: str) -> AcceptancePolicy:
    """``AcceptancePolicy.load``, a missing file named as the ``--policy`` it is (before:
    "no such file: nosuch.toml", naming no option)."""
    try:
        return AcceptancePolicy.load(path)
    except FileNotFoundError:
        raise InputError(
            f"--policy {path}: no such file; give the path of an acceptance policy file "
            "(TOML with [[requirements]] tables, or JSON saved by onrecord)"
        ) from None


def parse_seeds(value: Any, where: str = "seeds") -> list[int]:
    """``[0, 1, 2]``, ``3`` or the text ``"0,1,2"`` / ``"0-9"`` → a list of seeds (each
    a plain decimal number from 0 to 2**64 - 1; a range is low-high with low <= high)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [_seed(value, where)]
    if isinstance(value, list):
        if not value:
            raise InputError(f"{where} is empty; list at least one seed (or leave it out for 0)")
        if not all(type(item) is int for item in value):
            raise InputError(f"{where} must list non-negative integers, got {value!r}")
        return [_seed(item, where) for item in value]
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{where} is empty; write seeds as 0,1,2 or 0-9 (or leave it out for 0)")
    seeds: list[int] = []
    for part in value.split(","):
        match = _SEED_TEXT.fullmatch(part)
        if match is None:
            raise InputError(
                f"{where}: {part.strip()!r} is not a seed or a range like 0-9; write seeds "
                "as non-negative whole numbers: 0,1,2 or 0-9"
            )
        low = _seed_text(match["low"], where)
        high = low if match["high"] is None else _seed_text(match["high"], where)
        if high < low:
            raise InputError(
                f"{where}: the range {part.strip()!r} runs backwards; write it low-high, "
                f"e.g. {high}-{low}"
            )
        if len(seeds) + high - low + 1 > MAX_EPISODES:
            raise InputError(
                f"{where}: {value.strip()!r} holds more than {MAX_EPISODES:,} seeds, more "
                "than a run may hold; split the seeds over several runs"
            )
        seeds += range(low, high + 1)
    return seeds


_SEED_TEXT = re.compile(r"\s*(?P<low>[0-9]+)\s*(?:-\s*(?P<high>[0-9]+)\s*)?", re.ASCII)


def _seed(value: int, where: str, text: str | None = None) -> int:
    if not 0 <= value <= MAX_SEED:
        raise InputError(
            f"{where}: {text or value} is not a seed; seeds are whole numbers from 0 to 2**64 - 1"
        )
    return value


def _seed_text(digits: str, where: str) -> int:
    # int() refuses more than 4300 digits with its own error; no seed has over 20.
    if len(digits.lstrip("0")) > 20:
        return _seed(MAX_SEED + 1, where, f"{digits[:24]}...")
    return _seed(int(digits), where)


def load_config(path: str | Path) -> RunConfig:
    """Read a TOML run config; relative file paths in it are relative to the file."""
    source = Path(path)
    try:
        data = tomllib.loads(_read_text(source, "config"))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source} is not valid TOML: {exc}") from exc
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        raise InputError(
            f"{source}: unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(_TYPES))}"
        )
    for key, value in data.items():
        if not isinstance(value, _TYPES[key]) or isinstance(value, bool):
            expected = _EXPECTED.get(key) or " or ".join(_TYPE_NAMES[t] for t in _TYPES[key])
            raise InputError(f"{source}: {key} must be {expected}, got {value!r}")
    for key in ("tasks", "checks"):
        if isinstance(data.get(key), list) and not all(isinstance(i, str) for i in data[key]):
            raise InputError(f"{source}: {key} must list strings, got {data[key]!r}")
    return _normalized(data, source)


def _read_text(source: Path, what: str) -> str:
    """The file as UTF-8 text (TOML and JSONL files are UTF-8 whatever the locale). A
    leading byte order mark, which Windows editors and PowerShell write, is dropped: it
    made a valid file "not valid TOML: Invalid statement (at line 1, column 1)"."""
    try:
        data = source.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the {what} {source}: {exc.strerror}") from exc
    bom = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return data[bom:].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{source} is not UTF-8 text (byte {bom + exc.start} is "
            f"0x{exc.object[exc.start]:02x}); save the {what} as UTF-8"
        ) from exc


def split_names(value: str | list[str], where: str) -> list[str]:
    """``"a, b"`` or ``["a", "b"]`` → ``["a", "b"]``; refuses a list that names nothing
    (``--tasks ,`` must not silently mean "every task")."""
    items = value.split(",") if isinstance(value, str) else value
    names = [item.strip() for item in items if item.strip()]
    if not names:
        raise InputError(
            f"{where} names nothing, got {value!r}; list names separated by commas, or "
            "leave it out for the default"
        )
    return names


_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "a table"}
_EXPECTED = {"episode_timeout": "a number of seconds (e.g. 300 or 2.5; leave it out for no limit)"}


def _normalized(data: dict[str, Any], source: Path) -> RunConfig:
    values, base = dict(data), source.parent
    for key in ("tasks", "checks"):
        if key in values:
            values[key] = split_names(values[key], f"{source}: {key}")
    if "seeds" in values:
        values["seeds"] = parse_seeds(values["seeds"], f"{source}: seeds")
    if "episode_timeout" in values:
        values["episode_timeout"] = check_timeout(
            values["episode_timeout"], f"{source}: episode_timeout"
        )
    for key in ("tasks_file", "out", "policy"):
        if isinstance(values.get(key), str):
            if not values[key].strip():
                raise InputError(f"{source}: {key} is empty; give a path or leave it out")
            values[key] = str(base / values[key])
    return RunConfig(**values)


def load_tasks(path: str | Path) -> list[EvalCase]:
    """Tasks from a TOML file of ``[[tasks]]`` tables or a JSONL file of case objects;
    each needs ``case_id`` and ``input``."""
    source = Path(path)
    text = _read_text(source, "tasks file")
    items = _toml_tasks(source, text) if source.suffix == ".toml" else _jsonl_tasks(source, text)
    cases: list[EvalCase] = []
    first: dict[str, int] = {}  # case id -> number of the task that has it
    for number, item in enumerate(items, start=1):
        case = _task_case(source, number, item)
        if (seen := first.setdefault(case.identity["case_id"], number)) != number:
            # Planning refused it too, but naming neither the file nor the tasks.
            raise InputError(
                f"{source}: task {number} has the case_id {item['case_id']!r} of task "
                f"{seen}; give every task its own case_id"
            )
        cases.append(case)
    if not cases:
        raise InputError(f"{source} holds no tasks")
    return cases


_TASK_KEYS = ("case_id", "input", "expected_output", "metadata", "completion", "source_id")
_DERIVED = "content_digest"
"""Written by ``EvalCase.to_dict()``, so a file of saved cases loads; recomputed."""


def _task_case(source: Path, number: int, item: Any) -> EvalCase:
    """One task of the file as an EvalCase, its faults named by file and number."""
    if not isinstance(item, Mapping) or "case_id" not in item or "input" not in item:
        raise InputError(f"{source}: task {number} needs at least 'case_id' and 'input'")
    unknown = [key for key in item if key not in _TASK_KEYS and key != _DERIVED]
    if unknown:
        # A misspelt key (expected_ouput) was dropped: the task ran without it.
        close = closest(unknown[0], _TASK_KEYS)
        raise InputError(
            f"{source}: task {number} ({item['case_id']!r}) has the unknown key "
            f"{unknown[0]!r}"
            + (f" (did you mean {close!r}?)" if close else "")
            + f"; a task's keys are {', '.join(_TASK_KEYS)}"
        )
    try:
        return EvalCase(
            item["input"],
            item.get("expected_output"),
            case_id=item["case_id"],
            source_id=item.get("source_id"),
            metadata=item.get("metadata"),
            completion=item.get("completion", "terminated"),
        )
    except OnrecordError as exc:  # say which task of which file is at fault
        raise InputError(f"{source}: task {number} ({item['case_id']!r}): {exc}") from exc


def _toml_tasks(source: Path, text: str) -> list[Any]:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source} is not valid TOML: {exc}") from exc
    if "tasks" not in document and "task" in document:
        # The remittance domain's own task files use [[task]]: a file of that form
        # read as "holds no tasks", with no word on the one-letter difference.
        raise InputError(
            f"{source} has [[task]] tables; a --tasks-file holds [[tasks]] tables (plural). "
            "A remittance task file ([[task]]) is given as the environment's tasks_file: "
            "--env-config tasks_file=PATH"
        )
    tasks = document.get("tasks", [])
    if not isinstance(tasks, list):
        raise InputError(f"{source}: 'tasks' must be an array of tables ([[tasks]])")
    return tasks


def _jsonl_tasks(source: Path, text: str) -> list[Any]:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                items.append(orjson.loads(line))
            except orjson.JSONDecodeError as exc:
                raise InputError(f"{source}: line {number} is not JSON: {exc}") from exc
    return items
