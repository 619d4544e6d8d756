"""Run configuration: a TOML file can hold everything the ``onrecord run`` flags hold.

Flags given on the command line override the file. Unknown keys and wrong types are
errors that name the key, so a typo never silently falls back to a default.
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

import orjson

from onrecord.case import EvalCase
from onrecord.errors import InputError
from onrecord.policy import AcceptancePolicy

__all__ = ["RunConfig", "load_config", "load_tasks", "parse_seeds"]

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

    def merged(self, overrides: RunConfig) -> RunConfig:
        """This config with every field ``overrides`` sets replaced."""
        changes = {
            f.name: getattr(overrides, f.name)
            for f in fields(self)
            if getattr(overrides, f.name) is not None
        }
        return replace(self, **changes)

    def acceptance_policy(self) -> AcceptancePolicy | None:
        """The policy the config names (a file) or holds inline, if any."""
        if self.policy is None:
            return None
        if isinstance(self.policy, dict):
            return AcceptancePolicy.from_dict(self.policy, verify_digest=False)
        return AcceptancePolicy.load(self.policy)

    def cases(self) -> list[EvalCase] | None:
        """Tasks from ``tasks_file``, if set."""
        return None if self.tasks_file is None else load_tasks(self.tasks_file)


def parse_seeds(value: Any, where: str = "seeds") -> list[int]:
    """``[0, 1, 2]``, ``3`` or the text ``"0,1,2"`` / ``"0-9"`` → a list of seeds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return [value]
    if isinstance(value, list):
        if not all(type(item) is int and item >= 0 for item in value):
            raise InputError(f"{where} must list non-negative integers, got {value!r}")
        return list(value)
    seeds: list[int] = []
    for part in str(value).split(","):
        low, dash, high = part.strip().partition("-")
        try:
            seeds += list(range(int(low), int(high) + 1)) if dash else [int(low)]
        except ValueError as exc:
            raise InputError(
                f"{where}: {part.strip()!r} is not a seed or a range like 0-9; "
                "write seeds as 0,1,2 or 0-9"
            ) from exc
    return seeds


def load_config(path: str | Path) -> RunConfig:
    """Read a TOML run config; relative file paths in it are relative to the file."""
    source = Path(path)
    try:
        data = tomllib.loads(source.read_text())
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source} is not valid TOML: {exc}") from exc
    except OSError as exc:
        raise InputError(f"cannot read the config {source}: {exc.strerror}") from exc
    unknown = sorted(set(data) - set(_TYPES))
    if unknown:
        raise InputError(
            f"{source}: unknown key {unknown[0]!r}; allowed keys: {', '.join(sorted(_TYPES))}"
        )
    for key, value in data.items():
        if not isinstance(value, _TYPES[key]) or isinstance(value, bool):
            expected = " or ".join(_TYPE_NAMES[t] for t in _TYPES[key])
            raise InputError(f"{source}: {key} must be {expected}, got {value!r}")
    return _normalized(data, source.parent)


_TYPE_NAMES = {str: "a string", int: "an integer", list: "a list", dict: "a table"}


def _normalized(data: dict[str, Any], base: Path) -> RunConfig:
    values = dict(data)
    for key in ("tasks", "checks"):
        if isinstance(values.get(key), str):
            values[key] = [item.strip() for item in values[key].split(",") if item.strip()]
    if "seeds" in values:
        values["seeds"] = parse_seeds(values["seeds"])
    for key in ("tasks_file", "out"):
        if key in values:
            values[key] = str(base / values[key])
    if isinstance(values.get("policy"), str):
        values["policy"] = str(base / values["policy"])
    return RunConfig(**values)


def load_tasks(path: str | Path) -> list[EvalCase]:
    """Tasks from a TOML file of ``[[tasks]]`` tables or a JSONL file of case objects;
    each needs ``case_id`` and ``input``."""
    source = Path(path)
    try:
        text = source.read_text()
    except OSError as exc:
        raise InputError(f"cannot read the tasks file {source}: {exc.strerror}") from exc
    items = _toml_tasks(source, text) if source.suffix == ".toml" else _jsonl_tasks(source, text)
    cases = []
    for number, item in enumerate(items, start=1):
        if not isinstance(item, Mapping) or "case_id" not in item or "input" not in item:
            raise InputError(f"{source}: task {number} needs at least 'case_id' and 'input'")
        cases.append(
            EvalCase(
                item["input"],
                item.get("expected_output"),
                case_id=item["case_id"],
                source_id=item.get("source_id"),
                metadata=item.get("metadata"),
                completion=item.get("completion", "terminated"),
            )
        )
    if not cases:
        raise InputError(f"{source} holds no tasks")
    return cases


def _toml_tasks(source: Path, text: str) -> list[Any]:
    try:
        tasks = tomllib.loads(text).get("tasks", [])
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"{source} is not valid TOML: {exc}") from exc
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
