"""``check_environment``: does a tool world keep the promises evaluation relies on?

Like gymnasium's ``check_env``, every finding is a full sentence that says what to fix.
The world is reset before and after, so it is safe to run on a world you then use.
"""

from __future__ import annotations

from typing import Any

from onrecord.envkit.log import EVENT_FIELDS
from onrecord.envkit.tools import Tool
from onrecord.envkit.world import ToolWorld
from onrecord.errors import InputError, OnrecordError

__all__ = ["EnvironmentCheckError", "check_environment", "environment_problems"]

_BOGUS_FIELD = "__onrecord_unknown_argument__"
_WRONG_VALUES: dict[str, Any] = {
    "integer": "not-a-number",
    "number": "not-a-number",
    "string": 12345,
    "boolean": "yes",
    "array": 7,
    "object": 7,
}


class EnvironmentCheckError(OnrecordError):
    """``check_environment`` found problems; ``problems`` lists them."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = tuple(problems)
        lines = "\n".join(f"  - {problem}" for problem in problems)
        super().__init__(f"the environment has {len(problems)} problem(s):\n{lines}")


def check_environment(world: ToolWorld) -> None:
    """Raise :class:`EnvironmentCheckError` listing every problem found."""
    problems = environment_problems(world)
    if problems:
        raise EnvironmentCheckError(problems)


def environment_problems(world: ToolWorld) -> list[str]:
    """Every problem found, as sentences (empty when the world is sound)."""
    if not isinstance(world, ToolWorld):  # else an AttributeError from its first use
        raise InputError(
            "check_environment world must be a ToolWorld (ToolWorld(snapshot, tools)), got "
            f"{type(world).__name__} {world!r:.80}"
        )
    problems = _reset_problems(world)
    first = _exercise(world, problems)
    second = _exercise(world, [])
    if first != second:
        problems.append(
            "Two runs of the same example calls after reset(seed=0) ended in "
            "different states or results; make tools depend only on their "
            "arguments, the database and ctx.rng (not on time or global "
            "randomness)."
        )
    problems += _rejection_problems(world)
    world.reset()
    return problems


def _reset_problems(world: ToolWorld) -> list[str]:
    world.reset(seed=0)
    digest = world.state_digest()
    if digest != world.snapshot.digest:
        return [
            f"Right after reset the state digest is {digest[:12]}…, not the snapshot's "
            f"{world.snapshot.digest[:12]}…; something changes the database during "
            "reset: remove writes done outside tool calls."
        ]
    return []


def _exercise(world: ToolWorld, problems: list[str]) -> tuple[str, list[Any]]:
    """Call every tool with its example; return (end digest, results) for comparison."""
    world.reset(seed=0)
    results = []
    for name in sorted(world.tools):
        spec = world.tools[name]
        if spec.example is None:
            if spec.writes:
                problems.append(
                    f"Write tool {name!r} has no example arguments, so its audit "
                    "could not be verified; declare @tool(writes=True, "
                    "example={...}) with arguments that succeed on the snapshot."
                )
            continue
        before, seq = world.state_digest(), len(world.audit_history())
        event = world.call(name, dict(spec.example))
        results.append([name, event["status"], event["result"]])
        problems += _event_problems(world, spec, event, before, seq)
    problems += _diff_problems(world)
    return world.state_digest(), results


def _event_problems(
    world: ToolWorld, spec: Tool, event: dict[str, Any], before: str, seq: int
) -> list[str]:
    problems = []
    missing = [name for name in EVENT_FIELDS if name not in event]
    if missing:
        problems.append(f"The log event of {spec.name!r} lacks the fields {missing}.")
    error = event["error"] or {}
    if not spec.writes and "read-only tool" in error.get("message", ""):
        problems.append(
            f"Read-only tool {spec.name!r} tried to write ({error['message']}); declare it "
            "with @tool(writes=True) or remove the write."
        )
        return problems
    if error.get("type") == "forbidden_statement":
        problems.append(
            f"Tool {spec.name!r} ran a statement tools may not run "
            f"({error['message']}); remove it from the tool."
        )
        return problems
    if event["status"] != "ok":
        problems.append(
            f"The example call of {spec.name!r} was {event['status']}: "
            f"{event['error']['message']}; give an example that succeeds on the "
            "snapshot."
        )
        return problems
    changed = world.state_digest() != before
    audited = len(world.audit_history()) > seq
    if changed and not audited:
        problems.append(
            f"Tool {spec.name!r} changed the state but the audit history "
            "recorded nothing; write only to tables that existed when the "
            "snapshot was built, through ctx.execute."
        )
    if changed and not spec.writes:
        problems.append(
            f"Read-only tool {spec.name!r} changed the state; declare it with @tool(writes=True)."
        )
    return problems


def _diff_problems(world: ToolWorld) -> list[str]:
    audit, scan = world.diff(), world.scan_diff()
    if audit == scan:
        return []
    tables = sorted(name for name in set(audit) | set(scan) if audit.get(name) != scan.get(name))
    return [
        f"The diff from the audit history and the full-scan diff disagree on tables "
        f"{tables}; a write bypassed the audit triggers (e.g. a table created during "
        "the episode, or PRAGMA recursive_triggers turned off)."
    ]


def _rejection_problems(world: ToolWorld) -> list[str]:
    world.reset(seed=0)
    problems = []
    attempts: list[tuple[str, Any]] = [("__onrecord_no_such_tool__", {})]
    for name in sorted(world.tools):
        attempts.append((name, {_BOGUS_FIELD: 1}))
        attempts += [(name, bad) for bad in _wrong_type_arguments(world.tools[name])]
    for name, arguments in attempts:
        before, seq = world.state_digest(), len(world.audit_history())
        event = world.call(name, arguments)
        if event["status"] != "rejected":
            problems.append(
                f"Calling {name!r} with {arguments!r} was {event['status']}, "
                "not rejected; declare precise type hints so bad arguments are "
                "refused before the tool runs."
            )
        if world.state_digest() != before or len(world.audit_history()) != seq:
            problems.append(
                f"The rejected call of {name!r} with {arguments!r} changed the "
                "state; rejected calls must leave everything unchanged."
            )
    return problems


def _wrong_type_arguments(spec: Tool) -> list[dict[str, Any]]:
    if spec.example is None:
        return []
    out = []
    for name, schema in spec.parameters["properties"].items():
        wrong = _WRONG_VALUES.get(schema.get("type", ""))
        if wrong is not None and name in spec.example:
            out.append({**spec.example, name: wrong})
    return out
