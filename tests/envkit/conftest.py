from __future__ import annotations

from collections.abc import Iterator

import pytest

from onrecord.envkit import Snapshot, ToolWorld

from . import claims_env


@pytest.fixture(scope="session")
def snap() -> Snapshot:
    return claims_env.snapshot()


@pytest.fixture
def world(snap: Snapshot) -> Iterator[ToolWorld]:
    with claims_env.world(snap) as built:
        yield built
