"""``onrecord worldmodel run``: protocol, data, models, forecasts, reports, plots, manifest."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from onrecord._steps import shown_steps
from onrecord.dynamics._batch import capture_forecasts
from onrecord.dynamics._closed_loop import run_closed_loop, save_runs
from onrecord.dynamics._controls import PairedReference, capture_pairs
from onrecord.dynamics._envs import Simulator, get_simulator
from onrecord.dynamics._evidence import ForecastEvidence, save_forecasts
from onrecord.dynamics._extras import require_extras
from onrecord.dynamics._models import (
    BayesianLinearModel,
    BootstrapEnsembleModel,
    PersistenceModel,
    RandomModel,
)
from onrecord.dynamics._oracle import OracleModel
from onrecord.dynamics._planners import ExhaustivePlanner
from onrecord.dynamics._protocol import Transitions, WorldModel
from onrecord.dynamics._references import capture_plan, random_plan
from onrecord.dynamics.experiment._protocol import build_protocol
from onrecord.dynamics.experiment._store import save_episodes, write_json, write_manifest
from onrecord.dynamics.experiment._tables import Evidence, compute_tables, decisions
from onrecord.dynamics.experiment._user_models import (
    UserModel,
    fitted,
    load_user_models,
    slug,
)
from onrecord.errors import InputError

__all__ = ["RUN_STEPS", "build_models", "run_experiment", "slug"]

RUN_STEPS = 17
"""Steps of a run without ``user_models`` (protocol … plots); one more per user model."""

Step = Callable[[str], None]


def build_models(simulator: Simulator) -> list[WorldModel]:
    """The experiment's models, in protocol order."""
    return [
        PersistenceModel(simulator),
        BayesianLinearModel(simulator),
        BayesianLinearModel(simulator, action_conditioned=False),
        BootstrapEnsembleModel(simulator),
        RandomModel(simulator),
        OracleModel(simulator),
    ]


def _references(
    simulator: Simulator, seeds: list[int], length: int, tag: str
) -> tuple[list[Any], list[list[Any]]]:
    plans = [random_plan(simulator, length, np.random.default_rng(seed)) for seed in seeds]
    episodes = [
        capture_plan(simulator, plan, case_id=f"{tag}-{seed}", seed=seed)
        for seed, plan in zip(seeds, plans, strict=True)
    ]
    return episodes, plans


def _forecast(
    model: WorldModel,
    simulator: Simulator,
    episodes: list[Any],
    plans: list[Any],
    horizons: list[int],
) -> list[ForecastEvidence]:
    return capture_forecasts(
        episodes,
        model,
        model_id=model.model_id,
        contract=simulator.contract,
        coordinates=simulator.coordinates,
        horizons=horizons,
        planned_actions=plans,
    )


def _pair_forecasts(
    model: WorldModel, simulator: Simulator, pairs: list[PairedReference], horizons: list[int]
) -> tuple[list[ForecastEvidence], list[ForecastEvidence]]:
    base = _forecast(
        model, simulator, [p.base for p in pairs], [p.base_plan for p in pairs], horizons
    )
    variant = _forecast(
        model, simulator, [p.variant for p in pairs], [p.variant_plan for p in pairs], horizons
    )
    return base, variant


def run_experiment(
    output_dir: Path,
    *,
    smoke: bool,
    step: Step | None = None,
    user_models: Sequence[str] = (),
    progress: bool = False,
) -> dict[str, Any]:
    """Run the whole protocol into ``output_dir`` (which must be empty or absent).

    ``user_models`` are ``"package.module:factory"`` specs (``--model``), run through
    every stage beside the built-in models; they are imported, built and checked before
    anything is written (``InputError`` otherwise). ``step(label)`` is called after each
    step; ``progress=True`` shows the steps on stderr as ``onrecord worldmodel run`` does.
    """
    total = RUN_STEPS + len(user_models)
    with shown_steps(step, progress, "world-model steps", total) as tick:
        return _run_experiment(Path(output_dir), smoke, tick, user_models)


def _run_experiment(
    root: Path, smoke: bool, tick: Step, user_models: Sequence[str]
) -> dict[str, Any]:
    _check_new(root)
    require_extras("onrecord's world-model experiment", plots=True)
    protocol = build_protocol(smoke=smoke)
    users = load_user_models(user_models, protocol, build_models)
    protocol = build_protocol(
        smoke=smoke, user_models=[u.record(protocol["other_envs"]) for u in users]
    )
    write_json(root / "protocol.json", protocol)
    tick("protocol")
    simulator = get_simulator(protocol["env_id"])
    evidence = Evidence()
    models = _data_and_models(root, protocol, simulator, tick, _of(users, simulator))
    _forecasts(root, protocol, simulator, models, evidence, tick)
    _closed_loop(root, protocol, simulator, models, evidence, tick)
    _other_envs(root, protocol, evidence, tick, users)
    tables = compute_tables(protocol, evidence)
    reports, _ = decisions(protocol, evidence.heldout)
    for model_id, report in reports.items():
        report.save_json(root / "reports" / f"{slug(model_id)}.report.json")
    write_json(root / "tables.json", tables)
    tick("reports")
    from onrecord.dynamics.experiment._plots import write_plots

    write_plots(root / "plots", tables)
    tick("plots")
    write_manifest(root)
    return tables


