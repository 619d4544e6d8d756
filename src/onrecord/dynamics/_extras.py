"""The optional packages world-model scoring needs (``pip install 'onrecord[dynamics]'``
for SciPy, ``'onrecord[plot]'`` for matplotlib), asked for before any work: without
them a ``worldmodel run`` ran its whole experiment, then stopped with a bare
``ModuleNotFoundError`` while aggregating."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from onrecord.errors import InputError

__all__ = ["normal_cdf", "require_extras"]

_EXTRAS = {"scipy.special": ("SciPy", "dynamics"), "matplotlib": ("matplotlib", "plot")}


def require_extras(what: str, *, plots: bool) -> None:
    """Raise ``InputError`` naming the one ``pip install`` that brings every missing
    package ``what`` needs (SciPy; matplotlib too when it draws ``plots``)."""
    needed = ["scipy.special", "matplotlib"] if plots else ["scipy.special"]
    missing = [module for module in needed if not _importable(module)]
    if missing:
        names = " and ".join(_EXTRAS[module][0] for module in missing)
        extras = ",".join(_EXTRAS[module][1] for module in missing)
        raise InputError(f"{what} needs {names}: pip install 'onrecord[{extras}]'")


def normal_cdf() -> Callable[[Any], Any]:
    """SciPy's standard normal CDF (``ndtr``), or ``InputError`` saying how to get it."""
    require_extras("scoring forecasts with standard deviations", plots=False)
    from scipy.special import ndtr

    return ndtr  # type: ignore[no-any-return]


def _importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True
