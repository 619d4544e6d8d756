"""The ``steps`` columns of an episode record, built once at the end of the episode.

Columns that are already canonical JSON bytes (observer states, ``info`` dicts) and Box
columns are spliced into the record as bytes rather than built as Python objects (see
``onrecord._splice``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from onrecord._canonical import MAX_NESTING, refuse_deep_bytes, to_portable
from onrecord._splice import Spliced, array_fragment, list_fragment
from onrecord.episode._blobs import BLOB_THRESHOLD
from onrecord.episode._verify import STEP_COLUMNS
from onrecord.errors import PortabilityError
from onrecord.integrations.gymnasium._recorder import NOT_EXECUTED, Failure, error_record
from onrecord.integrations.gymnasium._rewards import (
    refuse_invalid_rewards,
    refuse_overflowing_rewards,
    rewards,
)
from onrecord.integrations.gymnasium._spaces import encode_batch, rounds, stacked_box

if TYPE_CHECKING:
    from onrecord.integrations.gymnasium._recorder import EpisodeRecorder

__all__ = ["encode_steps", "no_steps", "own_problem"]

# The fields of the recorder's Success records, in order, by column name.
_SUCCESS = ("action", "wall_time_ns", "observation", "reward", "state")
_EMPTY_INFO = b"{}"


def encode_steps(recorder: EpisodeRecorder) -> tuple[dict[str, Any], float]:
    """All step columns of a finished episode, from the recorder's per-attempt records,
    and the episode's return. A step whose observation JSON cannot hold (a NaN, an
    Infinity) is kept as an environment error, as an invalid reward is."""
    blobs = dict(recorder.blobs)
    try:
        return _encode_steps(recorder)
    except PortabilityError:
        if not _refuse_unportable_observations(recorder):
            raise
        recorder.blobs.clear()  # those of the first pass may include dropped samples
        recorder.blobs.update(blobs)
        return _encode_steps(recorder)


def _encode_steps(recorder: EpisodeRecorder) -> tuple[dict[str, Any], float]:
    env, records = recorder.env, recorder.records
    raw = _split(records) if recorder.failed else _unzip(records)
    # One C-level pass over the states' lengths: a state that short cannot be too deep.
    if max(map(len, raw["state"]), default=0) > 2 * MAX_NESTING and _refuse_deep_states(recorder):
        raw = _split(records) if recorder.failed else _unzip(records)
    encoded = rewards(raw["reward"])
    if encoded is None:  # rare: kept as environment errors, and the columns built again
        refuse_invalid_rewards(recorder)
        raw = _split(records)
        encoded = rewards(raw["reward"])
        if encoded is None:  # every reward a double, yet their sum is beyond one
            refuse_overflowing_rewards(recorder)
            raw = _split(records)
            encoded = rewards(raw["reward"])
            if encoded is None:  # cannot be: each prefix of the rewards kept is a double
                raise PortabilityError(
                    "$.measures.return: the rewards sum to a number JSON cannot hold",
                    "$.measures.return",
                )
    reward_column, total = encoded
    transitions = raw["transition_index"]
    columns = {
        "status": raw["status"],
        "error": raw["error"],
        "state": list_fragment(raw["state"], terminated=True),
        "observer_error": _spread(recorder.observer_errors, len(records)),
        "wall_time_ns": list(raw["wall_time_ns"]),
        "action_index": raw["action_index"],
        "action": _actions(env.action_space, raw["action"], recorder),
        "transition_index": transitions,
        "observation": _samples(
            env.observation_space,
            _observations(raw["observation"], recorder),
            "steps.observation",
            recorder.blobs,
        ),
        "reward": reward_column,
        **_flags(len(transitions), recorder.final_flags),
        "info": _infos(transitions, recorder.infos),
    }
    return columns, total


def _refuse_deep_states(recorder: EpisodeRecorder) -> bool:
    """Keep a state nested deeper than ``MAX_NESTING`` as an observer error, as a read
    after reset is: the step kept its bytes, which orjson wrote, and the record nesting
    them a few levels further down then failed to seal, losing the episode. Checked here,
    once, not per step: a state that short cannot be that deep (each level is "[]").
    Whether any state was refused."""
    records, refused = recorder.records, False
    for index, item in enumerate(records):
        raw = item[4]
        if len(raw) <= 2 * MAX_NESTING:
            continue
        try:
            refuse_deep_bytes(raw[:-1], "$.state")  # without the comma step() added
        except PortabilityError as exc:
            records[index] = _without_state(item, recorder._observer_failed(index, exc))
            refused = True
    return refused


def _without_state(item: Any, state: bytes) -> Any:
    if type(item) is Failure:
        return item._replace(state=state)
    return (*item[:4], state)


def _unzip(records: list[Any]) -> dict[str, Sequence[Any]]:
    """Columns of an episode whose every attempt succeeded: each is one field of the
    records, taken apart by a single zip."""
    count = len(records)
    every = list(range(count))
    fields = zip(*records, strict=True) if records else ((),) * len(_SUCCESS)
    columns: dict[str, Sequence[Any]] = dict(zip(_SUCCESS, fields, strict=True))
    columns.update(
        status=["ok"] * count, error=[None] * count, action_index=every, transition_index=every
    )
    return columns


def _split(records: list[Any]) -> dict[str, Sequence[Any]]:
    """Columns of an episode in which some attempts were refused or raised."""
    names = (*_SUCCESS, "status", "error", "action_index", "transition_index")
    columns: dict[str, list[Any]] = {name: [] for name in names}
    for index, item in enumerate(records):
        if type(item) is Failure:
            status, error, elapsed, sent, state = item
        else:
            sent, elapsed, observation, reward, state = item
            status, error = "ok", None
            columns["transition_index"].append(index)
            columns["observation"].append(observation)
            columns["reward"].append(reward)
        columns["status"].append(status)
        columns["error"].append(error)
        columns["wall_time_ns"].append(elapsed)
        columns["state"].append(state)
        if sent is not NOT_EXECUTED:
            columns["action_index"].append(index)
            columns["action"].append(sent)
    return dict(columns)


def _flags(count: int, final: tuple[bool, bool]) -> dict[str, list[bool]]:
    """Only the last successful step can have ended the episode: every later attempt is
    refused before it reaches the environment."""
    if not count:
        return {"terminated": [], "truncated": []}
    before = [False] * (count - 1)
    return {"terminated": [*before, final[0]], "truncated": [*before, final[1]]}


def _infos(transitions: Sequence[int], kept: dict[int, bytes]) -> Any:
    """The info column: each successful step's canonical info, ``{}`` when empty."""
    if not kept:  # every info empty: "{}" needs no check to be spliced
        return Spliced(b"[" + (b"{}," * len(transitions))[:-1] + b"]") if transitions else []
    return list_fragment([kept.get(index, _EMPTY_INFO) for index in transitions])


