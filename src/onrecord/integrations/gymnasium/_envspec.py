"""How an episode records its environment's ``gymnasium`` spec: the id, the keyword
arguments, the time limit and the wrappers put on after ``gymnasium.make``.

A keyword argument that is not portable JSON (a dtype, a function, a space) cannot be
kept as a value. It is named in ``unportable_kwargs`` (as onrecord always did) and
described in ``described_kwargs``: by name only, ``DtypeObservation(env, np.float16)``
and ``DtypeObservation(env, np.float64)`` (or two ``TransformObservation`` functions)
recorded the same spec, and ``compare`` paired them as one environment. A description
must differ for different settings and come out the same for the same code in every
process and every run (a run's episodes on a process pool, a resume, a second run to
compare with): it is built from names and code, never from a ``repr`` that holds a
memory address, nor from state that changes while the code runs."""

from __future__ import annotations

import dis
import enum
import functools
import hashlib
import types
from typing import Any

import gymnasium as gym
import numpy as np

from onrecord._canonical import canonical_bytes, to_portable
from onrecord._exceptions import without_addresses
from onrecord._portable import key_path
from onrecord.errors import PortabilityError

__all__ = ["describe_spec", "describe_value"]


def describe_spec(env: gym.Env[Any, Any]) -> dict[str, Any] | None:
    """``env.spec`` as the episode records it (None for an environment made without one)."""
    spec = env.spec
    if spec is None:
        return None
    described: dict[str, Any] = {
        "id": spec.id,
        **_arguments(spec.kwargs, "$.spec.kwargs"),
        "max_episode_steps": spec.max_episode_steps,
    }
    wrappers = _wrappers(spec)
    if wrappers:  # kept out when none, so a plain environment's spec reads as before
        described["additional_wrappers"] = wrappers
    return described


def _wrappers(spec: Any) -> list[dict[str, Any]]:
    """The wrappers put on after ``gymnasium.make`` (``NormalizeObservation``, your own),
    in order, with their settings: two runs of one id under different wrapper stacks are
    different environments, and must not be paired as equal by ``compare``."""
    return [
        {
            "name": str(getattr(wrapper, "name", "")),
            "entry_point": str(getattr(wrapper, "entry_point", "")),
            **_arguments(getattr(wrapper, "kwargs", None), "$.spec.additional_wrappers"),
        }
        for wrapper in getattr(spec, "additional_wrappers", None) or ()
    ]


def _arguments(given: Any, path: str) -> dict[str, Any]:
    """``kwargs`` (the portable ones, as values) and ``unportable_kwargs`` (the names of
    the others, sorted), plus ``described_kwargs`` (each of those described) when there
    are any: kept out when none, so a spec of portable settings reads as before."""
    kwargs: dict[str, Any] = {}
    described: dict[str, Any] = {}
    for key, value in sorted((given or {}).items()):
        try:
            kwargs[key] = to_portable(value, key_path(path, key))
        except PortabilityError:
            described[key] = describe_value(value)
    found: dict[str, Any] = {"kwargs": kwargs, "unportable_kwargs": list(described)}
    if described:
        found["described_kwargs"] = described
    return found


def describe_value(value: Any) -> dict[str, Any]:
    """A portable description of a value that has no portable form: equal for the same
    setting in any process, different for different settings where names, code or
    fixed values tell them apart (see docs/evidence.md, "Format and verification")."""
    try:
        return _describe(value, frozenset(), 0)
    except Exception:  # a hostile __getattr__ or __repr__: the type still says something
        return {"instance": _name_of(type(value))}


_DEEPEST = 32  # a nesting deeper than this is described by its type alone


