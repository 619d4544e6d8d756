from __future__ import annotations

import re
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord.envkit import InjectedFailure, Tool, ToolContext, ToolWorld, tool
from onrecord.envkit.tools import json_schema_for, validate
from onrecord.errors import InputError

from . import claims_env


def _line_of(text: str) -> int:
    """The number of the line of this file that is ``text``."""
    with open(__file__, encoding="utf-8") as source:
        return source.read().splitlines().index(text) + 1


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


def test_schema_is_derived_from_type_hints() -> None:
    @tool(writes=True)
    def sample(
        ctx: ToolContext,
        n: int,
        x: Annotated[float, {"minimum": 0}],
        mode: Literal["a", "b"],
        tags: list[str],
        extra: dict[str, int] | None = None,
        flag: bool = False,
    ) -> None:
        """Do a thing.

        More detail that agents do not need."""

    assert sample.description == "Do a thing."
    assert sample.schema()["parameters"] == {
        "type": "object",
        "additionalProperties": False,
        "required": ["n", "x", "mode", "tags"],
        "properties": {
            "n": {"type": "integer"},
            "x": {"type": "number", "minimum": 0},
            "mode": {"enum": ["a", "b"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "extra": {
                "anyOf": [
                    {"type": "object", "additionalProperties": {"type": "integer"}},
                    {"type": "null"},
                ],
                "default": None,
            },
            "flag": {"type": "boolean", "default": False},
        },
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            {"claim_id": "7", "amount": 1.0},
            "allocate: arguments.claim_id must be an integer, got '7'",
        ),
        (
            {"claim_id": True, "amount": 1.0},
            "allocate: arguments.claim_id must be an integer, got True",
        ),
        ({"claim_id": 1}, "allocate: arguments is missing the required field 'amount'"),
        ({"claim_id": 1, "amount": -1}, "allocate: arguments.amount must be at least 0, got -1"),
        (
            {"claim_id": 1, "amount": 1, "memmo": "x"},
            "allocate: arguments has the unknown field 'memmo'; allowed: amount, claim_id, memo",
        ),
        ([1, 2], "allocate: arguments must be a JSON object of named arguments, got list"),
    ],
)
def test_bad_arguments_are_rejected_with_a_clear_message(
    world: ToolWorld, arguments: Any, message: str
) -> None:
    event = world.call("allocate", arguments)
    assert event["status"] == "rejected"
    assert event["error"] == {"type": "invalid_arguments", "message": message}
    assert world.state_digest() == world.snapshot.digest


def test_unknown_tool_and_rule_violation(world: ToolWorld) -> None:
    event = world.call("refund", {})
    assert event["error"]["type"] == "unknown_tool"
    assert event["error"]["message"].startswith("there is no tool named 'refund'; available")
    event = world.call("allocate", {"claim_id": 999, "amount": 1.0})
    assert event["error"] == {"type": "rule_violation", "message": "claim 999 does not exist"}


def test_a_rejected_call_undoes_what_it_already_wrote(world: ToolWorld) -> None:
    event = world.call("allocate", {"claim_id": 1, "amount": 1e6})
    assert event["status"] == "rejected"
    assert "exceeds the claim amount" in event["error"]["message"]
    assert world.table_rows("allocations") == []
    assert world.audit_history() == []
    assert (world.state_version, event["state_version"]) == (0, 0)


def test_read_only_tools_cannot_write(snap: Any) -> None:
    @tool
    def sneaky(ctx: ToolContext) -> int:
        ctx.execute("DELETE FROM claims")
        return len(ctx.query("SELECT id FROM claims"))

    @tool
    def scratch(ctx: ToolContext) -> None:
        ctx.execute("CREATE TEMP TABLE IF NOT EXISTS notes_copy (x)")
        ctx.execute("INSERT INTO notes_copy VALUES (1)")  # even a temporary table

    with ToolWorld(snap, [sneaky, scratch]) as world:
        for name in ("sneaky", "scratch"):
            event = world.call(name)
            assert event["status"] == "error"
            assert event["result"] is None
            assert event["error"]["type"] == "forbidden_statement"
            assert "read-only tool (writes=False) wrote" in event["error"]["message"]
            assert world.state_digest() == snap.digest
            assert world.audit_history() == []
            assert world.state_version == 0


def test_tool_exceptions_are_recorded_and_rolled_back(snap: Any) -> None:
    @tool(writes=True)
    def broken(ctx: ToolContext) -> None:
        ctx.execute("DELETE FROM claims")
        raise RuntimeError("boom")

    @tool(writes=True)
    def unportable(ctx: ToolContext) -> object:
        ctx.execute("DELETE FROM claims")
        return object()

    with ToolWorld(snap, [broken, unportable]) as world:
        for name in ("broken", "unportable"):
            event = world.call(name)
            assert event["status"] == "error"
            assert event["error"]["type"] == "tool_error"
            assert world.state_digest() == snap.digest
        # Named with the line of the tool that raised it (round 50).
        line = _line_of('        raise RuntimeError("boom")')
        assert world.call("broken")["error"]["message"] == (
            f"broken: RuntimeError: boom (at {__file__}:{line} in broken)"
        )


