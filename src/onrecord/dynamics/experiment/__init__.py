"""The world-model experiment behind ``onrecord worldmodel run`` and ``analyze``."""

from onrecord.dynamics.experiment._analyze import replay
from onrecord.dynamics.experiment._protocol import HORIZONS, build_protocol
from onrecord.dynamics.experiment._run import run_experiment

__all__ = ["HORIZONS", "build_protocol", "replay", "run_experiment"]
