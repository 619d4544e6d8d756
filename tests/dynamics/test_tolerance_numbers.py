"""Tolerances must be finite non-negative numbers; any other value is an ``InputError``
naming where it was given, never a Python error from inside the check."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from onrecord.dynamics_metrics import normalize_tolerances
from onrecord.errors import InputError

COORDINATES = {"theta": "rad", "theta_dot": "rad/s"}


@pytest.mark.parametrize("value", [10**400, -(10**400), -1, float("inf"), np.float64("nan")])
def test_out_of_range_tolerance_is_an_input_error_naming_it(value: Any) -> None:
    # Before: 10**400 raised OverflowError from math.isfinite, naming nothing.
    with pytest.raises(InputError, match=r"tolerances\['theta'\]\[4\] must be a finite"):
        normalize_tolerances({"theta": {"h4": value, "*": 1.0}}, COORDINATES, (1, 4))


@given(st.integers(min_value=0, max_value=10**300) | st.fractions(min_value=0, max_value=10**6))
def test_any_non_negative_whole_or_rational_tolerance_is_kept_as_its_float(
    value: int | Fraction,
) -> None:
    table = normalize_tolerances({"theta": value}, COORDINATES, (1, 4))
    assert table == {"theta": {1: float(value), 4: float(value)}}