def test_injected_failure_commits_then_fails(world: ToolWorld) -> None:
    world.inject_failure("allocate")
    event = world.call("allocate", {"claim_id": 1, "amount": 1.0})
    assert event["status"] == "error"
    assert event["error"]["type"] == "injected_failure"
    assert len(world.table_rows("allocations")) == 1  # committed
    assert world.call("allocate", {"claim_id": 1, "amount": 1.0})["status"] == "ok"
    with pytest.raises(InputError, match="needs the name of a write tool"):
        world.inject_failure("get_claim")
    assert issubclass(InjectedFailure, Exception)


def test_tool_declaration_errors() -> None:
    with pytest.raises(InputError, match="needs a type hint"):
        tool(lambda ctx, x: None)
    with pytest.raises(InputError, match="must take the tool context"):
        tool(lambda: None)
    with pytest.raises(InputError, match="example does not fit its schema"):

        @tool(example={"n": "x"})
        def typed(ctx: ToolContext, n: int) -> None: ...

    with pytest.raises(InputError, match="has no JSON schema"):
        json_schema_for(complex)
    with pytest.raises(InputError, match="must be unique"):
        ToolWorld(claims_env.snapshot(), [claims_env.allocate, claims_env.allocate])


def test_validator_covers_schema_keywords() -> None:
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "minLength": 2, "maxLength": 3, "pattern": "^a"},
            "l": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "number"}},
        },
    }
    assert validate(schema, {"s": "ab", "l": [1.5]}, "a") is None
    assert validate(schema, {"s": "b"}, "a") == "a.s must have at least 2 characters"
    assert validate(schema, {"s": "abcd"}, "a") == "a.s must have at most 3 characters"
    assert validate(schema, {"s": "bb"}, "a") == "a.s must match the pattern '^a', got 'bb'"
    assert validate(schema, {"l": []}, "a") == "a.l must have at least 1 items"
    assert validate(schema, {"l": [1, 2, 3]}, "a") == "a.l must have at most 2 items"
    assert validate(schema, {"l": ["x"]}, "a") == "a.l[0] must be a number, got 'x'"


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from([t.name for t in claims_env.TOOLS])
    | st.text(max_size=8)
    | st.integers()
    | st.none(),
    arguments=JSON,
)
def test_random_calls_never_crash_and_rejections_change_nothing(
    world: ToolWorld, name: Any, arguments: Any
) -> None:
    world.reset()
    event = world.call(name, arguments)
    assert event["status"] in ("ok", "rejected", "error")
    if event["status"] != "ok":
        assert world.state_digest() == world.snapshot.digest
        assert world.audit_history() == []
        assert isinstance(event["error"]["message"], str)
        assert event["error"]["message"]


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    payload=st.sampled_from(
        ["1; DROP TABLE claims; --", "' OR '1'='1", "x'); DELETE FROM claims; --", '" OR 1=1 --']
    )
    | st.text(min_size=3).map(lambda t: "'" + t + ";--")
)
def test_arguments_crafted_as_sql_never_reach_sql_text(snap: Any, payload: str) -> None:
    statements: list[str] = []
    with claims_env.world(snap, tracer=lambda sql, params: statements.append(sql)) as world:
        world.call("set_status", {"claim_id": 1, "status": payload})
        world.call("tag_claim", {"claim_id": 2, "tag": payload})
        world.call("allocate", {"claim_id": 3, "amount": 1.0, "memo": payload})
        assert statements
        assert not any(payload in sql for sql in statements)
        assert world.table_rows("claims")[0]["status"] == payload  # stored as data
        assert len(world.table_rows("claims")) == 20


def test_exported_schema_is_plain_json(world: ToolWorld) -> None:
    schemas = world.tool_schemas()
    assert [s["name"] for s in schemas] == sorted(t.name for t in claims_env.TOOLS)
    assert all(isinstance(t, Tool) for t in world.tools.values())
    assert re.fullmatch(r"Allocate an amount to a claim\.", schemas[0]["description"])


def test_context_hint_may_name_a_local_class() -> None:
    class LocalContext(ToolContext):
        pass

    def look(ctx: LocalContext, n: int) -> int:
        return n

    look.__annotations__ = {"ctx": "LocalContext", "n": "int"}  # as under postponed hints
    assert tool(look).parameters["properties"] == {"n": {"type": "integer"}}
    look.__annotations__["n"] = "Missing"
    with pytest.raises(InputError, match="the type hint 'Missing' of 'n' cannot be evaluated"):
        tool(look)
