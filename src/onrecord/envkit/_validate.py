"""Argument schemas compiled once per tool into closures.

:func:`onrecord.envkit.tools.validate` walks the schema dict on every call and formats a
path string for every field it visits; on a tool call that is most of the kit's own
cost. A compiled check runs the same checks in the same order and returns the same
sentences (``tests/envkit/test_validate.py`` compares the two), but looks no schema
key up at call time and skips the checks a schema does not ask for.

Compiling also checks the schema itself: a misspelt or mistyped constraint would
otherwise be ignored (or fail at an agent's first call), so it is refused here, when
the tool is declared, with an :class:`~onrecord.errors.InputError` naming it.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from onrecord._portable import key_path
from onrecord.errors import InputError

__all__ = [
    "INT_RANGE",
    "JSON_TYPES",
    "Check",
    "compile_pattern",
    "compile_schema",
    "is_type",
    "names",
    "show",
    "type_problem",
]

JSON_TYPES = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "true or false",
    "null": "null",
    "array": "a list",
    "object": "an object",
}
INT_RANGE = (-(2**63), 2**63 - 1)
"""Integers SQLite stores: a larger one would fail inside the tool (OverflowError), so
it is refused with the arguments, as the agent's mistake."""
_LOW, _HIGH = INT_RANGE
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
_COUNTS = ("minLength", "maxLength", "minItems", "maxItems")
_KEYWORDS = frozenset(
    {
        *_BOUNDS,
        *_COUNTS,
        "type",
        "enum",
        "anyOf",
        "pattern",
        "items",
        "properties",
        "required",
        "additionalProperties",
        "default",
        "description",
        "title",
    }
)

Check = Callable[[Any, str], str | None]
"""``check(value, path)``: the first violation as a sentence, or ``None``."""


def compile_schema(schema: Mapping[str, Any], where: str = "parameters") -> Check:
    """The check ``validate(schema, value, path)`` performs, prepared once; refuses a
    schema it cannot enforce with an ``InputError`` naming the keyword at ``where``."""
    _check_keywords(schema, where)
    if "anyOf" in schema:
        return _any_of(schema, where)
    parts = [
        part
        for part in (
            _enum(schema),
            _type(schema),
            _number(schema),
            _string(schema),
            _array(schema, where),
            _object(schema, where),
        )
        if part is not None
    ]

    def check(value: Any, path: str) -> str | None:
        for part in parts:
            if (problem := part(value, path)) is not None:
                return problem
        return None

    return parts[0] if len(parts) == 1 else check


# ECMA-262 (what JSON Schema's ``pattern`` is written in) reads \d, \w and \b as ASCII
# but \s as Unicode white space; Python's re.ASCII would narrow all four, so the ASCII
# ones are spelled out instead. Inside a character class only the positive forms can be.
_ASCII_WORD = "A-Za-z0-9_"
_OUTSIDE_CLASS = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": f"[{_ASCII_WORD}]",
    "W": f"[^{_ASCII_WORD}]",
    "b": f"(?:(?<=[{_ASCII_WORD}])(?![{_ASCII_WORD}])|(?<![{_ASCII_WORD}])(?=[{_ASCII_WORD}]))",
    "B": f"(?:(?<=[{_ASCII_WORD}])(?=[{_ASCII_WORD}])|(?<![{_ASCII_WORD}])(?![{_ASCII_WORD}]))",
    "s": "[\\s\ufeff]",  # ECMA-262 counts the byte-order mark as white space
    "S": "[^\\s\ufeff]",
}
_INSIDE_CLASS = {"d": "0-9", "w": _ASCII_WORD, "s": "\\s\ufeff"}


@functools.lru_cache(maxsize=256)
def compile_pattern(pattern: str) -> re.Pattern[str]:
    """A JSON-schema ``pattern`` (ECMA-262) as a Python regex: ``$`` matches only at the
    very end (Python's also matches before a final newline, so ``"45\\n"`` would pass
    ``^[0-9]+$``), ``\\d``, ``\\w``, ``\\b`` are ASCII (Python's take any script's
    digits and letters) and ``\\s`` stays Unicode white space, as in ECMA-262."""
    out, in_class, index = [], False, 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            escape = pattern[index + 1 : index + 2]
            table = _INSIDE_CLASS if in_class else _OUTSIDE_CLASS
            out.append(table.get(escape, pattern[index : index + 2]))
            index += 2
            continue
        if in_class:
            in_class = char != "]"
        elif char == "[":
            in_class = True
        elif char == "$":
            char = r"\Z"
        out.append(char)
        index += 1
    return re.compile("".join(out))


def is_type(value: Any, kind: str) -> bool:
    """Whether ``value`` has the JSON type ``kind`` (booleans are not numbers; integers
    beyond SQLite's 64-bit range are not integers or numbers)."""
    if kind == "integer":
        return type(value) is int and _LOW <= value <= _HIGH
    if kind == "number":
        return type(value) is float or (type(value) is int and _LOW <= value <= _HIGH)
    return isinstance(
        value,
        {"string": str, "boolean": bool, "null": type(None), "array": list, "object": dict}[kind],
    )


def type_problem(value: Any, kind: str, path: str) -> str | None:
    """Why ``value`` is not of JSON type ``kind``, or ``None``."""
    if is_type(value, kind):
        return None
    if kind in ("integer", "number") and type(value) is int:
        return _range_problem(value, path)
    return f"{path} must be {JSON_TYPES[kind]}, got {show(value)}"


def _range_problem(value: int, path: str) -> str:
    return f"{path} is {value}, outside the 64-bit integer range SQLite stores ({_LOW} to {_HIGH})"