def _check_new(root: Path) -> None:
    if root.exists() and not root.is_dir():
        raise InputError(f"--output-dir {root} is a file, not a directory: choose a new directory")
    if not root.exists() or not any(root.iterdir()):
        return
    if (root / "protocol.json").is_file() and not (root / "manifest.json").exists():
        raise InputError(
            f"--output-dir {root} holds an interrupted run (protocol.json but no "
            "manifest.json); it cannot be replayed or continued: delete it or choose a "
            "new directory"
        )
    raise InputError(
        f"--output-dir {root} is not empty; a run directory is written once "
        "and never overwritten: choose a new directory"
    )


def _of(users: Sequence[UserModel], simulator: Simulator) -> list[WorldModel]:
    """The user models built for ``simulator``'s environment, in ``--model`` order."""
    return [u.models[simulator.env_id] for u in users if simulator.env_id in u.models]


def _fit_all(root: Path, models: list[WorldModel], transitions: Transitions) -> list[WorldModel]:
    """Fit every model and save its description; a user model whose fit raised is
    replaced by a stand-in whose forecasts and runs are all that model's errors."""
    result = []
    for model in models:
        model, description = fitted(model, transitions)
        write_json(root / "models" / f"{slug(model.model_id)}.json", description)
        result.append(model)
    return result


def _data_and_models(
    root: Path,
    protocol: dict[str, Any],
    simulator: Simulator,
    tick: Step,
    users: list[WorldModel],
) -> list[WorldModel]:
    seeds = protocol["seeds"]
    train, _ = _references(simulator, seeds["train"], protocol["train_plan_length"], "train")
    save_episodes(root / "data" / "train.episodes.jsonl", train)
    tick("training data")
    transitions = Transitions.from_episodes(train)
    models = _fit_all(root, [*build_models(simulator), *users], transitions)
    tick("models")
    return models


def _forecasts(
    root: Path,
    protocol: dict[str, Any],
    simulator: Simulator,
    models: list[WorldModel],
    evidence: Evidence,
    tick: Step,
) -> None:
    seeds, length, horizons = (
        protocol["seeds"],
        protocol["reference_plan_length"],
        protocol["horizons"],
    )
    for split, target in (("development", evidence.development), ("heldout", evidence.heldout)):
        episodes, plans = _references(simulator, seeds[split], length, split)
        save_episodes(root / "data" / f"{split}.episodes.jsonl", episodes)
        for model in models:
            target[model.model_id] = _forecast(model, simulator, episodes, plans, horizons)
            save_forecasts(
                root / "forecasts" / split / f"{slug(model.model_id)}.jsonl", target[model.model_id]
            )
        tick(f"{split} forecasts")
    starts = np.array([s for f in evidence.heldout[models[0].model_id][:200] for s in f.truth[:1]])
    pairs_cfg = protocol["pairs"]
    for kind, key, target_pairs in (
        ("action", "interventions", evidence.interventions),
        ("offset", "persistence", evidence.persistence),
    ):
        count = pairs_cfg[key]
        chosen = [starts[i % len(starts)].tolist() for i in range(count)]
        pairs = capture_pairs(
            simulator,
            chosen,
            kind=kind,
            length=pairs_cfg["length"],
            seed=seeds[key],
            offset=pairs_cfg["persistence_offset"],
        )
        save_episodes(
            root / "data" / f"{key}.episodes.jsonl", [e for p in pairs for e in (p.base, p.variant)]
        )
        for model in models:
            base, variant = _pair_forecasts(model, simulator, pairs, pairs_cfg["horizons"])
            target_pairs[model.model_id] = (base, variant)
            save_forecasts(root / "forecasts" / key / f"{slug(model.model_id)}.base.jsonl", base)
            save_forecasts(
                root / "forecasts" / key / f"{slug(model.model_id)}.variant.jsonl", variant
            )
        tick(key)


def _closed_loop(
    root: Path,
    protocol: dict[str, Any],
    simulator: Simulator,
    models: list[WorldModel],
    evidence: Evidence,
    tick: Step,
) -> None:
    planner = ExhaustivePlanner(protocol["planner"]["length"])
    for model in models:
        runs = run_closed_loop(
            simulator,
            model,
            planner,
            seeds=protocol["seeds"]["planning"],
            max_steps=protocol["max_steps"],
        )
        evidence.closed_loop.extend(runs)
        save_episodes(
            root / "data" / "closed_loop" / f"{slug(model.model_id)}.episodes.jsonl",
            [r.episode for r in runs],
        )
        save_runs(root / "closed_loop" / f"{slug(model.model_id)}.jsonl", runs)
        tick(f"closed loop {model.model_id}")


def _other_envs(
    root: Path,
    protocol: dict[str, Any],
    evidence: Evidence,
    tick: Step,
    users: Sequence[UserModel],
) -> None:
    seeds = protocol["seeds"]
    for env_id in protocol["other_envs"]:
        simulator = get_simulator(env_id)
        train, _ = _references(simulator, seeds["other_train"], 100, f"{env_id}-train")
        heldout, plans = _references(
            simulator,
            seeds["other_heldout"],
            protocol["reference_plan_length"],
            f"{env_id}-heldout",
        )
        save_episodes(root / "data" / env_id / "train.episodes.jsonl", train)
        save_episodes(root / "data" / env_id / "heldout.episodes.jsonl", heldout)
        transitions = Transitions.from_episodes(train)
        per: dict[str, list[ForecastEvidence]] = {}
        # Fitted models are not saved for these environments (only their forecasts are).
        for model in [*build_models(simulator), *_of(users, simulator)]:
            model, _ = fitted(model, transitions)
            per[model.model_id] = _forecast(model, simulator, heldout, plans, protocol["horizons"])
            save_forecasts(
                root / "forecasts" / env_id / f"{slug(model.model_id)}.jsonl", per[model.model_id]
            )
        evidence.other[env_id] = per
        tick(env_id)
