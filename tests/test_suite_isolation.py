"""The suite's own isolation (``tests/conftest.py``): each test's processes, and its own
process, get a ``TMPDIR`` of their own, empty at its start, so what one test's killed
``onrecord`` left there (and the notice a later run prints on removing it) never reaches
another."""

from __future__ import annotations

import os
import tempfile

import pytest

_SEEN: list[str] = []


@pytest.mark.parametrize("turn", [0, 1, 2])
def test_each_test_has_an_empty_tmpdir_of_its_own(turn: int) -> None:
    folder = os.environ["TMPDIR"]
    assert os.path.isdir(folder)
    assert os.listdir(folder) == []
    assert folder not in _SEEN
    assert tempfile.gettempdir() == folder  # onrecord called in the test's process too
    _SEEN.append(folder)
    with open(os.path.join(folder, f"left-by-{turn}"), "w"):  # the next test must not see it
        pass