def names(fields: list[str]) -> str:
    """``field 'a'`` / ``fields 'a', 'b'``."""
    return ("field " if len(fields) == 1 else "fields ") + ", ".join(map(repr, fields))


def show(value: Any) -> str:
    """A value for a message, cut at 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _cut(key: str) -> str:
    """A key as a message's path names it: an agent's key of a million characters
    would otherwise be quoted whole in the rejection (it is logged whole already)."""
    return key if len(key) <= 60 else key[:57] + "..."


def _check_keywords(schema: Any, where: str) -> None:
    """Refuse what the checks below would ignore or trip over at call time."""
    if not isinstance(schema, Mapping):
        raise InputError(f"{where} must be a JSON schema object (a dict), got {show(schema)}")
    unknown = sorted(map(str, set(schema) - _KEYWORDS))
    if unknown:
        raise InputError(
            f"{where} has the unknown schema keyword {unknown[0]!r}, which would be ignored; "
            f"use one of {', '.join(sorted(_KEYWORDS))}"
        )
    if "type" in schema and schema["type"] not in JSON_TYPES:
        raise InputError(f"{where}.type must be one of {', '.join(JSON_TYPES)}")
    for key in _BOUNDS:
        bound: Any = schema.get(key)
        if key in schema and (type(bound) not in (int, float) or not math.isfinite(bound)):
            raise InputError(f"{where}.{key} must be a finite number, got {show(bound)}")
    for key in _COUNTS:
        count = schema.get(key)
        if key in schema and (type(count) is not int or count < 0):
            raise InputError(f"{where}.{key} must be a whole number >= 0, got {show(count)}")
    if "pattern" in schema:
        try:
            compile_pattern(schema["pattern"])
        except (TypeError, re.error) as exc:
            raise InputError(
                f"{where}.pattern {show(schema['pattern'])} is not a valid regular "
                f"expression ({exc}); fix it or remove it"
            ) from exc
    _check_containers(schema, where)


def _check_containers(schema: Mapping[str, Any], where: str) -> None:
    shapes = {
        "enum": (list, tuple),
        "anyOf": (list, tuple),
        "required": (list, tuple),
        "items": (Mapping,),
        "properties": (Mapping,),
        "additionalProperties": (bool, Mapping),
    }
    for key, kinds in shapes.items():
        if key in schema and not isinstance(schema[key], kinds):
            raise InputError(
                f"{where}.{key} must be a {' or '.join(k.__name__ for k in kinds)}, "
                f"got {show(schema[key])}"
            )
    if not all(isinstance(name, str) for name in schema.get("required", ())):
        raise InputError(f"{where}.required must list field names (strings)")
    for name, sub in schema.get("properties", {}).items():
        if not isinstance(sub, bool | Mapping):
            raise InputError(
                f"{key_path(where + '.properties', name)} must be a schema (a dict) or true/false, "
                f"got {show(sub)}"
            )


def _any_of(schema: Mapping[str, Any], where: str) -> Check:
    options = [
        compile_schema(option, f"{where}.anyOf[{index}]")
        for index, option in enumerate(schema["anyOf"])
    ]

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
    wrong = JSON_TYPES[kind]

    def integer(value: Any, path: str) -> str | None:
        if type(value) is int:
            return None if _LOW <= value <= _HIGH else _range_problem(value, path)
        return f"{path} must be {wrong}, got {show(value)}"

    def number(value: Any, path: str) -> str | None:
        if type(value) is float:
            return None
        return integer(value, path)

    def other(value: Any, path: str) -> str | None:
        return None if is_type(value, kind) else f"{path} must be {wrong}, got {show(value)}"

    if kind == "integer":
        return integer
    return number if kind == "number" else other


def _number(schema: Mapping[str, Any]) -> Check | None:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if low is None and high is None and above is None and below is None:
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
        if below is not None and value >= below:
            return f"{path} must be less than {below}, got {value!r}"
        return None

    return check


def _string(schema: Mapping[str, Any]) -> Check | None:
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    pattern = compile_pattern(schema["pattern"]) if "pattern" in schema else None
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
            return f"{path} must match the pattern {schema['pattern']!r}, got {show(value)}"
        return None

    return check


def _array(schema: Mapping[str, Any], where: str) -> Check | None:
    fewest, most = schema.get("minItems", 0), schema.get("maxItems")
    items = (
        compile_schema(schema["items"], f"{where}.items")
        if schema.get("items") is not None
        else None
    )
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


def _object(schema: Mapping[str, Any], where: str) -> Check | None:
    if not {"properties", "required", "additionalProperties"} & set(schema):
        return None  # every field of any dict passes
    properties = {
        name: compile_schema(sub, key_path(f"{where}.properties", name))
        if isinstance(sub, Mapping)
        else sub
        for name, sub in schema.get("properties", {}).items()
    }
    allowed = ", ".join(sorted(properties)) or "none"
    required = list(schema.get("required", ()))
    extra = schema.get("additionalProperties", True)
    other = (
        compile_schema(extra, f"{where}.additionalProperties")
        if isinstance(extra, Mapping)
        else extra
    )

    def check(value: Any, path: str) -> str | None:
        if not isinstance(value, dict):
            return None
        missing = [name for name in required if name not in value]
        if missing:
            return f"{path} is missing the required {names(missing)}"
        for key, item in value.items():
            sub = properties.get(key, other)
            if sub is False:
                return f"{path} has the unknown field {show(key)}; allowed: {allowed}"
            if callable(sub) and (problem := sub(item, key_path(path, _cut(key)))):
                return problem
        return None

    return check
