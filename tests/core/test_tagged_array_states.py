"""A state that is one tagged array (``{"$ndarray": {"dtype", "shape", "data"}}``, what
``to_portable`` makes of an array and the runner's default observer returns) is kept
without being parsed back: its dtype is the one string value allowed. Anything else
written as text inside it is still refused at its path, on the step path and on the
reads after reset and before cleanup alike."""

from __future__ import annotations

from typing import Any

import numpy as np
import orjson
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as npst

from onrecord._canonical import (
    NDARRAY_TAG,
    canonical_bytes,
    from_portable,
    only_dtype_string,
    state_bytes,
    to_portable,
)
from onrecord.errors import PortabilityError
from tests.core.test_portable_types import FOREIGN, _one_step_observing


def _tagged(dtype: Any = "<f8", shape: Any = None, data: Any = None) -> dict[str, Any]:
    return {
        NDARRAY_TAG: {
            "dtype": dtype,
            "shape": [2] if shape is None else shape,
            "data": [0.25, -1.5] if data is None else data,
        }
    }


def _where(name: str, part: str) -> tuple[dict[str, Any], str]:
    """A tagged array with a foreign object as its dtype, in its shape or in its data."""
    foreign = FOREIGN[name]
    if part == "dtype":
        return _tagged(dtype=foreign), r'\$\.state\["\$ndarray"\]\.dtype holds a '
    if part == "shape":
        return _tagged(shape=[foreign]), r'\$\.state\["\$ndarray"\]\.shape\[0\] holds a '
    return _tagged(data=[0.25, foreign]), r'\$\.state\["\$ndarray"\]\.data\[1\] holds a '


@pytest.mark.parametrize("part", ["dtype", "shape", "data"])
@pytest.mark.parametrize("name", sorted(FOREIGN))
def test_a_foreign_object_inside_a_tagged_array_is_refused_at_its_path(
    name: str, part: str
) -> None:
    state, where = _where(name, part)
    with pytest.raises(PortabilityError, match=where):
        state_bytes(state, "$.state")
    episode = _one_step_observing(state)
    assert episode.states() == [None, None, None]  # after reset, the step, before cleanup
    assert episode.data["steps"]["observer_error"][0] is not None
    assert episode.data["initial"]["observer_error"] is not None
    assert episode.coverage_issues


def test_only_the_dtype_may_be_text() -> None:
    clean = _tagged()
    assert only_dtype_string(clean, orjson.dumps(clean))
    for other in (
        _tagged(data=["a", 1.0]),  # text in the data: not this shortcut's to judge
        _tagged(dtype=5),  # the one string is not the dtype
        {**clean, "label": "x"},  # the array beside something else
        {NDARRAY_TAG: {**clean[NDARRAY_TAG], "note": "x"}},
        _tagged(dtype='<f8"'),  # an escaped quote inside it
    ):
        assert not only_dtype_string(other, orjson.dumps(other)), other


NUMERIC = st.sampled_from(["<f8", "<f4", "<i8", "|u1", "|b1"])


@given(NUMERIC.flatmap(lambda d: npst.arrays(d, npst.array_shapes(max_dims=3, max_side=4))))
def test_property_a_tagged_array_state_is_kept_exactly(array: np.ndarray) -> None:
    # A non-finite state is refused, as tested elsewhere: not an example of this one.
    assume(array.dtype.kind != "f" or bool(np.isfinite(array).all()))
    state = to_portable(array, "$.state")
    assert state_bytes(state, "$.state") == canonical_bytes(state)
    episode = _one_step_observing(state)
    kept = episode.states()
    assert len(kept) == 3
    for each in kept:
        restored = from_portable(each)
        assert restored.dtype == array.dtype
        assert np.array_equal(restored, array)
