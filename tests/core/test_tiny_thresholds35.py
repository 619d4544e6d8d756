"""A policy threshold is printed as written, however small: never rounded onto 0."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from onrecord._numbers import rate_percent, threshold_percent


def test_a_tiny_threshold_is_not_printed_as_zero() -> None:
    # Before: "0.0%", and a measured 0% failing it read "0.0% ... ≥ 0.0%".
    assert threshold_percent(1e-12) == "1e-10%"
    assert rate_percent(0.0, 1e-12) == "0.0%"
    assert float(rate_percent(0.0, 1e-12)[:-1]) < float(threshold_percent(1e-12)[:-1])


def test_usual_thresholds_keep_their_short_form() -> None:
    assert [threshold_percent(v) for v in (0.95, 0.9995, 0.7, 1.0)] == [
        "95.0%",
        "99.95%",
        "70.0%",
        "100.0%",
    ]


@given(st.floats(min_value=1e-300, max_value=1.0, allow_nan=False))
def test_every_threshold_reads_back_as_itself(value: float) -> None:
    shown = threshold_percent(value)
    assert shown.endswith("%")
    assert math.isclose(float(shown[:-1]), value * 100, rel_tol=1e-7), (value, shown)