def _describe(value: Any, seen: frozenset[int], depth: int) -> dict[str, Any]:
    """One description: an object whose keys say what each part is
    (``{"numpy_dtype": "float16"}``, ``{"function": ..., "code": ...}``), so that
    ``compare``'s refusal names the part that differs
    (``...described_kwargs.dtype.numpy_dtype: 'float16' in A, ...``)."""
    if id(value) in seen or depth > _DEEPEST:
        return {"instance": _name_of(type(value)), "cut": True}
    seen = seen | {id(value)}
    if isinstance(value, np.dtype):
        return {"numpy_dtype": str(value)}  # numpy's own text: float16, >f4, [('a', '<f4')]
    if isinstance(value, type):  # a class: np.float16, float, your own
        return {"class": _name_of(value)}
    if isinstance(value, types.FunctionType):
        return _function(value, seen, depth)
    if isinstance(value, types.MethodType):
        # The method and its object's class; never the object's state, which may change
        # from one episode to the next (a running mean) and differs between processes.
        return {"method": _describe(value.__func__, seen, depth + 1), "of": _of(value)}
    if isinstance(value, types.BuiltinFunctionType | types.BuiltinMethodType | np.ufunc):
        return {"builtin": _builtin_name(value)}
    if isinstance(value, functools.partial):
        return {
            "partial": _describe(value.func, seen, depth + 1),
            "args": [_part(item, seen, depth + 1) for item in value.args],
            "keywords": {str(k): _part(v, seen, depth + 1) for k, v in value.keywords.items()},
        }
    if isinstance(value, enum.Enum):
        return {"enum": f"{_name_of(type(value))}.{value.name}"}
    if isinstance(value, gym.spaces.Space):
        return _space(value)
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        return {"bytes": _digest(data), "length": len(data)}
    if isinstance(value, float | complex | np.generic):  # NaN, inf, a longdouble
        return {type(value).__name__: repr(value)}
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject:  # its bytes are addresses: its items instead
            return {
                "ndarray": "object",
                "shape": list(value.shape),
                "items": [_part(item, seen, depth + 1) for item in value.ravel().tolist()],
            }
        data = np.ascontiguousarray(value).tobytes()
        return {"ndarray": value.dtype.str, "shape": list(value.shape), "data": _digest(data)}
    if isinstance(value, list | tuple):
        return {type(value).__name__: [_part(item, seen, depth + 1) for item in value]}
    if isinstance(value, set | frozenset):
        return {"set": _sorted(_part(item, seen, depth + 1) for item in value)}
    if isinstance(value, dict):
        pairs = [[_part(k, seen, depth + 1), _part(v, seen, depth + 1)] for k, v in value.items()]
        return {"dict": _sorted(pairs)}
    # Anything else by its type (and its own name, if it has one): its repr may hold a
    # memory address or state that changes as it is used.
    described = {"instance": _name_of(type(value))}
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if isinstance(name, str):
        described["name"] = name
    return described


def _part(value: Any, seen: frozenset[int], depth: int) -> dict[str, Any]:
    """An item inside a described container or call: ``{"value": ...}`` when portable
    (so a portable ``{"class": "x"}`` is not read as a class), else its description."""
    try:
        return {"value": to_portable(value, "$")}
    except PortabilityError:
        return _describe(value, seen, depth)


def _sorted(items: Any) -> list[Any]:
    """Items of a set or a dict in one order in every process (a set's own order
    follows string hashing, which differs between processes)."""
    return sorted(items, key=canonical_bytes)


def _function(func: types.FunctionType, seen: frozenset[int], depth: int) -> dict[str, Any]:
    """A function by ``module.qualname``; a lambda or a nested function (``<lambda>``,
    ``<locals>`` in its name) also by a digest of its code. A named function is found
    by its name, like the wrapper's entry point; a lambda has no name that tells two
    apart, so its code does. Decided from the name, not by looking the function up in
    its module: a function sent to a worker by value is no longer found there, and the
    same function must be described alike in the worker and in the parent."""
    described: dict[str, Any] = {"function": _name_of(func)}
    if "<" in func.__qualname__:
        described["code"] = _code_digest(func, seen, depth)
    return described


