"""Mistakes in a tool declaration are the evaluator's to fix: each is an OnrecordError at
declaration that names the tool, the field and the fix, never a constraint silently
ignored or an error at an agent's first call."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Annotated, Any, Literal

import pytest

from onrecord.envkit import Snapshot, Tool, ToolContext, ToolWorld, tool
from onrecord.envkit._validate import compile_schema
from onrecord.envkit.tools import validate
from onrecord.errors import OnrecordError


def _constrained(extra: dict[str, Any]) -> Tool:
    def look(ctx: ToolContext, claim_id: int) -> None:
        """Look."""

    # Set as an object: a string hint could not name the local ``extra``.
    look.__annotations__ = {"claim_id": Annotated[int, extra]}
    declared: Tool = tool(look)
    return declared


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        ({"minimun": 0}, "unknown schema keyword 'minimun'"),
        ({"maxValue": 9}, "unknown schema keyword 'maxValue'"),
        ({"minimum": "0"}, "minimum must be a finite number"),
        ({"maximum": float("nan")}, "maximum must be a finite number"),
        ({"maximum": True}, "maximum must be a finite number"),
        ({"pattern": "("}, "not a valid regular expression"),
        ({"pattern": 5}, "not a valid regular expression"),
        ({"maxLength": "3"}, "maxLength must be a whole number"),
        ({"minItems": -1}, "minItems must be a whole number"),
        ({"type": "int"}, "type must be one of"),
        ({"enum": "ab"}, "enum must be a list"),
    ],
)
def test_a_constraint_that_cannot_be_enforced_is_refused_when_declared(
    extra: dict[str, Any], says: str
) -> None:
    with pytest.raises(OnrecordError, match="tool 'look'") as caught:
        _constrained(extra)
    assert says in str(caught.value)
    assert "properties.claim_id" in str(caught.value)


def test_a_hand_built_tool_schema_is_checked_too() -> None:
    with pytest.raises(OnrecordError, match=r"tool 'raw': parameters\.properties\.a\.type"):
        Tool(
            "raw",
            lambda ctx, a: None,
            False,
            "",
            {"type": "object", "properties": {"a": {"type": "int"}}},
        )
    with pytest.raises(OnrecordError, match="non-empty string"):
        Tool("", lambda ctx: None, False, "", {"type": "object"})


def _sample_hints() -> list[tuple[str, Callable[[], Any], str]]:
    def literal_bytes() -> Any:
        @tool
        def f(ctx: ToolContext, mode: Literal[b"a"]) -> None: ...

    def int_keys() -> Any:
        @tool
        def f(ctx: ToolContext, table: dict[int, str]) -> None: ...

    def mixed_tuple() -> Any:
        @tool
        def f(ctx: ToolContext, pair: tuple[int, str]) -> None: ...

    def none_for_int() -> Any:
        @tool
        def f(ctx: ToolContext, limit: int = None) -> None: ...  # type: ignore[assignment]  # noqa: RUF013

    def date_default() -> Any:
        @tool
        def f(ctx: ToolContext, day: str = datetime.date(2026, 1, 1)) -> None: ...  # type: ignore[assignment]

    def out_of_bounds_default() -> Any:
        @tool
        def f(ctx: ToolContext, limit: Annotated[int, {"minimum": 1}] = 0) -> None: ...

    def list_example() -> Any:
        @tool(example=[1])  # type: ignore[arg-type]
        def f(ctx: ToolContext) -> None: ...

    return [
        ("mode", literal_bytes, "Literal values must be"),
        ("table", int_keys, "use dict[str, T]"),
        ("pair", mixed_tuple, "use list[T]"),
        ("limit", none_for_int, "int | None = None"),
        ("day", date_default, "datetime.date"),
        ("limit", out_of_bounds_default, "must be at least 1"),
        ("example", list_example, "must be a dict of arguments"),
    ]


@pytest.mark.parametrize(("field", "declare", "says"), _sample_hints())
def test_a_hint_or_default_without_a_faithful_schema_is_refused(
    field: str, declare: Callable[[], Any], says: str
) -> None:
    with pytest.raises(OnrecordError) as caught:
        declare()
    assert field in str(caught.value)
    assert says in str(caught.value)


def test_exclusive_maximum_is_enforced(snap: Snapshot) -> None:
    @tool
    def bounded(ctx: ToolContext, n: Annotated[int, {"exclusiveMaximum": 10}]) -> int:
        return n

    schema = {"type": "integer", "exclusiveMaximum": 10}
    assert (
        validate(schema, 10, "n")
        == compile_schema(schema)(10, "n")
        == ("n must be less than 10, got 10")
    )
    with ToolWorld(snap, [bounded]) as world:
        assert world.call("bounded", {"n": 10})["status"] == "rejected"
        assert world.call("bounded", {"n": 9})["result"] == 9


@pytest.mark.parametrize(
    ("pattern", "value", "fits"),
    [
        (r"^[A-Z]+$", "AB\n", False),
        (r"^\d+$", "١٢", False),
        (r"^\w+$", "é", False),
        (r"^[$]+$", "$$", True),
        (r"^a\$$", "a$", True),
        (r"^a$|^b$", "b", True),
        (r"\S", "\u00a0\u2003", False),  # ECMA-262's \s is Unicode white space
        (r"^\s+$", "\u00a0\ufeff", True),
        (r"^[\d-]+$", "12-3", True),
        (r"^[\d]+$", "\u0661", False),  # ASCII digits inside a class too
        (r"\bcat\b", "\u00e9cat", True),  # é is not an ECMA word character
        (r"\bcat\b", "xcat", False),
        (r"^\W+$", "\u00e9", True),
    ],
)
def test_patterns_read_as_json_schema_reads_them(pattern: str, value: str, fits: bool) -> None:
    schema = {"type": "string", "pattern": pattern}
    assert (validate(schema, value, "v") is None) is fits
    assert (compile_schema(schema)(value, "v") is None) is fits


@pytest.mark.parametrize("kind", ["integer", "number"])
@pytest.mark.parametrize("value", [2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64, 1.5, True])
def test_the_integer_range_reads_the_same_compiled_or_not(kind: str, value: Any) -> None:
    schema = {"anyOf": [{"type": kind}, {"type": "null"}]}
    assert compile_schema({"type": kind})(value, "v") == validate({"type": kind}, value, "v")
    assert compile_schema(schema)(value, "v") == validate(schema, value, "v")
    fits = type(value) is not bool and -(2**63) <= value < 2**63
    fits = fits and (kind == "number" or type(value) is int)
    assert (validate({"type": kind}, value, "v") is None) is fits
