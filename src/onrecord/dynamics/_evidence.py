"""``ForecastEvidence``: one model's forecast bound to one actual reference episode.

The record holds the request the model saw, its response (or the error that replaced
it), the reference's observed states after each executed action, and the reference
episode *by digest*: an episode is stored once however many models forecast it.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import orjson

from onrecord._canonical import (
    atomic_write_bytes,
    canonical_bytes,
    digest_bytes,
    load_record_bytes,
)
from onrecord._exceptions import naming_file
from onrecord.dynamics._evidence_schema import FORECAST_SCHEMA, verify_shape
from onrecord.dynamics._layout import Layout, forecast_layout
from onrecord.dynamics._protocol import FloatArray
from onrecord.episode._verify_files import read_regular
from onrecord.errors import (
    ConsistencyError,
    DigestMismatch,
    EvidenceError,
    InputError,
    SchemaError,
)

__all__ = [
    "FORECAST_SCHEMA",
    "ForecastEvidence",
    "ForecastStatus",
    "load_forecasts",
    "save_forecasts",
]

ForecastStatus = Literal["ok", "model_error", "simulator_error"]


class ForecastEvidence:
    """A forecast and the actual transitions it is scored against. Immutable."""

    __slots__ = (
        "_angular",
        "_bytes",
        "_data",
        "_digest",
        "_initial",
        "_layout",
        "_mean",
        "_std",
        "_truth",
    )

    _data: dict[str, Any]
    _bytes: bytes
    _digest: str
    _angular: np.ndarray
    _initial: FloatArray
    _mean: FloatArray
    _std: FloatArray | None
    _truth: FloatArray
    _layout: Layout

    def __init__(self) -> None:
        raise TypeError("ForecastEvidence is made by capture_forecast, from_dict or load")

    @classmethod
    def _from_trusted(cls, data: dict[str, Any]) -> ForecastEvidence:
        data.pop("digest", None)
        body = canonical_bytes(data)
        data["digest"] = digest_bytes(body)
        return cls._seal(data, body)

    @classmethod
    def _seal(cls, data: dict[str, Any], body: bytes) -> ForecastEvidence:
        self = object.__new__(cls)
        set_ = object.__setattr__
        set_(self, "_data", data)
        set_(self, "_bytes", body)
        set_(self, "_digest", data["digest"])
        set_(self, "_angular", np.array([c["angular"] for c in data["coordinates"]], bool))
        dim = len(data["coordinates"])
        request, response = data["request"], data["response"]
        initial = _frozen([request["initial_state"]] if request else [], dim)
        set_(self, "_initial", initial[0] if len(initial) else initial.reshape(0))
        set_(self, "_mean", _frozen(response["states"] if response else [], dim))
        std = response.get("standard_deviation") if response else None
        set_(self, "_std", None if std is None else _frozen(std, dim))
        truth = [row if row is not None else [np.nan] * dim for row in data["reference"]["states"]]
        set_(self, "_truth", _frozen(truth, dim))
        set_(self, "_layout", forecast_layout(self))
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("ForecastEvidence is immutable")

    def __reduce__(self) -> tuple[Any, tuple[bytes]]:
        # Pickled as its canonical bytes and verified again on arrival.
        return _unpickle_forecast, (self.to_bytes(),)

    # --- verification and storage -----------------------------------------------------

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ForecastEvidence:
        """Rebuild a forecast from its dict form, verifying schema, digest and shape."""
        if not isinstance(data, Mapping) or data.get("schema") != FORECAST_SCHEMA:
            found = data.get("schema") if isinstance(data, Mapping) else type(data).__name__
            raise SchemaError(
                f"schema is {found!r}, expected {FORECAST_SCHEMA!r}: this is not "
                "onrecord forecast evidence"
            )
        body = canonical_bytes({k: v for k, v in data.items() if k != "digest"})
        actual = digest_bytes(body)
        if data.get("digest") != actual:
            raise DigestMismatch(
                f"forecast digest is {data.get('digest')!r} but the content "
                f"hashes to {actual!r}: it was changed after capture"
            )
        detached: dict[str, Any] = orjson.loads(body)
        verify_shape(detached)
        detached["digest"] = actual
        return cls._seal(detached, body)

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> ForecastEvidence:
        """Read and verify a forecast saved by ``save_json``; errors name the file."""
        # Never a FIFO or a device (it would block, or never end): see _verify_files.
        data = load_record_bytes(read_regular(Path(path), follow=True), str(path))
        try:
            return cls.from_dict(data)
        except EvidenceError as exc:
            raise naming_file(path, exc) from exc

    def to_bytes(self) -> bytes:
        """The exact bytes ``save_json`` writes: canonical JSON and a newline."""
        return canonical_bytes(self._data) + b"\n"

    def save_json(self, path: str | os.PathLike[str]) -> Path:
        """Write the forecast atomically in canonical form."""
        return atomic_write_bytes(path, self.to_bytes())

    def verify_reference(self, episode: Any, *, state_key: str = "state") -> None:
        """Raise ``ConsistencyError`` unless ``episode`` is the reference this forecast was
        scored against (same digest, same observed states). ``state_key`` is the one the
        forecast was captured with."""
        from onrecord.dynamics._capture import episode_reference, prepared
        from onrecord.dynamics._gaps import unobserved_steps
        from onrecord.episode import EpisodeEvidence

        if not isinstance(episode, EpisodeEvidence):
            raise InputError(
                f"verify_reference takes the reference EpisodeEvidence, got "
                f"{type(episode).__name__}"
            )
        if episode.digest != self.episode_digest:
            raise ConsistencyError(
                f"forecast {self._digest[:12]} references episode "
                f"{self.episode_digest[:12]}, not {episode.digest[:12]}"
            )
        # Its case identity and settings too: a report pairs the forecast's trial by
        # them, and a record naming another case (re-sealed) verified on its own.
        named = episode_reference(episode)
        for key, value in self._data["episode"].items():
            if named[key] != value:
                raise ConsistencyError(
                    f"forecast {self._digest[:12]} says its reference's {key} is "
                    f"{value!r:.80}, but episode {episode.digest[:12]} has {named[key]!r:.80}"
                )
        if self._data["reference"]["ended"] != episode.ended:
            raise ConsistencyError(
                f"forecast {self._digest[:12]} says its reference ended "
                f"{self._data['reference']['ended']!r}, but episode {episode.digest[:12]} "
                f"ended {episode.ended!r}"
            )
        # The same extraction capture used: vectors of the wrong length were kept out,
        # and the reasons it recorded for them (if it did) are the episode's.
        dim, reference = len(self._angular), self._data["reference"]
        truth = prepared(episode, state_key, [], dim)[1]
        gaps = reference.get("unobserved")
        if truth != reference["states"] or (
            gaps is not None and gaps != unobserved_steps(episode, state_key, dim, truth)
        ):
            raise ConsistencyError(
                "the forecast's reference states (or why some were not observed) differ "
                f"from the episode's observed {state_key!r} vectors; pass the state_key "
                "the forecast was captured with"
            )

    # --- views ------------------------------------------------------------------------

    @property
    def data(self) -> dict[str, Any]:
        """A detached copy of the whole record."""
        copy: dict[str, Any] = orjson.loads(self._bytes)
        copy["digest"] = self._digest
        return copy

    @property
    def digest(self) -> str:
        """sha256 of the canonical record without its digest field."""
        return self._digest

    @property
    def status(self) -> ForecastStatus:
        """``ok``, ``model_error`` (the model failed) or ``simulator_error`` (the reference
        failed, and the model was not called)."""
        status: ForecastStatus = self._data["status"]
        return status

    @property
    def error(self) -> dict[str, str] | None:
        """``{"type", "message"}`` for a model or simulator error."""
        error = self._data["error"]
        return None if error is None else dict(error)

    @property
    def model_id(self) -> str:
        """The caller-supplied model identity."""
        return str(self._data["model_id"])

    @property
    def contract(self) -> str:
        """The state-vector contract the forecast is bound to."""
        return str(self._data["contract"])

    @property
    def coordinates(self) -> dict[str, str]:
        """``{name: unit}`` in state-vector order."""
        return {c["name"]: c["unit"] for c in self._data["coordinates"]}

    @property
    def angular(self) -> tuple[str, ...]:
        """Coordinates whose errors wrap to (-pi, pi]."""
        return tuple(c["name"] for c in self._data["coordinates"] if c["angular"])

    @property
    def horizons(self) -> tuple[int, ...]:
        """Declared horizons (steps after the initial state)."""
        return tuple(self._data["horizons"])

    @property
    def action_scope(self) -> str:
        """``planned`` (a frozen plan) or ``observed_prefix`` (the executed actions)."""
        return str(self._data["action_scope"])

    @property
    def episode(self) -> dict[str, Any]:
        """The reference by digest, with its case identity and environment settings."""
        return dict(self._data["episode"])

    @property
    def episode_digest(self) -> str:
        """Digest of the reference episode."""
        return str(self._data["episode"]["digest"])

    @property
    def observed_steps(self) -> int:
        """How many actions the reference executed; later horizons are censored unless
        the reference's ``interact`` raised (see ``censors``)."""
        return len(self._data["reference"]["states"])

    @property
    def unobserved(self) -> dict[int, str]:
        """``{step: reason}`` for each executed action whose state was not observed (the
        horizon ``step`` is then not measured); empty when every state was observed, or
        for a record captured before forecasts kept these reasons."""
        return {gap["step"]: gap["reason"] for gap in self._data["reference"].get("unobserved", [])}

    @property
    def metadata(self) -> dict[str, Any]:
        """The model's portable description of its method (empty if none)."""
        response = self._data["response"]
        return dict(response.get("metadata") or {}) if response else {}

    @property
    def initial_state(self) -> FloatArray:
        """The state the model started from (read-only)."""
        return self._initial

    @property
    def mean(self) -> FloatArray:
        """Predicted states ``[len(actions), d]`` (empty unless ``status == "ok"``)."""
        return self._mean

    @property
    def std(self) -> FloatArray | None:
        """Predicted standard deviations, or None."""
        return self._std

    @property
    def truth(self) -> FloatArray:
        """Observed states ``[observed_steps, d]``; NaN where the observer failed."""
        return self._truth

    @property
    def angular_mask(self) -> np.ndarray:
        """Boolean mask of angular coordinates, in state order."""
        return self._angular

    def __repr__(self) -> str:
        return (
            f"ForecastEvidence(model_id={self.model_id!r}, status={self.status!r}, "
            f"horizons={list(self.horizons)}, observed_steps={self.observed_steps}, "
            f"digest={self._digest[:12]!r})"
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ForecastEvidence) and other._digest == self._digest

    def __hash__(self) -> int:
        return hash(self._digest)


