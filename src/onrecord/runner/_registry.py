"""Names → environments (agents and checks: ``_agents_and_checks``).

Everything a worker needs is carried as text (an import path, a Gymnasium id, a
reference-agent name) plus portable config, so a job pickles in a few hundred bytes
and resolves the same way in any process or on any Ray node.
"""

from __future__ import annotations

import difflib
import importlib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from onrecord._canonical import to_portable
from onrecord._exceptions import describe
from onrecord._loaded import loaded
from onrecord.errors import InputError
from onrecord.runner._envref import EnvironmentRef
from onrecord.runner._provider import EnvironmentProvider
from onrecord.runner._slips import (
    spelling_hint,
)

__all__ = [
    "EnvironmentRef",
    "build_provider",
    "import_object",
    "register_environment",
    "registered_environments",
    "resolve_environment",
]

ProviderFactory = Callable[..., Any]
_REGISTRY: dict[str, str] = {
    "cartpole": "onrecord.runner._examples:cartpole",
    "frozenlake": "onrecord.runner._examples:frozenlake",
    "ledger": "onrecord.runner._ledger:ledger",
    "remittance": "onrecord.runner._remittance:remittance",
}


def register_environment(
    name: str, factory: str | ProviderFactory, *, replace: bool = False
) -> None:
    """Make ``onrecord run NAME`` use ``factory(**config)``, which returns an
    ``EnvironmentProvider`` or a ``gymnasium.Env``. ``factory`` is an import path
    (``"package.module:function"``) or a module-level function; workers import it."""
    if not isinstance(name, str) or not name.strip() or ":" in name or name != name.strip():
        raise InputError(
            f"environment name must be a non-empty string without ':' or surrounding "
            f"spaces, got {name!r}"
        )
    if isinstance(factory, str):
        module, _, attribute = factory.partition(":")
        if not module or not attribute:
            raise InputError(
                f"register_environment({name!r}, {factory!r}): the factory must be an "
                "import path 'package.module:function' or a module-level function"
                f"{spelling_hint(factory)}"
            )
        path = factory
    elif callable(factory):
        path = _import_path(factory)
    else:
        raise InputError(
            f"register_environment({name!r}, ...): the factory must be an import path "
            f"or a module-level function, got {type(factory).__name__}"
        )
    if name not in _REGISTRY and not replace and _gym_spec(name):
        # Registered names are looked up before Gymnasium ids: this one would silently
        # stop meaning gymnasium.make(name) for every run planned in this process.
        raise InputError(
            f"the environment name {name!r} is a Gymnasium id; registering it would hide "
            f"gymnasium.make({name!r}): pick another name or pass replace=True"
        )
    if name in _REGISTRY and _REGISTRY[name] != path and not replace:
        raise InputError(
            f"the environment name {name!r} is taken by {_REGISTRY[name]}; pick "
            "another name or pass replace=True"
        )
    _REGISTRY[name] = path


def registered_environments() -> dict[str, str]:
    """Registered environment names and the import paths of their factories."""
    return dict(sorted(_REGISTRY.items()))


def _import_path(function: ProviderFactory) -> str:
    module = getattr(function, "__module__", None)
    path = f"{module}:{getattr(function, '__qualname__', '<no name>')}"
    if "<" in path or module in (None, "__main__"):
        raise InputError(
            f"register_environment needs a module-level function workers can "
            f"import; {path} is not one: move it into a module or pass "
            "'package.module:function'"
        )
    return path


