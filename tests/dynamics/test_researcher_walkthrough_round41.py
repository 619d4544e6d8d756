"""A world-model researcher following docs/world-models.md with their own model, making
the mistakes a researcher makes, through the real ``onrecord worldmodel`` command and
real CartPole.

- A factory that returns its model's class instead of an instance (``return LinearDelta``)
  passed for a WorldModel (a class has ``model_id``, ``fit``, ``predict``, ``describe``),
  and every forecast and run of the whole experiment was then a ``model_error``.
- A model whose ``predict`` dropped the coordinate axis was counted in the tables
  (``0/0 (40 of 40 failed)``, ``3 failed runs``) without the reason, which was only in
  the run's JSON Lines.
- The held-out table's MAE column mixed m/s and rad with no unit anywhere.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.cli_process import onrecord

WIDE = 400  # every reason on one line (narrower, they wrap under their start)

MODULES = """
import numpy as np
from onrecord.dynamics import Prediction


class LinearDelta:  # docs/world-models.md's own model
    model_id = "linear-delta/v1"

    def __init__(self, simulator):
        self.simulator, self.weights = simulator, None

    def fit(self, transitions):
        inputs = self.features(transitions.states, transitions.actions)
        change = transitions.next_states - transitions.states
        self.weights = np.linalg.lstsq(inputs, change, rcond=None)[0]

    def predict(self, initial_states, actions, *, uncertainty=True):
        state, states = initial_states, []
        for step in range(actions.shape[1]):
            state = state + self.features(state, actions[:, step]) @ self.weights
            states.append(state)
        return Prediction(np.stack(states, axis=1))

    def describe(self):
        return {"kind": "linear-delta"}

    def features(self, states, actions):
        encoded = self.simulator.action_features(actions).reshape(len(states), -1)
        return np.hstack([states, encoded, np.ones((len(states), 1))])


class DropsCoordinates(LinearDelta):  # [N, H] instead of [N, H, d]
    model_id = "drops-coordinates/v1"

    def predict(self, initial_states, actions, *, uncertainty=True):
        return Prediction(super().predict(initial_states, actions).mean[..., 0])


def forgot_parentheses(simulator):
    return LinearDelta
"""


@pytest.fixture(scope="module")
def modules(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("researcher-models")
    (folder / "researcher_models.py").write_text(MODULES)
    return folder


@pytest.fixture(scope="module")
def failing_run(modules: Path) -> dict[str, Any]:
    out = modules / "run"
    done = onrecord(
        "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", out,
        "--model", "researcher_models:DropsCoordinates", pythonpath=modules, columns=WIDE,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return {"dir": out, "stdout": done.stdout}


def test_a_factory_returning_its_class_is_refused_before_anything_is_written(
    modules: Path,
) -> None:
    out = modules / "never-written"
    done = onrecord(
        "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", out,
        "--model", "researcher_models:forgot_parentheses", pythonpath=modules,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    assert not out.exists()
    message = " ".join(done.stderr.split())
    assert "--model researcher_models:forgot_parentheses returned the class LinearDelta" in (
        message
    )
    assert "return an instance (LinearDelta(...))" in message
    assert "'researcher_models:LinearDelta'" in message  # the class as the factory works


def _why(stdout: str) -> list[str]:
    assert "why models failed (left out of the tables above, never scored):" in stdout, stdout
    return stdout.split("why models failed", 1)[1].splitlines()[1:]


@pytest.mark.parametrize("command", ["run", "analyze"])
def test_the_reason_a_model_failed_is_printed_under_the_tables(
    failing_run: dict[str, Any], command: str
) -> None:
    if command == "run":
        stdout = failing_run["stdout"]
    else:  # the replay reads the reasons from the saved evidence alone
        replayed = onrecord(
            "worldmodel", "analyze", "--no-progress", "--replay", failing_run["dir"], columns=WIDE
        )
        assert replayed.returncode == 0, replayed.stdout + replayed.stderr
        stdout = replayed.stdout
    # The tables still count the failures.
    counted = r"│ drops-coordinates/v1 +│ cart_velocity │ 1 │ 0/0 \(40 of 40 failed\)"
    assert re.search(counted, stdout), stdout
    lines = _why(stdout)
    heldout = failing_run["dir"] / "forecasts" / "heldout" / "drops-coordinates_v1.jsonl"
    loop = failing_run["dir"] / "closed_loop" / "drops-coordinates_v1.jsonl"
    # At WIDE columns each reason is one line, the file holding every error the next.
    at = lines.index(
        "  drops-coordinates/v1: 40 of 40 held-out forecasts failed: mean has shape [40, 32], "
        "expected [40, 32, 4] (references, actions, coordinates)"
    )
    assert lines[at + 1] == f"    every error: {heldout}", stdout
    at = lines.index(
        "  drops-coordinates/v1: 3 of 3 closed-loop runs failed: the model predicted states "
        "of shape [256, 8] for 256 plans of 8 actions from a 4-number state; predict must "
        "return [plans, actions, coordinates] = [256, 8, 4]"
    )
    assert lines[at + 1] == f"    every error: {loop}", stdout
    # Only the failing model has lines: the built-ins answered every reference and seed.
    assert all("drops-coordinates" in line for line in lines[:4]), stdout
    assert lines[4].startswith("run written to") or lines[4].startswith("verified "), stdout


def test_the_forecast_table_names_its_units(failing_run: dict[str, Any]) -> None:
    stdout = failing_run["stdout"]
    table_end = stdout.split("held-out forecasts (CartPole)", 1)[1]
    after_table = table_end.split("┘", 1)[1].lstrip("\n").splitlines()
    assert after_table[0] == (
        "MAE, width90 and CRPS: cart_velocity in m/s, pole_angle in rad; h: steps ahead"
    )
    assert "matched interventions: cart_velocity (m/s), h1" in stdout


def test_a_long_reason_wraps_under_its_start_in_a_narrow_log(
    failing_run: dict[str, Any],
) -> None:
    replayed = onrecord(
        "worldmodel", "analyze", "--no-progress", "--replay", failing_run["dir"], columns=80
    )
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    lines = _why(replayed.stdout)
    section = lines[: next(i for i, line in enumerate(lines) if not line.startswith("  "))]
    reasons = [line for line in section if not line.startswith("    every error: ")]
    assert len(reasons) > 2, section  # the closed-loop reason needs three lines at 80
    assert all(len(line) <= 80 and line.startswith("  ") for line in reasons), section
    joined = " ".join(line.strip() for line in reasons)
    assert "predict must return [plans, actions, coordinates] = [256, 8, 4]" in joined
