"""Tools: typed Python functions an agent may call, with an exported JSON schema.

``@tool(writes=True)`` turns ``def allocate(ctx, claim_id: int, amount: float)`` into a
:class:`Tool` whose ``parameters`` JSON schema is derived from the type hints (extra
constraints via ``Annotated[float, {"minimum": 0}]``). Arguments are validated against
that schema before the function runs; a mismatch becomes a rejected action, never a
call with bad data.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

from onrecord._canonical import to_portable
from onrecord._portable import key_path
from onrecord.envkit._hints import unknown_example_arguments
from onrecord.envkit._sync_tools import refuse_async_tool
from onrecord.envkit._validate import (
    Check,
    compile_pattern,
    compile_schema,
    type_problem,
)
from onrecord.envkit._validate import names as _names
from onrecord.envkit._validate import show as _show
from onrecord.errors import InputError

__all__ = ["Tool", "ToolFunction", "json_schema_for", "tool", "validate"]

ToolFunction = Callable[..., Any]


@dataclass(frozen=True)
class Tool:
    """A declared tool: its function, whether it writes, and its argument schema."""

    name: str
    """Name agents call it by."""
    function: ToolFunction = field(repr=False)
    """``function(ctx, **arguments)``; raise :class:`~onrecord.envkit.ToolRejected` to
    refuse a call that breaks a domain rule."""
    writes: bool
    """Whether the tool may change state; read-only tools run with writes forbidden."""
    description: str
    """What the tool does, shown to agents."""
    parameters: Mapping[str, Any]
    """JSON schema of the arguments object."""
    example: Mapping[str, Any] | None = None
    """Valid example arguments, used by ``check_environment`` to exercise the tool."""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise InputError(f"a tool's name must be a non-empty string, got {self.name!r}")
        refuse_async_tool(self.name, self.function)
        try:
            self._check  # noqa: B018 - compile now: a bad schema is the author's to fix
        except InputError as exc:
            raise InputError(f"tool {self.name!r}: {exc}") from None

    def schema(self) -> dict[str, Any]:
        """The export for agents: ``{"name", "description", "parameters"}``."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": to_portable(dict(self.parameters)),
        }

    def check_arguments(self, arguments: Any) -> str | None:
        """``None`` when ``arguments`` fit the schema, else a sentence saying what is wrong."""
        return self._check(arguments, "arguments")

    @cached_property
    def _check(self) -> Check:
        # Compiled on first use: ``validate`` re-reads the schema on every call.
        return compile_schema(self.parameters, "parameters")


@overload
def tool(
    function: ToolFunction,
    *,
    writes: bool = False,
    name: str | None = None,
    description: str | None = None,
    example: Mapping[str, Any] | None = None,
) -> Tool: ...


@overload
def tool(
    function: None = None,
    *,
    writes: bool = False,
    name: str | None = None,
    description: str | None = None,
    example: Mapping[str, Any] | None = None,
) -> Callable[[ToolFunction], Tool]: ...


def tool(
    function: ToolFunction | None = None,
    *,
    writes: bool = False,
    name: str | None = None,
    description: str | None = None,
    example: Mapping[str, Any] | None = None,
) -> Tool | Callable[[ToolFunction], Tool]:
    """Declare a tool. Use as ``@tool(writes=True)`` or bare ``@tool`` (read-only)."""

    if example is not None and not isinstance(example, Mapping):
        raise InputError(f"tool example= must be a dict of arguments, got {example!r}")
    _check_options(function, writes, description)

    def declare(fn: ToolFunction) -> Tool:
        refuse_async_tool(name or fn.__name__, fn)  # before its schema is derived
        doc = inspect.getdoc(fn) or ""
        built = Tool(
            name or fn.__name__,
            fn,
            writes,
            description if description is not None else doc.split("\n\n")[0],
            _parameters(fn),
            dict(example) if example is not None else None,
        )
        if example is not None and (problem := built.check_arguments(dict(example))):
            unknown = unknown_example_arguments(built.name, example, built.parameters)
            fit = f"tool {built.name!r}: example does not fit its schema: {problem}"
            raise InputError(unknown or fit)
        return built

    return declare(function) if function is not None else declare


def _check_options(function: Any, writes: Any, description: Any) -> None:
    """Refuse options that would be taken for something else: ``bool(writes)`` makes
    ``writes="no"`` a write tool, and ``@tool(True)`` passes True as the function."""
    if function is not None and not callable(function):
        raise InputError(
            f"tool's first argument is the tool function, got {function!r:.80}; "
            "for a write tool write @tool(writes=True)"
        )
    if type(writes) is not bool:
        raise InputError(f"tool writes= must be True or False, got {writes!r:.80}")
    if description is not None and not isinstance(description, str):
        raise InputError(
            f"tool description= must be a string, got {type(description).__name__} "
            f"{description!r:.80}"
        )