def import_object(path: str) -> Any:
    """The object at ``"package.module:attribute.sub"``."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise InputError(
            f"{path!r} is not an import path; write it as 'package.module:name'"
            f"{spelling_hint(path)}"
        )
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # the module's own code may raise anything while loading
        hint = ""
        if isinstance(exc, ModuleNotFoundError) and exc.name == module_name.split(".")[0]:
            # Workers import it too: the current directory is not on their path.
            hint = (
                "; a module of your own must be importable: install it, or set "
                "PYTHONPATH to the folder that holds it (e.g. PYTHONPATH=. onrecord ...)"
            )
        raise InputError(
            f"cannot import {module_name!r} for {path!r}: {describe(exc)}{hint}"
        ) from exc
    for part in attribute.split("."):
        if not hasattr(target, part):
            public = [name for name in dir(target) if not name.startswith("_")]
            close = difflib.get_close_matches(part, public, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise InputError(
                f"{module_name!r} has no attribute {attribute!r} (from {path!r}){hint}"
            )
        target = getattr(target, part)
    return target


def resolve_environment(name: str, config: Mapping[str, Any] | None = None) -> EnvironmentRef:
    """Decide what ``name`` means, building it once to fail early with a clear message."""
    config = to_portable(dict(config or {}), "$.environment_config")
    if not isinstance(name, str) or not name.strip():
        raise InputError(
            "an environment is required: a registered name "
            f"({', '.join(_REGISTRY)}), a Gymnasium id or 'module:factory'"
        )
    if name in _REGISTRY:
        ref = EnvironmentRef(name, "provider", _REGISTRY[name], config)
    elif ":" in name and (failure := _import_failure(name)) is None:
        ref = EnvironmentRef(name, "provider", name, config)
    elif _gym_spec(name):  # Gymnasium is imported here, for a name none of the above
        ref = EnvironmentRef(name, "gym", name, config)
        _try_gym_make(name, config)
    elif ":" in name and failure:
        raise InputError(f"environment {name!r}: {failure}")
    else:
        raise InputError(_unknown_environment(name))
    provider = build_provider(ref)
    try:
        # build_provider wraps a factory's gymnasium.Env in a GymnasiumProvider named
        # after the factory: record it as such. A provider the factory built itself
        # (its environment_id may happen to equal the name) stays a provider.
        wrapped = _wraps_gymnasium(provider) and provider.environment_id == name
        if ref.kind == "provider" and wrapped and ":" in name:
            return EnvironmentRef(name, "env", name, config)
        return ref
    finally:
        provider.close()


def _wraps_gymnasium(provider: EnvironmentProvider) -> bool:
    """Whether ``provider`` is a ``GymnasiumProvider`` (none exists before its module is
    imported: a tool world's run never imports it)."""
    module = loaded("onrecord.runner._gym")
    return module is not None and type(provider) is module.GymnasiumProvider


def _import_failure(path: str) -> str | None:
    """None when ``path`` imports; else why not ("" when it is no import path at all,
    e.g. the Gymnasium id "ale_py:ALE/Pong-v5")."""
    module, _, attribute = path.partition(":")
    if not all(part.isidentifier() for part in [*module.split("."), *attribute.split(".")]):
        return ""
    try:
        import_object(path)
    except InputError as exc:
        return str(exc)
    return None


def _try_gym_make(name: str, config: Mapping[str, Any]) -> None:
    """Make the Gymnasium environment once, so that a missing extra (``box2d``, ...) or a
    keyword it does not take fails the plan, not every episode."""
    import gymnasium as gym

    try:
        gym.make(name, **config).close()
    except Exception as exc:  # gymnasium and the environments raise many types
        hint = (
            "; pass only keywords the environment takes (--env-config KEY=VALUE)"
            if isinstance(exc, TypeError)
            else ""
        )
        raise InputError(
            f"environment {name!r}: gymnasium.make({name!r}"
            f"{''.join(f', {k}={v!r}' for k, v in config.items())}) failed: "
            f"{describe(exc)}{hint}"
        ) from exc


def _gym_spec(name: str) -> bool:
    """Whether ``name`` is a Gymnasium id (registered, or importable as one)."""
    import gymnasium as gym  # here: a run of a registered tool world needs no Gymnasium

    if name in gym.registry:
        return True
    try:
        gym.spec(name)
    except Exception:  # gymnasium raises several error types for unknown ids
        return False
    return True


def _unknown_environment(name: str) -> str:
    import gymnasium as gym

    known = [*_REGISTRY, *gym.registry]
    close = difflib.get_close_matches(name, known, n=3)
    hint = spelling_hint(name) or (
        f"; did you mean {', '.join(map(repr, close))}?" if close else ""
    )
    return (
        f"unknown environment {name!r}: not a registered name ({', '.join(_REGISTRY)}), "
        f"not a Gymnasium id and not an importable 'module:factory'{hint}"
    )


def build_provider(ref: EnvironmentRef) -> EnvironmentProvider:
    """Build the provider ``ref`` describes (in whichever process runs episodes)."""
    config = dict(ref.config)
    if ref.kind in ("gym", "env"):
        return _gym_provider(ref, config)
    factory = import_object(ref.target)
    if not callable(factory):
        raise InputError(
            f"environment {ref.name!r}: {ref.target} is a {type(factory).__name__}, not a "
            "function; give 'module:factory' naming a function that returns an "
            "EnvironmentProvider or a gymnasium.Env"
        )
    gym = loaded("gymnasium")  # None: then no Gymnasium object exists yet
    if gym is not None and factory is gym.make:  # a factory of every environment, not one
        raise InputError(
            f"environment {ref.name!r}: {ref.target} is gymnasium.make itself; give the "
            "Gymnasium id instead (onrecord run CartPole-v1 --env-config KEY=VALUE), or a "
            "function of your own that returns gymnasium.make('<id>', ...)"
        )
    try:
        inspect.signature(factory).bind(**config)
    except TypeError as exc:
        raise InputError(
            f"environment {ref.name!r}: {ref.target} does not accept the config "
            f"{sorted(config)}: {exc}; pass only the settings it takes (--env-config)"
        ) from exc
    except ValueError:  # no signature to inspect (a builtin): the call will tell
        pass
    try:
        built = factory(**config)
    except InputError:
        raise
    except Exception as exc:  # the factory's own code may raise anything
        raise InputError(
            f"environment {ref.name!r}: {ref.target}(**{dict(config)!r}) raised {describe(exc)}"
        ) from exc
    if isinstance(built, EnvironmentProvider):
        return built
    gym = loaded("gymnasium")  # the factory may have imported it
    if gym is not None and isinstance(built, gym.Env):
        built.close()
        return _gym_provider(EnvironmentRef(ref.name, "env", ref.target, ref.config), config)
    raise InputError(
        f"environment {ref.name!r}: {ref.target} returned {_returned(built, ref.target)}; "
        "it must return an EnvironmentProvider or a gymnasium.Env"
    )


def _gym_provider(ref: EnvironmentRef, config: dict[str, Any]) -> EnvironmentProvider:
    """A Gymnasium id's (``gym``) or a factory's environment (``env``) as a provider."""
    import gymnasium as gym  # here: a tool world's run imports no Gymnasium

    from onrecord.runner._gym import GymnasiumProvider

    if ref.kind == "gym":
        return GymnasiumProvider(
            lambda: gym.make(ref.target, **config), environment_id=f"gymnasium:{ref.target}"
        )
    factory = import_object(ref.target)
    return GymnasiumProvider(lambda: factory(**config), environment_id=ref.target)


def _returned(built: Any, target: str) -> str:
    if not isinstance(built, type):
        return type(built).__name__
    # ``return CartPoleEnv`` for ``return CartPoleEnv()``: the class can be named itself.
    module = target.partition(":")[0]
    return (
        f"the class {built.__name__}, not an instance: return {built.__name__}(...), or "
        f"name a class that needs no arguments itself ('{module}:{built.__name__}' when "
        f"{module} has it)"
    )