def no_steps() -> dict[str, Any]:
    """The columns of an episode that never reached its first step."""
    return {key: [] for key in STEP_COLUMNS}


def _actions(
    space: spaces.Space[Any] | None, actions: Sequence[Any], recorder: EpisodeRecorder
) -> Any:
    """Plain ints in a Discrete space are their own encoding: a copy of the list."""
    if type(space) is spaces.Discrete and not recorder.odd_actions:
        return list(actions)
    return _samples(space, list(actions), "steps.action", recorder.blobs)


def _observations(kept: Sequence[Any], recorder: EpisodeRecorder) -> Any:
    """Observations as the recorder kept them: raw bytes of samples that matched the
    declared Box (one array for the whole column), or detached copies."""
    if recorder.box is None or not kept:
        return list(kept)
    dtype, shape = recorder.box
    if not recorder.odd_observations:
        return np.frombuffer(b"".join(kept), dtype).reshape((len(kept), *shape))
    return [
        np.frombuffer(item, dtype).reshape(shape) if type(item) is bytes else item for item in kept
    ]


def _samples(
    space: spaces.Space[Any] | None, values: Any, field: str, blobs: dict[str, bytes]
) -> Any:
    """A Box column written by one C call (as ``tolist()`` would give it); other
    spaces through ``encode_batch``."""
    if not (isinstance(space, spaces.Box) and len(values)):
        return encode_batch(space, list(values), field, blobs)
    stacked = stacked_box(values, field)
    if stacked is None:  # each sample at its own shape and dtype, exactly
        return _ragged(values, field)
    if not stacked.dtype.isnative:  # a big-endian Box: orjson writes native order only
        stacked = stacked.astype(stacked.dtype.newbyteorder("="))
    if stacked[0].nbytes >= BLOB_THRESHOLD:
        return encode_batch(space, list(stacked), field, blobs)
    if stacked.dtype.kind == "f" and not np.isfinite(stacked).all():
        return encode_batch(space, list(stacked), field, blobs)  # raises, naming it
    return array_fragment(stacked)


def _ragged(values: Sequence[Any], field: str) -> list[Any]:
    """Samples that do not stack into one array, each as its own nested lists (and
    refused, naming the element, if not finite or not numeric)."""
    return [_as_lists(value, f"$.{field}[{index}]") for index, value in enumerate(values)]


def _as_lists(value: Any, path: str) -> Any:
    array = np.asarray(value)
    # Python numbers np.asarray would round ([2**60 + 1, 0.5] as a float64) are kept as given.
    return to_portable(value if rounds(value, array.dtype) else array.tolist(), path)


def _spread(sparse: dict[int, Any], count: int) -> list[Any]:
    values: list[Any] = [None] * count
    for index, value in sparse.items():
        values[index] = value
    return values


def _refuse_unportable_observations(recorder: EpisodeRecorder) -> bool:
    """Record each step whose observation the record cannot hold (a NaN, an Infinity,
    a masked array, a complex number, an int beyond 64 bits, a longdouble a double
    would round, an object, a string with a lone surrogate) as an environment error
    naming the value within the observation; False when none is (the error is
    elsewhere, e.g. a Dict sample off its space's keys, and stays a refusal of the
    episode). Each observation is encoded on its own: this runs only after the column
    failed, so the common path pays nothing for it."""
    records, space = recorder.records, recorder.env.observation_space
    last = max((i for i, item in enumerate(records) if not isinstance(item, Failure)), default=-1)
    found = False
    for index, item in enumerate(records):
        if isinstance(item, Failure):
            continue
        sent, elapsed, observation, _, state = item
        sample = _observations([observation], recorder)
        try:
            _samples(space, sample, "observation", {})
            continue
        except PortabilityError:
            # Named within the observation itself ("$.observation[1]"), not within a
            # batch of one ("$.observation[0, 1]", which reads as a 2-D index). A sample
            # that is storable on its own is off its space's layout: not kept here.
            exc = own_problem(sample[0], "$.observation")
        if exc is None:
            continue
        problem = PortabilityError(
            f"the environment returned an observation at attempt {index} that JSON "
            f"cannot hold ({exc}); the step is kept as an environment error",
            f"$.steps.observation[{index}]",
        )
        records[index] = Failure("env_error", error_record(problem), elapsed, sent, state)
        if index == last:  # its end flags went with it
            recorder.final_flags = (False, False)
        found = recorder.failed = True
    return found


def own_problem(observation: Any, path: str) -> PortabilityError | None:
    """What makes one observation unstorable, named within it, or None."""
    try:
        to_portable(observation, path)
    except PortabilityError as exc:
        return exc
    return None