def _parameters(fn: ToolFunction) -> dict[str, Any]:
    params = list(inspect.signature(fn).parameters.values())
    if not params:
        raise InputError(
            f"tool {fn.__name__!r} must take the tool context as its first "
            "parameter, e.g. def my_tool(ctx, ...)"
        )
    _check_context_parameter(fn, params[0])
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in params[1:]:
        if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
            raise InputError(
                f"tool {fn.__name__!r}: parameter {param.name!r} must be a plain "
                "named parameter (no *args or **kwargs)"
            )
        try:
            properties[param.name] = json_schema_for(_hint(fn, param))
        except InputError as exc:
            if str(exc).startswith("tool "):
                raise
            raise InputError(f"tool {fn.__name__!r}: parameter {param.name!r}: {exc}") from None
        if param.default is param.empty:
            required.append(param.name)
        else:
            properties[param.name]["default"] = _default(fn, param, properties[param.name])
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def _default(fn: ToolFunction, param: inspect.Parameter, schema: dict[str, Any]) -> Any:
    """The default as exported to agents; it must be JSON and fit its own type hint (the
    schema would otherwise promise agents a value the tool cannot be called with)."""
    where = f"tool {fn.__name__!r}: the default of parameter {param.name!r}"
    default = to_portable(param.default, where)
    if (problem := validate(schema, default, where)) is not None:
        raise InputError(
            f"{problem}; make the default fit the hint (e.g. write `int | None = None` "
            "for an optional integer)"
        )
    return default


_ARGUMENT_ORIGINS = (list, dict, tuple, typing.Literal, typing.Union, types.UnionType)


def _check_context_parameter(fn: ToolFunction, param: inspect.Parameter) -> None:
    """Refuse a first parameter that cannot be the context the world passes
    positionally: a keyword-only or ``**kwargs`` one would fail every call, and one typed
    as an argument (``def f(sku: str)``, ``ctx`` forgotten) would silently take the
    context, so the agent could never send that argument."""
    try:  # the context's hint may name anything, even a local: unknown is fine
        hint = _evaluated(fn, param.annotation)
    except Exception:
        hint = param.empty
    base = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
    # ``*args`` takes the context as well; keyword-only or ``**kwargs`` cannot.
    positional = param.kind not in (param.KEYWORD_ONLY, param.VAR_KEYWORD)
    if positional and not _argument_type(base):
        return
    shown = base.__name__ if isinstance(base, type) else str(base)
    got = f"is typed {shown}" if positional else f"is {param.kind.description}"
    raise InputError(
        f"tool {fn.__name__!r}: its first parameter {param.name!r} {got}, but the world "
        "passes the tool context (ToolContext) there; make the context the first "
        f"parameter, e.g. def {fn.__name__}(ctx: ToolContext, {_after_context(param, positional)})"
    )


def _after_context(param: inspect.Parameter, positional: bool) -> str:
    """What follows ``ctx`` in the suggested signature, which must be valid: never a
    second parameter named ``ctx``."""
    if positional:
        return f"{param.name}: ..."
    if param.kind is param.VAR_KEYWORD:
        return f"**{param.name}"
    if param.name in ("ctx", "context"):
        return "..."
    return f"*, {param.name}: ..."


def _argument_type(hint: Any) -> bool:
    """Whether ``hint`` is one of the argument types a tool's JSON schema is built from."""
    if hint is Any:  # the context may be typed as anything
        return False
    try:
        if hint in _SCALARS or hint in (list, dict, tuple):
            return True
    except TypeError:  # an unhashable hint is no argument type
        return False
    return typing.get_origin(hint) in _ARGUMENT_ORIGINS


def _hint(fn: ToolFunction, param: inspect.Parameter) -> Any:
    """The evaluated type hint of one argument. Evaluated one by one (not with
    get_type_hints) so the context parameter's hint may name anything, even a local."""
    if param.annotation is param.empty:
        raise InputError(
            f"tool {fn.__name__!r}: parameter {param.name!r} needs a type "
            "hint so its JSON schema can be exported"
        )
    try:
        return _evaluated(fn, param.annotation)
    except Exception as exc:
        raise InputError(
            f"tool {fn.__name__!r}: the type hint {param.annotation!r} of "
            f"{param.name!r} cannot be evaluated ({exc}); import the names it "
            "uses at module level"
        ) from exc


def _evaluated(fn: ToolFunction, annotation: Any) -> Any:
    """``annotation`` as a type: a string one (``from __future__ import annotations``)
    evaluated in ``fn``'s module, raising whatever the evaluation raises."""
    if not isinstance(annotation, str):
        return annotation
    return eval(annotation, getattr(fn, "__globals__", {}))


