"""A FIFO given as a report, a policy or an episode is refused at once (exit 3, naming
it), never waited on: `gate FIFO`, `compare FIFO FIFO` and `--policy FIFO` blocked for
ever, as `verify` did before it read only regular files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.episode import EpisodeEvidence
from onrecord.errors import SchemaError
from onrecord.report import EvaluationReport
from tests.cli_process import onrecord


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "load", [EvaluationReport.load, AcceptancePolicy.load, EpisodeEvidence.load]
)
def test_loading_a_fifo_is_refused_not_waited_on(fifo: Path, load: object) -> None:
    with pytest.raises(SchemaError, match=r"pipe\.json is a FIFO \(named pipe\), not a regular"):
        load(fifo)  # type: ignore[operator]


def test_the_commands_refuse_a_fifo_naming_it(fifo: Path, tmp_path: Path) -> None:
    policy = AcceptancePolicy((CheckRequirement("posted"),)).save_json(tmp_path / "p.json")
    for args in (("gate", fifo, "--policy", policy), ("compare", fifo, fifo)):
        done = onrecord(*args, timeout=60)  # a hang fails here, not in CI's own timeout
        assert done.returncode == 3, done.stderr
        assert f"{fifo} is a FIFO (named pipe), not a regular file" in done.stderr
        assert "Traceback" not in done.stderr
