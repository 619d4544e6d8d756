"""onrecord: evaluate agents and world models by what actually happened in the environment."""

from importlib.metadata import PackageNotFoundError, version

from onrecord.case import EvalCase

try:
    __version__ = version("onrecord")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0+unknown"

__all__ = ["EvalCase", "__version__"]
