"""A researcher's own models in the experiment: ``onrecord worldmodel run --model
MODULE:FACTORY``.

``FACTORY(simulator)`` is called once per environment of the protocol (CartPole, then each
other environment) and returns a ``WorldModel``, or None for an environment it does not
model (not for CartPole). Everything is imported, built and checked before the run writes
anything, so a bad ``--model`` leaves no directory behind. The protocol records each
model's spec, id and ``describe()``; the replay reads only that record and the evidence,
never the module.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from onrecord._canonical import canonical_bytes, to_portable
from onrecord._exceptions import describe as described_error
from onrecord.dynamics._envs import Simulator, get_simulator
from onrecord.dynamics._protocol import Prediction, Transitions, WorldModel, async_problem
from onrecord.errors import InputError, OnrecordError, SchemaError

__all__ = [
    "FitFailed",
    "UserModel",
    "fitted",
    "load_user_models",
    "slug",
    "user_slugs",
]

# "name/version": segments of letters, digits and ". _ + -" joined by "/". The id becomes
# a file name (``/`` → ``_``), so nothing may climb out of its folder or hide a path
# separator; and with a "/" it cannot be a plain table key such as the headline's "ratio".
_MODEL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*(/[A-Za-z0-9][A-Za-z0-9._+-]*)+")
_FIX = (
    "--model takes 'package.module:factory', a function (or class) called with the "
    "experiment's Simulator that returns a WorldModel (model_id, fit, predict, describe)"
)


def slug(model_id: str) -> str:
    """A file-name-safe form of a model id."""
    return model_id.replace("/", "_")


@dataclass(frozen=True)
class UserModel:
    """One ``--model``: its spec and the model it built for each environment."""

    spec: str
    models: dict[str, WorldModel]
    """Environment id → model; environments the factory returned None for are absent."""
    env_id: str
    """The protocol's main environment (CartPole), which every user model must model."""
    description: Any
    """``describe()`` before fitting (its configuration), or None when it needs a fit."""

    @property
    def model_id(self) -> str:
        """The id of the model on the main environment."""
        return self.models[self.env_id].model_id

    def record(self, other_envs: Sequence[str]) -> dict[str, Any]:
        """What ``protocol.json`` keeps of it: enough to re-run it and to replay it."""
        return {
            "spec": self.spec,
            "model_id": self.model_id,
            "describe": self.description,
            "other_envs": {
                env: (self.models[env].model_id if env in self.models else None)
                for env in other_envs
            },
        }


def load_user_models(
    specs: Sequence[str], protocol: Mapping[str, Any], builtins: Callable[[Simulator], list[Any]]
) -> list[UserModel]:
    """Import and build every ``--model``; raise ``InputError`` (exit 3) naming the spec
    and the fix for anything unusable, including an id another model already has."""
    from onrecord.runner._registry import import_object  # `onrecord run`'s resolution

    envs = [protocol["env_id"], *protocol["other_envs"]]
    simulators = {env: get_simulator(env) for env in envs}
    taken = {
        env: {m.model_id: "a built-in model" for m in builtins(simulators[env])} for env in envs
    }
    users = []
    for spec in specs:
        try:
            factory = import_object(spec)
        except InputError as exc:
            raise InputError(f"--model {spec}: {exc}; {_FIX}") from exc
        if not callable(factory):
            raise InputError(
                f"--model {spec} is {type(factory).__name__} {factory!r:.40}, not a function "
                f"or class; {_FIX}"
            )
        models: dict[str, WorldModel] = {}
        for env, simulator in simulators.items():
            model = _build(spec, factory, simulator, required=env == protocol["env_id"])
            if model is not None:
                _claim(taken[env], model.model_id, spec, env)
                models[env] = model
        main = models[protocol["env_id"]]
        users.append(UserModel(spec, models, protocol["env_id"], _described(spec, main)))
    return users


def _build(spec: str, factory: Any, simulator: Simulator, *, required: bool) -> Any:
    try:
        model = factory(simulator)
    except Exception as exc:  # the researcher's code may raise anything
        raise InputError(
            f"--model {spec}: calling it with the {simulator.env_id} Simulator raised "
            f"{described_error(exc)}; {_FIX}"
        ) from exc
    if model is None:
        if not required:
            return None  # the factory does not model this environment
        raise InputError(
            f"--model {spec} returned None for {simulator.env_id}, the environment every "
            "model of the experiment is evaluated on (None is for the other environments "
            f"only); {_FIX}"
        )
    if isinstance(model, type):
        # A class has model_id, fit, predict and describe too, so it passed for a model,
        # and every fit then failed on the missing `self`: a whole run of model_errors.
        raise InputError(
            f"--model {spec} returned the class {model.__name__} for {simulator.env_id}, "
            f"not a model: return an instance ({model.__name__}(...)), or name the class "
            f"itself as the factory ('{spec.split(':')[0]}:{model.__name__}'); {_FIX}"
        )
    if not isinstance(model, WorldModel):
        members = ("model_id", "fit", "predict", "describe")
        missing = [name for name in members if not hasattr(model, name)]
        raise InputError(
            f"--model {spec} returned {type(model).__name__} for {simulator.env_id}, not a "
            f"WorldModel (it lacks {missing}); {_FIX}"
        )
    problem = async_problem(model)
    if problem is not None:
        # Every forecast and run would fail, one at a time, on a coroutine or generator.
        raise InputError(
            f"--model {spec} returned {type(model).__name__} for {simulator.env_id}, whose "
            f"predict {problem}; {_FIX}"
        )
    if not isinstance(model.model_id, str) or not _MODEL_ID.fullmatch(model.model_id):
        raise InputError(
            f"--model {spec}: model_id {model.model_id!r} is not a 'name/version' id like "
            "'my-model/v1' (letters, digits, '.', '_', '+', '-', segments joined by '/'); "
            "it names the model's files and rows"
        )
    return model