def _code_digest(func: types.FunctionType, seen: frozenset[int], depth: int) -> str:
    """sha256 (first 16 hex digits) of what the function does, stable across processes
    on one Python version: the bytecode (``co_code``: deoptimized, no line numbers, the
    same for the same source), the constants (a set constant's items sorted, nested code
    taken the same way, never a code object's repr, which holds its address), and the
    global and attribute names it reads (``co_names``). Not its file path or line, which
    differ between checkouts and move with any edit above it.

    Its defaults and the values it closes over join in when fixed (numbers, strings,
    tuples of them; functions, classes, dtypes by their own description), so
    ``scaled(2.0)`` and ``scaled(3.0)`` of one ``def scaled(k): return lambda o: o * k``
    differ. Other values by their type only: a list, an array or an object it holds may
    change as it runs (a running statistic). A name the function itself rebinds
    (``nonlocal count; count += 1``) is left out too, or every episode would record
    another environment and a process pool's workers would disagree."""
    rebound = _rebound(func.__code__)
    fixed = [
        _fixed(item, seen, depth)
        for item in (*(func.__defaults__ or ()), *sorted((func.__kwdefaults__ or {}).items()))
    ]
    closed: list[Any] = []
    for name, cell in zip(func.__code__.co_freevars, func.__closure__ or (), strict=False):
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell (a name assigned later)
            closed.append({"empty": True})
            continue
        closed.append({"rebound": True} if name in rebound else _fixed(content, seen, depth))
    parts = [repr(_code_parts(func.__code__)), fixed, closed]
    return _digest(canonical_bytes(parts))


_REBINDING = frozenset({"STORE_DEREF", "DELETE_DEREF"})


def _rebound(code: types.CodeType) -> set[str]:
    """The closure names ``code`` (or a function nested in it) assigns or deletes."""
    found = {str(op.argval) for op in dis.get_instructions(code) if op.opname in _REBINDING}
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            found |= _rebound(constant)
    return found


def _code_parts(code: types.CodeType) -> tuple[Any, ...]:
    return (code.co_code, code.co_names, code.co_freevars, _constant(code.co_consts))


def _constant(value: Any) -> Any:
    if isinstance(value, types.CodeType):
        return ("code", _code_parts(value))
    if isinstance(value, tuple):
        return tuple(_constant(item) for item in value)
    if isinstance(value, frozenset):
        return ("frozenset", tuple(sorted(repr(_constant(item)) for item in value)))
    return (type(value).__name__, repr(value))  # str, bytes, numbers, None, Ellipsis


_FIXED = (int, float, complex, str, bytes, bool, type(None))


def _fixed(value: Any, seen: frozenset[int], depth: int) -> Any:
    """A default or closed-over value as the digest takes it: a fixed value as itself,
    anything else by its type (a list or an object may change as the function runs)."""
    if isinstance(value, tuple) and type(value) is tuple:
        return [_fixed(item, seen, depth + 1) for item in value]
    if type(value) in _FIXED:
        return [type(value).__name__, repr(value)]
    if _code_like(value):
        return _describe(value, seen, depth + 1)
    return {"instance": _name_of(type(value))}


def _code_like(value: Any) -> bool:
    return isinstance(
        value,
        type
        | np.dtype
        | types.FunctionType
        | types.MethodType
        | types.BuiltinFunctionType
        | np.ufunc,
    )


def _of(method: types.MethodType) -> str:
    owner = method.__self__
    return _name_of(owner if isinstance(owner, type) else type(owner))


def _builtin_name(value: Any) -> str:
    name = str(getattr(value, "__qualname__", None) or getattr(value, "__name__", ""))
    module = getattr(value, "__module__", None)
    if module is None and isinstance(value, types.BuiltinMethodType):
        owner = getattr(value, "__self__", None)  # [].append: list.append, no module
        if owner is not None and not isinstance(owner, types.ModuleType):
            module = type(owner).__module__
    if isinstance(value, np.ufunc):
        module = "numpy"
    return f"{_module(module)}.{name}" if module else name


def _space(space: gym.spaces.Space[Any]) -> dict[str, Any]:
    # Its repr, addresses removed (a space class without its own __repr__ prints one);
    # a Box's bounds also by digest, as numpy shortens a long array's printout.
    described: dict[str, Any] = {"space": without_addresses(repr(space))}
    if isinstance(space, gym.spaces.Box):
        bounds = (space.dtype.str, space.shape, space.low.tobytes(), space.high.tobytes())
        described["bounds"] = _digest(repr(bounds).encode())
    return described


def _name_of(thing: Any) -> str:
    """``module.qualname`` of a class or function."""
    name = getattr(thing, "__qualname__", None) or getattr(thing, "__name__", "?")
    return f"{_module(getattr(thing, '__module__', None))}.{name}"


def _module(name: Any) -> str:
    # A script's own functions live in ``__main__``; a process pool that starts its
    # workers fresh (spawn, forkserver) imports the script there as ``__mp_main__``.
    return "__main__" if name == "__mp_main__" else str(name)


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]