def _frozen(rows: Any, dim: int) -> FloatArray:
    array = np.asarray(rows, dtype=np.float64).reshape(-1, dim)
    array.flags.writeable = False
    return array


def save_forecasts(path: str | os.PathLike[str], forecasts: Iterable[ForecastEvidence]) -> Path:
    """Write many forecasts as JSON Lines (one canonical record per line), atomically."""
    return atomic_write_bytes(path, b"".join(f.to_bytes() for f in forecasts))


def load_forecasts(path: str | os.PathLike[str]) -> list[ForecastEvidence]:
    """Read and verify every forecast of a JSON Lines file written by ``save_forecasts``;
    ``path`` may be a link (the user named it), a FIFO or a device is refused."""
    forecasts = []
    raw = read_regular(Path(path), follow=True)
    for number, line in enumerate(raw.splitlines(), start=1):
        if line:
            data = load_record_bytes(line, f"{path}:{number}")
            try:
                forecasts.append(ForecastEvidence.from_dict(data))
            except EvidenceError as exc:  # the line at fault, as every loader names it
                raise naming_file(f"{path}:{number}", exc) from exc
    return forecasts


def _unpickle_forecast(raw: bytes) -> ForecastEvidence:
    return ForecastEvidence.from_dict(load_record_bytes(raw, "pickled forecast evidence"))
