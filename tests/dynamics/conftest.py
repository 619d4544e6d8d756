"""Shared fixtures: real CartPole references and fitted models, and a world-model smoke
run beside a user model (each built once per session, that is once per test worker)."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from onrecord.dynamics import (
    BayesianLinearModel,
    BootstrapEnsembleModel,
    PersistenceModel,
    Simulator,
    Transitions,
    capture_forecasts,
    get_simulator,
)
from onrecord.dynamics._references import capture_plan, random_plan
from onrecord.dynamics.experiment._store import read_json
from tests.cli_process import onrecord
from tests.conftest import _fingerprint, _set_writable


@pytest.fixture(scope="session")
def cartpole() -> Simulator:
    return get_simulator("CartPole-v1")


def references(
    simulator: Simulator, seeds: range, length: int
) -> tuple[list[Any], list[list[Any]]]:
    plans = [random_plan(simulator, length, np.random.default_rng(s)) for s in seeds]
    episodes = [
        capture_plan(simulator, plan, case_id=f"ref-{s}", seed=s)
        for s, plan in zip(seeds, plans, strict=True)
    ]
    return episodes, plans


@pytest.fixture(scope="session")
def training(cartpole: Simulator) -> Transitions:
    episodes, _ = references(cartpole, range(1000, 1030), 60)
    return Transitions.from_episodes(episodes)


@pytest.fixture(scope="session")
def heldout(cartpole: Simulator) -> tuple[list[Any], list[list[Any]]]:
    return references(cartpole, range(2000, 2030), 32)


@pytest.fixture(scope="session")
def models(cartpole: Simulator, training: Transitions) -> dict[str, Any]:
    fitted: dict[str, Any] = {
        "persistence": PersistenceModel(cartpole),
        "action": BayesianLinearModel(cartpole),
        "blind": BayesianLinearModel(cartpole, action_conditioned=False),
        "ensemble": BootstrapEnsembleModel(cartpole, members=4, particles=2),
    }
    for model in fitted.values():
        model.fit(training)
    return fitted


@pytest.fixture(scope="session")
def forecasts(cartpole: Simulator, heldout: Any, models: dict[str, Any]) -> dict[str, Any]:
    """Every model's forecasts of the held-out references, horizons 1 to 32."""
    episodes, plans = heldout
    return {
        name: capture_forecasts(
            episodes,
            model,
            model_id=name,
            contract=cartpole.contract,
            coordinates=cartpole.coordinates,
            horizons=[1, 4, 8, 16, 32],
            planned_actions=plans,
        )
        for name, model in models.items()
    }


SOMETIMES_NAN = """
import numpy as np
from onrecord.dynamics import BayesianLinearModel, Prediction


class SometimesNaN:  # NaN from states leaning right: fails some references and seeds
    model_id = "sometimes-nan/v1"

    def __init__(self, simulator):
        self.inner = BayesianLinearModel(simulator)

    def fit(self, transitions):
        self.inner.fit(transitions)

    def predict(self, initial_states, actions, *, uncertainty=True):
        mean = np.array(self.inner.predict(initial_states, actions).mean, dtype=np.float64)
        mean[initial_states[:, 2] > 0.03] = np.nan
        return Prediction(mean)

    def describe(self):
        return {"kind": "sometimes-nan"}


def factory(simulator):
    return SometimesNaN(simulator) if simulator.env_id == "CartPole-v1" else None
"""


@pytest.fixture(scope="session")
def _sometimes_nan_run(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[dict[str, Any], str]]:
    """One ``onrecord worldmodel run --smoke --model sometimes_nan_models:factory`` (the
    user model ``SOMETIMES_NAN``, which fails some references, pairs and planning seeds)
    per test worker, made read-only, with the fingerprint of its files as made."""
    base = tmp_path_factory.mktemp("sometimes-nan")
    (base / "sometimes_nan_models.py").write_text(SOMETIMES_NAN)
    out = base / "run"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTHONPATH", str(base))
        done = onrecord(
            "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", out,
            "--model", "sometimes_nan_models:factory",
        )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (base / "sometimes_nan_models.py").unlink()  # replay and verify import nothing
    run = {"dir": out, "stdout": done.stdout, "tables": read_json(out / "tables.json")}
    _set_writable(out, writable=False)
    yield run, _fingerprint(out)
    _set_writable(out, writable=True)  # so pytest can remove it


@pytest.fixture
def sometimes_nan_run(_sometimes_nan_run: tuple[dict[str, Any], str]) -> Iterator[dict[str, Any]]:
    """The shared smoke run beside ``SOMETIMES_NAN``: ``dir``, the ``stdout`` of the run and
    its ``tables``. Read it only: after each test its files are compared with what was
    made (a test that changed them fails). Copy it (``tests.conftest.writable_copy``) to
    change it."""
    run, fingerprint = _sometimes_nan_run
    tables = run["tables"]
    yield {**run, "tables": copy.deepcopy(tables)}
    assert _fingerprint(run["dir"]) == fingerprint, "the test changed the shared run"
