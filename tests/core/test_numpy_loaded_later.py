"""NumPy imported after onrecord: the value codecs do not import NumPy themselves (reading
records needs none, see ``onrecord._loaded``), so a program that imports onrecord first
and NumPy afterwards must still have its NumPy values stored exactly, and the fast walk
take NumPy floats once it has met one."""

from __future__ import annotations

import json
import subprocess
import sys

_PROGRAM = """\
import json, sys
from onrecord import _portable
from onrecord._canonical import canonical_bytes, state_bytes, to_portable
assert "numpy" not in sys.modules, "onrecord imported NumPy"
before = len(_portable._FLOATS)
import numpy as np
info = {"x": np.float32(1.5), "xs": [np.float64(0.25), np.float32(2.0)], "n": np.int64(3),
        "a": np.arange(3, dtype=np.int16), "flag": np.bool_(True)}
first = to_portable(info)
after = len(_portable._FLOATS)
again = to_portable({"y": [np.float64(0.5), np.float32(0.75)]})
big = np.arange(4, dtype=">f8")  # big-endian: orjson refuses it without its hook
print(json.dumps({
    "before": before, "after": after, "first": first, "again": again,
    "state": state_bytes({"s": [np.float32(0.1), big]}).decode(),
    "canonical": canonical_bytes(first).decode(),
}))
"""


def test_numpy_values_made_after_onrecord_is_imported_are_stored_exactly() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["first"] == {
        "x": 1.5,
        "xs": [0.25, 2.0],
        "n": 3,
        "a": {"$ndarray": {"dtype": "<i2", "shape": [3], "data": [0, 1, 2]}},
        "flag": True,
    }
    assert result["again"] == {"y": [0.5, 0.75]}
    # The fast walk knew only Python's float, then NumPy's two exact ones too.
    assert (result["before"], result["after"]) == (1, 3)
    assert result["state"] == '{"s":[0.1,[0.0,1.0,2.0,3.0]]}'
    assert result["canonical"].startswith('{"a":{"$ndarray":')
