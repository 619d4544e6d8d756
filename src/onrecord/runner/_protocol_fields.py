"""The fields of a saved run protocol (``run.json``'s ``protocol``) and of ``run.json``
itself, checked as they are read.

``run.json`` is sealed by its digest, but anyone can re-seal it. A field of another
type then failed wherever it was first used: ``check_versions: "x"`` as a ValueError
building the protocol, an ``environment.target`` that is no string as an
AttributeError in ``verify``, ``compare`` or ``show``, which said only "malformed
record". Each is refused here, on opening the run, naming the field
(``protocol.check_versions``); ``RunStore.open`` adds the file and the fix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from onrecord.case import EvalCase
from onrecord.errors import OnrecordError, SchemaError

__all__ = ["check_manifest", "checked_protocol", "protocol_field", "shortened"]

_REQUIRED = (
    "environment",
    "agent",
    "checks",
    "check_versions",
    "tasks",
    "repeats",
    "seeds",
    "max_steps",
    "policy",
)
"""What ``RunProtocol.to_dict`` writes, ``options`` aside (read as null when absent)."""
_KINDS = ("provider", "env", "gym")
_POST_INIT_FIELDS = frozenset({"repeats", "seeds", "max_steps", "options"})
"""The fields ``RunProtocol.__post_init__`` names first in its refusals."""


def check_manifest(manifest: Mapping[str, Any]) -> None:
    """``run.json``'s own fields beside the protocol: the run id every record must
    carry and the library version a resume compares (SchemaError naming the field)."""
    run_id = manifest.get("run_id")
    if type(run_id) is not str or not run_id:
        raise SchemaError(f"run_id must be a non-empty string, got {shortened(run_id)}")
    library = manifest.get("library")
    if type(library) is not dict or type(library.get("version")) is not str:
        raise SchemaError(
            "library must be an object holding the onrecord version that started the "
            f"run, such as {{'name': 'onrecord', 'version': '0.1.0'}}, got {shortened(library)}"
        )
    if "protocol" not in manifest:
        raise SchemaError("the field 'protocol' is missing")


def checked_protocol(data: Any) -> dict[str, Any]:
    """``data`` as ``RunProtocol.from_dict`` reads it: every field of the type it is
    written with, each task a case whose content digest matches. The cases are given
    as ``EvalCase.to_dict()`` again, ``environment.config`` as an object (null or
    absent in older runs reads as none). SchemaError names the field at fault."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"protocol must be an object, got {shortened(data)}")
    missing = [name for name in _REQUIRED if name not in data]
    if missing:
        raise SchemaError(f"protocol lacks the field(s) {', '.join(map(repr, missing))}")
    environment = _environment(data["environment"])
    if type(data["agent"]) is not str or not data["agent"]:
        raise SchemaError(
            "protocol.agent must be the agent's name or 'module:callable', "
            f"got {shortened(data['agent'])}"
        )
    checks = data["checks"]
    if type(checks) is not list or not all(type(name) is str and name for name in checks):
        raise SchemaError(
            "protocol.checks must be a list of check specs such as ['default'], "
            f"got {shortened(checks)}"
        )
    _check_versions(data["check_versions"])
    if type(data["seeds"]) is not list:
        raise SchemaError(
            "protocol.seeds must be a list of integers such as [0, 1], "
            f"got {shortened(data['seeds'])}"
        )
    if type(data["policy"]) is not dict:
        raise SchemaError(
            "protocol.policy must be an object (the acceptance policy the run is "
            f"decided by), got {shortened(data['policy'])}"
        )
    return {**data, "environment": environment, "tasks": _tasks(data["tasks"])}


def protocol_field(message: str) -> str:
    """A refusal of ``RunProtocol.__post_init__`` worded as a field of a saved protocol:
    ``repeats must be ...`` reads ``protocol.repeats must be ...``."""
    first = message.split(" ", 1)[0]
    return f"protocol.{message}" if first in _POST_INIT_FIELDS else f"protocol: {message}"


def _environment(environment: Any) -> dict[str, Any]:
    if type(environment) is not dict:
        raise SchemaError(
            "protocol.environment must be an object with name, kind, target and config, "
            f"got {shortened(environment)}"
        )
    for name in ("name", "kind", "target"):
        value = environment.get(name)
        if type(value) is not str or not value:
            raise SchemaError(
                f"protocol.environment.{name} must be a non-empty string, got {shortened(value)}"
            )
    if environment["kind"] not in _KINDS:
        raise SchemaError(
            f"protocol.environment.kind must be one of {', '.join(_KINDS)}, "
            f"got {shortened(environment['kind'])}"
        )
    config = environment.get("config")
    if config is not None and type(config) is not dict:
        raise SchemaError(
            "protocol.environment.config must be an object (the environment's settings), "
            f"got {shortened(config)}"
        )
    return {**environment, "config": config or {}}


def _check_versions(versions: Any) -> None:
    if type(versions) is not dict:
        raise SchemaError(
            "protocol.check_versions must be an object mapping each check's name to its "
            f"version, such as {{'posted_once': 'v1'}}, got {shortened(versions)}"
        )
    for name, version in versions.items():
        if type(version) is not str:
            raise SchemaError(
                f"protocol.check_versions[{name!r}] must be the check's version label "
                f"(a string such as 'v1'), got {shortened(version)}"
            )


def _tasks(tasks: Any) -> list[dict[str, Any]]:
    if type(tasks) is not list or not tasks:
        raise SchemaError(
            f"protocol.tasks must be a non-empty list of cases, got {shortened(tasks)}"
        )
    cases = []
    for index, task in enumerate(tasks):
        if type(task) is not dict:
            raise SchemaError(
                f"protocol.tasks[{index}] must be a case object, got {shortened(task)}"
            )
        try:
            cases.append(EvalCase.from_dict(task).to_dict())
        except (OnrecordError, KeyError, TypeError, ValueError) as exc:
            raise SchemaError(f"protocol.tasks[{index}]: {exc}") from exc
    return cases


def shortened(value: Any, limit: int = 60) -> str:
    """``repr(value)``, cut to ``limit`` characters with ``...`` where it is longer."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
