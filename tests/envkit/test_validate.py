"""The compiled argument check must say exactly what ``validate`` says, for any value."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord.domains.remittance._tools import TOOLS
from onrecord.envkit._validate import compile_schema
from onrecord.envkit.tools import validate

from . import claims_env

SYNTHETIC: list[dict[str, Any]] = [
    {"anyOf": [{"type": "integer", "minimum": 2}, {"type": "null"}, {"enum": ["a", 1.0]}]},
    {"type": "array", "items": {"type": "string", "maxLength": 2}, "minItems": 1, "maxItems": 3},
    {"type": "number", "exclusiveMinimum": 0, "maximum": 10},
    {"type": "object", "additionalProperties": {"type": "integer"}},
    {"type": "object", "properties": {"x": False, "y": {"enum": [True]}}, "required": ["y"]},
    {"enum": (1, "1")},
    {"minLength": 2, "pattern": "^[a-c]+$"},
    {},
]
SCHEMAS = [*(dict(t.parameters) for t in (*TOOLS, *claims_env.TOOLS)), *SYNTHETIC]

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 10**12),
    st.sampled_from([0, 1, 2, 200, 201, 10**11, 10**11 + 1, 2**62, 2**62 + 1, 0.0, 1.0]),
    st.sampled_from(["CO", "PR", "XX", "2026-01-31", "2026-1-31", "A1", "a", "", "x" * 65]),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(alphabet="abcRL-0123456789", max_size=8),
)
KEYS = st.sampled_from(
    [
        "x",
        "y",
        "remittance_id",
        "claim_id",
        "amount_cents",
        "limit",
        "rline_id",
        "line_id",
        "group_code",
        "reason_code",
        "reason",
        "message",
        "amount",
        "status",
        "payer_id",
    ]
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=8,
)


@settings(max_examples=400, deadline=None)
@given(st.sampled_from(range(len(SCHEMAS))), VALUES)
def test_compiled_check_says_what_validate_says(index: int, value: Any) -> None:
    schema = SCHEMAS[index]
    assert compile_schema(schema)(value, "arguments") == validate(schema, value, "arguments")


def _near(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values at and next to a field's limits (half the time), or anything."""
    if "anyOf" in schema:
        return st.one_of([_near(option) for option in schema["anyOf"]])
    if "enum" in schema:
        return st.sampled_from(schema["enum"]) | SCALARS
    limits = [schema[key] for key in ("minimum", "maximum", "exclusiveMinimum") if key in schema]
    if schema.get("type") in ("integer", "number"):
        return st.sampled_from([n + d for n in limits or [0] for d in (-1, 0, 1)]) | SCALARS
    if schema.get("type") == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True) | SCALARS
        sizes = [schema.get("minLength", 0), schema.get("maxLength", 3)]
        return st.sampled_from(["x" * (n + d) for n in sizes for d in (-1, 0, 1) if n + d >= 0])
    return SCALARS


def _arguments(spec: Any) -> st.SearchStrategy[dict[str, Any]]:
    """Arguments that mostly get past the "missing field" check, so field rules run."""
    fields = spec.parameters["properties"]
    required = spec.parameters["required"]
    return st.fixed_dictionaries(
        {name: _near(fields[name]) for name in required},
        optional={name: _near(fields[name]) for name in fields if name not in required}
        | {"unknown": SCALARS},
    )


@settings(max_examples=600, deadline=None)
@given(st.sampled_from(TOOLS).flatmap(lambda spec: st.tuples(st.just(spec), _arguments(spec))))
def test_tool_check_arguments_uses_the_same_rules(case: tuple[Any, dict[str, Any]]) -> None:
    spec, arguments = case
    assert spec.check_arguments(arguments) == validate(spec.parameters, arguments, "arguments")
