"""World-model scoring without its optional packages says which ``pip install`` brings
them, before any work: a ``worldmodel run`` without SciPy ran its whole experiment, then
stopped with a bare ``ModuleNotFoundError`` while aggregating.

Each case is a real process in which the packages cannot be imported (``sys.modules``
holds ``None`` for them, as for a package that is not installed)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from onrecord.dynamics import save_forecasts

BLOCKED = "import sys\nfor name in {names!r}:\n    sys.modules[name] = None\n"


def _without(names: list[str], code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCKED.format(names=names) + code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _cli(names: list[str], *args: str) -> subprocess.CompletedProcess[str]:
    code = "from onrecord.cli.main import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", BLOCKED.format(names=names) + code, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("blocked", "install"),
    [
        (["scipy", "matplotlib"], "SciPy and matplotlib: pip install 'onrecord[dynamics,plot]'"),
        (["matplotlib"], "matplotlib: pip install 'onrecord[plot]'"),
        (["scipy"], "SciPy: pip install 'onrecord[dynamics]'"),
    ],
)
def test_worldmodel_run_names_the_missing_extras_before_running(
    blocked: list[str], install: str, tmp_path: Path
) -> None:
    out = tmp_path / "run"
    done = _cli(blocked, "worldmodel", "run", "--smoke", "--no-progress", "--output-dir", str(out))
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"onrecord's world-model experiment needs {install}" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
    assert not out.exists()  # nothing run, nothing written


def test_replay_without_scipy_names_the_extra(smoke_world_model_run: Path) -> None:
    done = _cli(["scipy"], "worldmodel", "analyze", "--replay", str(smoke_world_model_run))
    assert done.returncode == 3, done.stdout + done.stderr
    assert "replaying a world-model run needs SciPy: pip install 'onrecord[dynamics]'" in (
        done.stderr
    )
    # Matplotlib is not asked for: a replay draws nothing.
    replayed = _cli(["matplotlib"], "worldmodel", "analyze", "--replay", str(smoke_world_model_run))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr


def test_aggregate_metrics_without_scipy_raises_an_input_error(
    forecasts: dict[str, Any], tmp_path: Path
) -> None:
    saved = save_forecasts(tmp_path / "forecasts.jsonl", forecasts["action"][:3])
    code = f"""
from onrecord.dynamics import load_forecasts
from onrecord.dynamics_metrics import aggregate_metrics, forecast_metrics
from onrecord.errors import InputError

forecasts = load_forecasts({str(saved)!r})
forecast_metrics(forecasts[0])  # one forecast's numbers need nothing optional
try:
    aggregate_metrics(forecasts)
except InputError as error:
    print(error)
"""
    done = _without(["scipy"], code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "scoring forecasts with standard deviations needs SciPy: pip install 'onrecord[dynamics]'"
    )