def _claim(taken: dict[str, str], model_id: str, spec: str, env: str) -> None:
    """Refuse an id (or a file name) that a built-in or an earlier ``--model`` has."""
    clash = taken.get(model_id) or next(
        # File names: the same on a case-insensitive file system (macOS, Windows) too.
        (
            owner
            for other, owner in taken.items()
            if slug(other).casefold() == slug(model_id).casefold()
        ),
        None,
    )
    if clash is not None:
        raise InputError(
            f"--model {spec}: model_id {model_id!r} on {env} is already used by {clash} "
            "(or names the same files): give your model an id of its own, e.g. "
            f"'{model_id.split('/')[0]}-mine/v1'"
        )
    taken[model_id] = f"--model {spec}"


def _described(spec: str, model: WorldModel) -> Any:
    """``describe()`` before fitting, as portable JSON. A model that can describe itself
    only once fitted is recorded as None (its fitted description is ``models/ID.json``)."""
    try:
        description = model.describe()
    except Exception:  # typically: the parameters do not exist before fit
        return None
    try:
        portable = to_portable(description)
        canonical_bytes(portable)
    except OnrecordError as exc:
        raise InputError(
            f"--model {spec}: describe() must return portable JSON (numbers, strings, "
            f"lists, objects): {exc}"
        ) from exc
    return portable


class FitFailed(RuntimeError):
    """What a model whose ``fit`` raised answers every ``predict`` with, so each of its
    forecasts and closed-loop runs is recorded as that model's error, never scored."""


@dataclass
class _Unfitted:
    model_id: str
    failure: str

    def fit(self, transitions: Transitions) -> None:
        """Never called: the model already failed to fit."""

    def predict(self, initial_states: Any, actions: Any, *, uncertainty: bool = True) -> Prediction:
        raise FitFailed(self.failure)

    def describe(self) -> dict[str, Any]:
        return {"fit_error": self.failure}


def fitted(model: WorldModel, transitions: Transitions) -> tuple[WorldModel, dict[str, Any]]:
    """Fit ``model`` on its own copy of ``transitions`` (a model that changed them in place
    would change what the next model learns) and return it with its description. A fit
    that raises gives a stand-in whose every prediction is a ``model_error``; a
    description that raises or is not portable is recorded as the error it is."""
    copy = Transitions(
        transitions.states.copy(), transitions.actions.copy(), transitions.next_states.copy()
    )
    model_id = model.model_id
    try:
        model.fit(copy)
        if model.model_id != model_id:  # its files and rows are named by the protocol's id
            raise InputError(f"fit changed model_id to {model.model_id!r}")
    except Exception as exc:  # a model's own failure, recorded instead of ending the run
        stand_in = _Unfitted(model_id, f"fit(transitions) raised {described_error(exc)}")
        return stand_in, stand_in.describe()
    try:
        description = to_portable(model.describe())
        canonical_bytes(description)
    except Exception as exc:  # the description is a record of the model, not a result
        return model, {"describe_error": f"{described_error(exc)}"}
    return model, description


def user_slugs(protocol: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Environment id → file name → model id of the protocol's user models (for the
    replay, whose other-environment files are found by name); ``SchemaError`` when the
    record is not the one ``run`` writes."""
    records = protocol.get("user_models", [])
    if not isinstance(records, list) or not all(_is_record(r, protocol) for r in records):
        raise SchemaError(
            "protocol.json has a user_models entry that is not {spec, model_id, describe, "
            "other_envs} naming a model of its models list; re-run the experiment into a "
            "new directory"
        )
    found: dict[str, dict[str, str]] = {env: {} for env in protocol["other_envs"]}
    for record in records:
        for env, model_id in record["other_envs"].items():
            if model_id is not None:
                found[env][slug(model_id)] = model_id
    return found


def _is_record(record: Any, protocol: Mapping[str, Any]) -> bool:
    if not isinstance(record, dict) or set(record) != {
        "spec",
        "model_id",
        "describe",
        "other_envs",
    }:
        return False
    others = record["other_envs"]
    return (
        isinstance(record["spec"], str)
        and record["model_id"] in protocol["models"]
        and isinstance(others, dict)
        and set(others) == set(protocol["other_envs"])
        and all(v is None or isinstance(v, str) for v in others.values())
    )
