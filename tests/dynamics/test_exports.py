"""The public modules export a curated, sorted API."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize(
    "name", ["onrecord.dynamics", "onrecord.dynamics_metrics", "onrecord.dynamics.experiment"]
)
def test_all_is_sorted_and_complete(name: str) -> None:
    module = importlib.import_module(name)
    exported = module.__all__
    # isort order, as ruff's RUF022 keeps it: CONSTANTS, then Classes, then functions.
    assert exported == sorted(exported, key=lambda n: (not n.isupper(), not n[0].isupper(), n))
    public = {
        key
        for key, value in vars(module).items()
        if not key.startswith("_")
        and getattr(value, "__module__", "").startswith("onrecord.")
        and not isinstance(value, type(module))
    }
    assert public <= set(exported)
    for item in exported:
        assert (
            getattr(module, item).__module__.startswith(name.rsplit(".", 1)[0])
            if hasattr(getattr(module, item), "__module__")
            else True
        )
