"""Round 38 de-duplication: one angle wrap for errors, fitted changes and costs, and
a one-word label ("A:", "CL-100046:") kept with what it labels when a line wraps."""

from __future__ import annotations

import numpy as np
import pytest
from rich.console import Console

from onrecord.cli._lines import phrase_lines
from onrecord.dynamics._angles import wrap_angles
from onrecord.dynamics._envs import get_simulator
from onrecord.dynamics._models import BayesianLinearModel, RandomModel
from onrecord.dynamics._protocol import Transitions


def _half_turns(theta_changes: list[float]) -> Transitions:
    """Pendulum transitions from theta 0 whose theta changes by ``theta_changes``."""
    count = len(theta_changes)
    states = np.column_stack([np.zeros(count), np.linspace(-1.0, 1.0, count)])
    after = states.copy()
    after[:, 0] = theta_changes
    return Transitions(states, np.full((count, 1), 2.0), after)


def test_a_half_turn_change_is_fitted_with_the_sign_an_error_has() -> None:
    # Errors wrap to (-pi, pi]; the models' targets wrapped to [-pi, pi), so a change of
    # exactly pi was fitted as -pi: a random walk's spread counted it as a turn away.
    assert wrap_angles(np.array([[np.pi]]), np.array([True]))[0, 0] == np.pi
    walk = RandomModel(get_simulator("Pendulum-v1"))
    walk.fit(_half_turns([np.pi, 1.0]))
    assert walk.describe()["scale"][0] == pytest.approx((np.pi - 1.0) / 2)


def test_a_model_fitted_on_half_turns_predicts_a_half_turn_forward() -> None:
    model = BayesianLinearModel(get_simulator("Pendulum-v1"))
    model.fit(_half_turns([np.pi] * 8))
    mean = model.predict(np.zeros((1, 2)), np.full((1, 1, 1), 2.0)).mean
    assert mean[0, 0, 0] == pytest.approx(np.pi, abs=1e-6)


def test_a_one_word_label_never_ends_a_wrapped_line() -> None:
    console = Console(width=200)
    sentence = "the refund posted twice; CL-100046: expected 1 entry, found 2"
    for width in range(14, 40):
        lines = phrase_lines(console, [sentence], width, indent=0, hanging=2, sep=" ")
        plain = [line.plain.rstrip() for line in lines]
        assert not any(line.endswith("CL-100046:") for line in plain), (width, plain)
        assert " ".join(line.strip() for line in plain) == sentence


def test_a_label_first_keeps_its_first_word_at_a_narrow_width() -> None:
    lines = phrase_lines(
        Console(width=200), ["A: double_poster on remittance"], 14, indent=0, hanging=2, sep=" "
    )
    assert lines[0].plain == "A: double_poster"
