"""``onrecord worldmodel analyze --replay DIR``: verify and recompute, offline.

Checks the manifest's own digest and every sha256 in it, verifies every record's digest,
checks that each forecast's reference states match its saved episode, recomputes every
table and report from the saved evidence, and refuses a directory whose saved tables or
reports differ. No model and no simulator is called.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from onrecord._canonical import canonical_bytes
from onrecord._steps import shown_steps
from onrecord.dynamics._closed_loop import load_runs
from onrecord.dynamics._evidence import ForecastEvidence, load_forecasts
from onrecord.dynamics._extras import require_extras
from onrecord.dynamics.experiment._protocol import analysis_of, build_protocol
from onrecord.dynamics.experiment._store import load_episodes, read_json, verify_manifest
from onrecord.dynamics.experiment._tables import Evidence, Pair, compute_tables, decisions
from onrecord.dynamics.experiment._user_models import slug, user_slugs
from onrecord.errors import ConsistencyError, InputError, SchemaError

__all__ = ["REPLAY_STEPS", "check_saved_protocol", "load_evidence", "replay"]

Step = Callable[[str], None]
"""Called with a label after each step of a replay (``onrecord worldmodel analyze``
shows them as progress: a full run takes seconds to replay)."""

REPLAY_STEPS = 10
"""How many times ``replay`` calls ``step``: manifest, protocol, six kinds of evidence,
tables, reports."""


def _linked(forecasts: list[ForecastEvidence], episodes: dict[str, Any]) -> list[ForecastEvidence]:
    for forecast in forecasts:
        episode = episodes.get(forecast.episode_digest)
        if episode is None:
            raise ConsistencyError(
                f"forecast {forecast.digest[:12]} references episode "
                f"{forecast.episode_digest[:12]}, which the run lacks"
            )
        forecast.verify_reference(episode)
    return forecasts


def _by_digest(path: Path) -> dict[str, Any]:
    return {e.digest: e for e in load_episodes(path)}


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "number"
    kinds: dict[type, str] = {dict: "object", list: "list", str: "string"}
    return kinds.get(type(value), "null")


def _check_protocol(saved: Any, expected: Any, where: str = "protocol.json") -> None:
    """Raise ``SchemaError`` naming the first field of ``saved`` that is missing or of
    another kind than in the protocol this version writes: replaying such a directory
    would otherwise stop on a KeyError (exit 1, which a CI gate reads as *reject*)."""
    if _kind(saved) != _kind(expected):
        raise SchemaError(
            f"{where} is {saved!r:.60}, not a {_kind(expected)} as in the protocol this "
            "version writes; re-run the experiment into a new directory"
        )
    if isinstance(expected, dict):
        for key, value in expected.items():
            if key not in saved:
                raise SchemaError(
                    f"{where} lacks {key!r}: it is not a protocol this version of onrecord "
                    "wrote; re-run the experiment into a new directory"
                )
            _check_protocol(saved[key], value, f"{where}.{key}")
    elif isinstance(expected, list) and expected:
        for index, item in enumerate(saved):
            _check_protocol(item, expected[0], f"{where}[{index}]")


def _check_bootstrap(path: Path, settings: dict[str, Any]) -> None:
    """A run writes ``draws`` ≥ 1 and ``seed`` ≥ 0; anything else was changed after it
    (``draws: 0`` was refused as if the user had passed it to ``closed_loop_summary``)."""
    for name, least in (("draws", 1), ("seed", 0)):
        value = settings[name]
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise SchemaError(
                f"{path} bootstrap.{name} is {value!r:.40}, which no run writes (an "
                f"integer of at least {least}): the protocol is damaged or was changed "
                "after the run; restore the protocol.json the run wrote, or re-run"
            )


def check_saved_protocol(protocol: Any, path: Path, where: str) -> None:
    """Raise ``SchemaError`` unless ``protocol`` (read from ``path``, named ``where`` in
    messages) is one a run of this or an earlier version wrote: every field of the kind
    it writes, a known analysis version, bootstrap settings a run writes. ``replay`` and
    ``onrecord verify`` check it alike (verify refused a run written before analysis v2,
    which replays)."""
    expected = build_protocol(smoke=isinstance(protocol, dict) and protocol.get("smoke") is True)
    if isinstance(protocol, dict) and "analysis" not in protocol:
        del expected["analysis"]  # written before analysis v2: replayed the v1 way
    _check_protocol(protocol, expected, where)
    analysis_of(protocol)  # an unknown analysis version is refused before any work
    _check_bootstrap(path, protocol["bootstrap"])


def replay(
    root: str | os.PathLike[str], *, step: Step | None = None, progress: bool = False
) -> dict[str, Any]:
    """Verify a run directory and return its recomputed tables (equal to the saved ones),
    with ``verified_files`` (how many files the manifest pins) and ``manifest_sealed``
    (False for a run written before manifests carried a digest: it still replays, but
    nothing shows its manifest was not rewritten along with a file it lists).
    ``step(label)`` is called after each of its ``REPLAY_STEPS`` steps; ``progress=True``
    shows them on stderr as ``onrecord worldmodel analyze`` does."""
    # A str as well as a Path, as run_experiment takes it (a str raised a TypeError).
    with shown_steps(step, progress, "world-model replay", REPLAY_STEPS) as tick:
        return _replay(Path(root), tick)


def _replay(root: Path, tick: Step) -> dict[str, Any]:
    require_extras("replaying a world-model run", plots=False)
    manifest = verify_manifest(root)
    tick("manifest and hashes")
    protocol = read_json(root / "protocol.json")
    check_saved_protocol(protocol, root / "protocol.json", "protocol.json")
    tick("protocol")
    evidence = load_evidence(root, protocol, step=tick)
    try:
        tables = compute_tables(protocol, evidence)
    except InputError as exc:
        # The user passed only a directory: a value the analysis refuses was written
        # into the saved run after it was made, not given on the command line.
        raise SchemaError(
            f"{root} is damaged: its tables cannot be recomputed from protocol.json and the "
            f"saved evidence ({exc}); restore the files the run wrote, or re-run"
        ) from exc
    tick("tables")
    saved = read_json(root / "tables.json")
    if canonical_bytes(_as_saved(tables, saved)) != canonical_bytes(saved):
        raise ConsistencyError(
            "tables.json differs from the tables recomputed from the saved evidence"
        )
    _check_reports(root, protocol, evidence)
    tick("reports")
    tables["verified_files"] = len(manifest.files)
    tables["manifest_sealed"] = manifest.sealed
    return tables


def load_evidence(root: Path, protocol: dict[str, Any], *, step: Step | None = None) -> Evidence:
    """Every forecast and closed-loop run of a run directory, each checked against its
    saved episode, grouped as ``compute_tables`` takes them; ``step(label)`` after each
    of its six kinds."""
    tick = step or (lambda _label: None)
    models = protocol["models"]
    evidence = Evidence()
    for split, target in (("development", evidence.development), ("heldout", evidence.heldout)):
        episodes = _by_digest(root / "data" / f"{split}.episodes.jsonl")
        for model in models:
            target[model] = _linked(
                load_forecasts(root / "forecasts" / split / f"{slug(model)}.jsonl"), episodes
            )
        tick(f"{split} forecasts")
    for key, pairs in (
        ("interventions", evidence.interventions),
        ("persistence", evidence.persistence),
    ):
        episodes = _by_digest(root / "data" / f"{key}.episodes.jsonl")
        for model in models:
            pairs[model] = _pair(root / "forecasts" / key / slug(model), episodes)
        tick(key)
    for model in models:
        episodes = _by_digest(root / "data" / "closed_loop" / f"{slug(model)}.episodes.jsonl")
        evidence.closed_loop.extend(
            load_runs(root / "closed_loop" / f"{slug(model)}.jsonl", episodes)
        )
    tick("closed loop")
    evidence.other = _other_envs(root, protocol)
    tick("other environments")
    return evidence


def _pair(stem: Path, episodes: dict[str, Any]) -> Pair:
    base, variant = (
        _linked(load_forecasts(stem.with_name(f"{stem.name}.{arm}.jsonl")), episodes)
        for arm in ("base", "variant")
    )
    return base, variant


def _other_envs(root: Path, protocol: dict[str, Any]) -> dict[str, dict[str, Any]]:
    # --model models are known by their record in the protocol: never imported here.
    users = user_slugs(protocol)
    other = {}
    for env_id in protocol["other_envs"]:
        episodes = _by_digest(root / "data" / env_id / "heldout.episodes.jsonl")
        # Built-in ids hold no "_", so a file name gives the id back; a user model's id
        # (which may) is looked up in its protocol record.
        other[env_id] = {
            users[env_id].get(path.stem, path.stem.replace("_", "/")): _linked(
                load_forecasts(path), episodes
            )
            for path in sorted((root / "forecasts" / env_id).glob("*.jsonl"))
        }
    return other


def _as_saved(tables: dict[str, Any], saved: Any) -> dict[str, Any]:
    """The recomputed tables as a run saved before ``failed_runs`` existed wrote them: a
    saved closed-loop row without the field compares equal only when the recomputed
    count is 0 (a row with failed runs is computed differently, and still refused)."""
    rows = tables.get("closed_loop")
    saved_rows = saved.get("closed_loop") if isinstance(saved, dict) else None
    if not isinstance(rows, list) or not isinstance(saved_rows, list):
        return tables
    if len(rows) != len(saved_rows):
        return tables
    adapted = [
        {key: value for key, value in row.items() if key != "failed_runs"}
        if isinstance(old, dict) and "failed_runs" not in old and row.get("failed_runs") == 0
        else row
        for row, old in zip(rows, saved_rows, strict=True)
    ]
    return {**tables, "closed_loop": adapted}


def _check_reports(root: Path, protocol: dict[str, Any], evidence: Evidence) -> None:
    from onrecord.report import EvaluationReport

    reports, _ = decisions(protocol, evidence.heldout)
    for model, report in reports.items():
        saved = EvaluationReport.load(root / "reports" / f"{slug(model)}.report.json")
        if saved.digest != report.digest:
            raise ConsistencyError(
                f"the saved report of {model} differs from the one recomputed from its forecasts"
            )