_SCALARS: dict[Any, dict[str, Any]] = {
    int: {"type": "integer"},
    float: {"type": "number"},
    str: {"type": "string"},
    bool: {"type": "boolean"},
    type(None): {"type": "null"},
    Any: {},
}


def json_schema_for(hint: Any) -> dict[str, Any]:
    """JSON schema of a type hint: scalars, Literal, list/Sequence, dict, unions, Annotated."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is None and hint in _SCALARS:
        return dict(_SCALARS[hint])
    if origin is typing.Annotated:
        extra = [arg for arg in args[1:] if isinstance(arg, Mapping)]
        return {**json_schema_for(args[0]), **{k: v for e in extra for k, v in e.items()}}
    if origin is typing.Literal:
        if not all(type(arg) in (str, int, float, bool, type(None)) for arg in args):
            raise InputError(f"{hint!r}: Literal values must be str, int, float, bool or None")
        return {"enum": list(args)}
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        raise InputError(
            f"type hint {hint!r}: agents send JSON lists, which have no per-position types; "
            "use list[T] (or tuple[T, ...])"
        )
    if origin in (list, Sequence, tuple) and args:
        return {"type": "array", "items": json_schema_for(args[0])}
    if origin in (dict, Mapping) and args:
        if args[0] is not str:
            raise InputError(f"type hint {hint!r}: JSON object keys are strings; use dict[str, T]")
        return {"type": "object", "additionalProperties": json_schema_for(args[1])}
    if origin in (typing.Union, types.UnionType):
        return {"anyOf": [json_schema_for(arg) for arg in args]}
    if hint in (list, dict):
        return {"type": "array" if hint is list else "object"}
    raise InputError(
        f"type hint {hint!r} has no JSON schema; use int, float, str, bool, "
        "None, Literal[...], list[T], dict[str, T], a union of these, or Any"
    )


def validate(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    """First violation of ``schema`` by ``value`` as a sentence, or ``None``."""
    if "anyOf" in schema:
        if any(validate(option, value, path) is None for option in schema["anyOf"]):
            return None
        return f"{path} is {_show(value)}, which matches none of the allowed forms"
    if "enum" in schema and not any(
        value == item and type(value) is type(item) for item in schema["enum"]
    ):
        return f"{path} must be one of {schema['enum']}, got {_show(value)}"
    kind = schema.get("type")
    if kind is not None and (problem := type_problem(value, kind, path)) is not None:
        return problem
    for check in (_check_number, _check_string, _check_array, _check_object):
        if (problem := check(schema, value, path)) is not None:
            return problem
    return None


def _check_number(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    if type(value) not in (int, float):
        return None
    if "minimum" in schema and value < schema["minimum"]:
        return f"{path} must be at least {schema['minimum']}, got {value!r}"
    if "maximum" in schema and value > schema["maximum"]:
        return f"{path} must be at most {schema['maximum']}, got {value!r}"
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        return f"{path} must be greater than {schema['exclusiveMinimum']}, got {value!r}"
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        return f"{path} must be less than {schema['exclusiveMaximum']}, got {value!r}"
    return None


def _check_string(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    if not isinstance(value, str):
        return None
    if len(value) < schema.get("minLength", 0):
        return f"{path} must have at least {schema['minLength']} characters"
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        return f"{path} must have at most {schema['maxLength']} characters"
    if "pattern" in schema and compile_pattern(schema["pattern"]).search(value) is None:
        return f"{path} must match the pattern {schema['pattern']!r}, got {_show(value)}"
    return None


def _check_array(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    if not isinstance(value, list):
        return None
    if len(value) < schema.get("minItems", 0):
        return f"{path} must have at least {schema['minItems']} items"
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        return f"{path} must have at most {schema['maxItems']} items"
    items = schema.get("items")
    if items is None:
        return None
    for index, item in enumerate(value):
        if (problem := validate(items, item, f"{path}[{index}]")) is not None:
            return problem
    return None


def _check_object(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    if not isinstance(value, dict):
        return None
    properties = schema.get("properties", {})
    missing = [name for name in schema.get("required", ()) if name not in value]
    if missing:
        return f"{path} is missing the required {_names(missing)}"
    extra = schema.get("additionalProperties", True)
    for key, item in value.items():
        sub = properties.get(key, extra)
        if sub is False:
            allowed = ", ".join(sorted(properties)) or "none"
            return f"{path} has the unknown field {key!r}; allowed: {allowed}"
        if isinstance(sub, Mapping) and (problem := validate(sub, item, key_path(path, key))):
            return problem
    return None
