"""Argument schemas compiled once per tool into closures.

:func:`onrecord.envkit.tools.validate` walks the schema dict on every call and formats a
path string for every field it visits; on a tool call that is most of the kit's own
cost. A compiled check runs the same checks in the same order and returns the same
sentences (``tests/envkit/test_validate.py`` compares the two), but looks no schema
key up at call time and skips the checks a schema does not ask for.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["JSON_TYPES", "Check", "compile_schema", "is_type", "names", "show"]

JSON_TYPES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "null": "null",
    "array": "a list",
    "object": "an object",
}

Check = Callable[[Any, str], str | None]
"""``check(value, path)``: the first violation as a sentence, or ``None``."""


def compile_schema(schema: Mapping[str, Any]) -> Check:
    """The check ``validate(schema, value, path)`` performs, prepared once."""
    if "anyOf" in schema:
        return _any_of(schema)
    parts = [
        part
        for part in (
            _enum(schema),
            _type(schema),
            _number(schema),
            _string(schema),
            _array(schema),
            _object(schema),
        )
        if part is not None
    ]

    def check(value: Any, path: str) -> str | None:
        for part in parts:
            if (problem := part(value, path)) is not None:
                return problem
        return None

    return parts[0] if len(parts) == 1 else check


def is_type(value: Any, kind: str) -> bool:
    """Whether ``value`` has the JSON type ``kind`` (booleans are not numbers)."""
    if kind == "integer":
        return type(value) is int
    if kind == "number":
        return type(value) in (int, float)
    return isinstance(
        value,
        {"string": str, "boolean": bool, "null": type(None), "array": list, "object": dict}[kind],
    )


def names(fields: list[str]) -> str:
    """``field 'a'`` / ``fields 'a', 'b'``."""
    return ("field " if len(fields) == 1 else "fields ") + ", ".join(map(repr, fields))


def show(value: Any) -> str:
    """A value for a message, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _any_of(schema: Mapping[str, Any]) -> Check:
    options = [compile_schema(option) for option in schema["anyOf"]]

    def check(value: Any, path: str) -> str | None:
        if any(option(value, path) is None for option in options):
            return None
        return f"{path} is {show(value)}, which matches none of the allowed forms"

    return check


def _enum(schema: Mapping[str, Any]) -> Check | None:
    if "enum" not in schema:
        return None
    items = schema["enum"]

    def check(value: Any, path: str) -> str | None:
        if any(value == item and type(value) is type(item) for item in items):
            return None
        return f"{path} must be one of {items}, got {show(value)}"

    return check


def _type(schema: Mapping[str, Any]) -> Check | None:
    kind = schema.get("type")
    if kind is None:
        return None
    exact = {"integer": (int,), "number": (int, float)}.get(kind)

    def check(value: Any, path: str) -> str | None:
        ok = type(value) in exact if exact is not None else is_type(value, kind)
        return None if ok else f"{path} must be {JSON_TYPES[kind]}, got {show(value)}"

    return check


def _number(schema: Mapping[str, Any]) -> Check | None:
    low, high = schema.get("minimum"), schema.get("maximum")
    above = schema.get("exclusiveMinimum")
    if low is None and high is None and above is None:
        return None

    def check(value: Any, path: str) -> str | None:
        if type(value) not in (int, float):
            return None
        if low is not None and value < low:
            return f"{path} must be at least {low}, got {value!r}"
        if high is not None and value > high:
            return f"{path} must be at most {high}, got {value!r}"
        if above is not None and value <= above:
            return f"{path} must be greater than {above}, got {value!r}"
        return None

    return check


def _string(schema: Mapping[str, Any]) -> Check | None:
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    pattern = re.compile(schema["pattern"]) if "pattern" in schema else None
    if "minLength" not in schema and longest is None and pattern is None:
        return None

    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, str):
            return None
        if len(value) < shortest:
            return f"{path} must have at least {shortest} characters"
        if longest is not None and len(value) > longest:
            return f"{path} must have at most {longest} characters"
        if pattern is not None and pattern.search(value) is None:
            return f"{path} must match the pattern {pattern.pattern!r}, got {show(value)}"
        return None

    return check


def _array(schema: Mapping[str, Any]) -> Check | None:
    fewest, most = schema.get("minItems", 0), schema.get("maxItems")
    items = compile_schema(schema["items"]) if schema.get("items") is not None else None
    if "minItems" not in schema and most is None and items is None:
        return None

    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, list):
            return None
        if len(value) < fewest:
            return f"{path} must have at least {fewest} items"
        if most is not None and len(value) > most:
            return f"{path} must have at most {most} items"
        if items is not None:
            for index, item in enumerate(value):
                if (problem := items(item, f"{path}[{index}]")) is not None:
                    return problem
        return None

    return check


def _object(schema: Mapping[str, Any]) -> Check | None:
    if not {"properties", "required", "additionalProperties"} & set(schema):
        return None  # every field of any dict passes
    properties = {
        name: compile_schema(sub) if isinstance(sub, Mapping) else sub
        for name, sub in schema.get("properties", {}).items()
    }
    allowed = ", ".join(sorted(properties)) or "none"
    required = list(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    other = compile_schema(extra) if isinstance(extra, Mapping) else extra

    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, dict):
            return None
        missing = [name for name in required if name not in value]
        if missing:
            return f"{path} is missing the required {names(missing)}"
        for key, item in value.items():
            sub = properties.get(key, other)
            if sub is False:
                return f"{path} has the unknown field {key!r}; allowed: {allowed}"
            if callable(sub) and (problem := sub(item, f"{path}.{key}")):
                return problem
        return None

    return check
