"""Settings every test relies on, whichever shell started the suite."""

from __future__ import annotations

import signal

import pytest

# A shell without job control starts background commands (`make test &`, `nohup`) with
# Ctrl-C ignored, and exec'd children inherit that: Python then installs no
# KeyboardInterrupt handler, and every test of what a Ctrl-C does would fail on how the
# suite was launched, not on onrecord. With Python's own handler set here, the children
# the tests start get the default action back (a handled signal is reset on exec; an
# ignored one is not).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``), keep each
    module's tests on one worker, so a module-scoped fixture (a world-model run, a
    browser page, a Ray cluster) is built once, not once per worker; and run every Ray
    test on one worker, so two local clusters never compete for the same two cores."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    for item in items:
        group = "ray" if item.get_closest_marker("ray") else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))
