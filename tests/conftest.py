"""Settings every test relies on, whichever shell started the suite."""

from __future__ import annotations

import atexit
import copy
import gc
import hashlib
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import settings

# No Hypothesis deadline (200 ms an example by default): it is a timing assertion, and on
# a loaded 2-core CI machine an example slowed past it fails as "Unreliable test timings"
# when it runs in time again. And the same examples on every run (derandomize): CI
# gates releases on the suite, so a run passes or fails for the code, not for the
# examples drawn that time. `ONRECORD_HYPOTHESIS=explore make test` draws new ones. A
# test that sets its own settings keeps them.
settings.register_profile("onrecord", deadline=None, derandomize=True)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("ONRECORD_HYPOTHESIS", "onrecord"))

# A shell without job control starts background commands (`make test &`, `nohup`) with
# Ctrl-C ignored, and exec'd children inherit that: Python then installs no
# KeyboardInterrupt handler, and every test of what a Ctrl-C does would fail on how the
# suite was launched, not on onrecord. With Python's own handler set here, the children
# the tests start get the default action back (a handled signal is reset on exec; an
# ignored one is not).
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(
    item: pytest.Item, nextitem: pytest.Item | None
) -> Generator[None, object, object]:
    """Each test's processes get a ``TMPDIR`` of their own. Tests kill ``onrecord``
    outright (``kill -9``, a timeout) and leave its scratch directories behind; a run
    or regrade started by a later test sweeps those it finds and says so on stdout
    ("removed 4 scratch directories a killed onrecord left in ..."), so that test's
    output depended on what another test, on either worker, had killed before it."""
    factory = getattr(item.config, "_tmp_path_factory", None)  # tmp_path_factory's
    if factory is not None:  # pytest's base for tmp_path: in the machine's TMPDIR, as ever
        factory.getbasetemp()
    before = os.environ.get("TMPDIR"), tempfile.tempdir
    own = tempfile.mkdtemp(prefix="t", dir=_tests_tmpdir(item.config))
    # And the test's own process: onrecord called in-process sweeps (and writes) there.
    os.environ["TMPDIR"] = tempfile.tempdir = own
    try:
        return (yield)
    finally:
        if before[0] is None:
            del os.environ["TMPDIR"]
        else:
            os.environ["TMPDIR"] = before[0]
        tempfile.tempdir = before[1]


def _tests_tmpdir(config: pytest.Config) -> str:
    """The directory holding this worker's tests' ``TMPDIR``s, removed at its exit."""
    root: str | None = getattr(config, "_onrecord_tmpdir", None)
    if root is None:
        root = tempfile.mkdtemp(prefix="ort-")  # short: Ray puts sockets under it
        config._onrecord_tmpdir = root  # type: ignore[attr-defined]
        # At the worker's exit, not pytest's cleanup: that once did not run in a worker.
        atexit.register(shutil.rmtree, root, ignore_errors=True)
    return root


FREEZE_EVERY = 100
"""Tests between two full collections whose survivors are then frozen (``gc.freeze``).
A test worker's heap grows to ~600k objects that live across tests (caches, shared runs,
imported modules), and Python's own full collections, ~100 a worker, scanned them all:
up to 1.3 s each, ~45 s a worker, and one outlasted an episode's 0.5 s time limit in CI.
Frozen, they are not scanned; unfrozen and collected again every ``FREEZE_EVERY`` tests,
so cyclic garbage of earlier tests is still freed."""
_finished_tests = [0]
# And a full collection considered after every 100 collections of the middle generation
# rather than 10: with the heap frozen, the unfrozen part a full collection waits to grow
# by a quarter is small, so one came after nearly every 10 (~250 a worker, ~0.1 s each).
gc.set_threshold(700, 10, 100)


def pytest_runtest_logfinish(nodeid: str, location: tuple[str, int | None, str]) -> None:
    _finished_tests[0] += 1
    if _finished_tests[0] % FREEZE_EVERY == 0:
        gc.unfreeze()
        gc.collect()
        gc.freeze()


# tryfirst: the marks must be in place before pytest-xdist's own hook of this name reads
# them (a mark added after it groups nothing).
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test`` runs ``-n 2 --dist loadgroup``), keep each
    module's tests on one worker, so a module-scoped fixture (a world-model run, a
    browser page, a Ray cluster) is built once, not once per worker; keep the modules
    using one session-scoped world-model run on one worker, for the same reason; and run
    every Ray test on one worker, so two local clusters never compete for the same two
    cores."""
    if not config.pluginmanager.hasplugin("xdist"):
        return
    # A module using one of the session runs joins that run's group, whole, so the run
    # (5 to 10 s or more) is made by one worker, not by each: the modules using one run
    # take about a minute in all, well under half of the suite's time on a worker.
    shared: dict[str, str] = {}
    for item in items:
        module = item.nodeid.split("::")[0]
        for fixture in SHARED_RUN_FIXTURES:
            if fixture in getattr(item, "fixturenames", ()):  # every test function has it
                shared.setdefault(module, fixture.strip("_"))
    for item in items:
        module = item.nodeid.split("::")[0]
        group = "ray" if item.get_closest_marker("ray") else shared.get(module, module)
        item.add_marker(pytest.mark.xdist_group(group))


SHARED_RUN_FIXTURES = (
    "_shared_smoke_run",
    "_sometimes_nan_run",
    "_remittance_pair_runs",
    "_demo_suite_run",
)
"""The session fixtures that make whole runs (``tests/dynamics/conftest.py`` has the
second), each grouped as above."""


class SmokeRun(NamedTuple):
    """The shared world-model smoke run: its directory, the fingerprint of its files as
    made, and what the command printed."""

    path: Path
    fingerprint: str
    stdout: str
    stderr: str


SMOKE_COMMAND = ("worldmodel", "run", "--smoke", "--output-dir")
"""How the shared run is made (with ``COLUMNS=200``, as ``tests.runner.conftest.onrecord``
sets it; not on a terminal, so its progress is plain lines on stderr, as in a CI log),
for a test that compares its own run's output with it."""


def pytest_collection_finish(session: pytest.Session) -> None:
    """Fail at once if ``--dist loadgroup`` groups nothing: pytest-xdist marks a test's
    group in its node id, and with a pytest it cannot do that for (pytest 9 keeps the
    id elsewhere) every module's tests were spread over both workers, silently: module
    fixtures built twice, and two Ray clusters competing for the two cores."""
    grouping = getattr(session.config.option, "loadgroup", False) and session.items
    if grouping and not any("@" in item.nodeid for item in session.items):
        raise pytest.UsageError(
            f"pytest-xdist --dist loadgroup is not grouping tests with pytest "
            f"{pytest.__version__}; install the pytest pyproject.toml's test extra names"
        )


@pytest.fixture(scope="session")
def _shared_smoke_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SmokeRun]:
    """One ``onrecord worldmodel run --smoke`` (about 10 s) per test worker: under
    ``--dist loadgroup`` only one worker runs the modules using it (their xdist group)."""
    from tests.runner.conftest import onrecord

    out = tmp_path_factory.mktemp("shared-smoke") / "run"
    done = onrecord(*SMOKE_COMMAND, str(out))
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "protocol.json").is_file(), sorted(p.name for p in out.iterdir())
    _set_writable(out, writable=False)
    yield SmokeRun(out, _fingerprint(out), done.stdout, done.stderr)
    _set_writable(out, writable=True)  # so pytest can remove it


@pytest.fixture
def smoke_world_model_run(_shared_smoke_run: SmokeRun) -> Iterator[Path]:
    """The smoke world-model run shared by the modules that only read it. Its files are
    made read-only, and after each test its files are compared with what was made: a
    test that wrote into it (and changed what the next one reads) fails, even as root,
    whom read-only files do not stop. Copy it (``writable_copy``) to change it."""
    yield _shared_smoke_run.path
    now = _fingerprint(_shared_smoke_run.path)
    assert now == _shared_smoke_run.fingerprint, "the test changed the shared smoke run"


@pytest.fixture
def smoke_world_model_output(_shared_smoke_run: SmokeRun) -> SmokeRun:
    """The shared smoke run with what ``SMOKE_COMMAND`` printed making it."""
    return _shared_smoke_run


@pytest.fixture(scope="session")
def _remittance_pair_runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """``onrecord run remittance`` of ``careful`` and of ``double_poster`` (5 seeds, 3
    repeats each, about 5 s) per test worker, read-only, in ``careful`` and
    ``double_poster`` of the directory given, with the fingerprint of its files."""
    from tests.cli_process import onrecord

    root = tmp_path_factory.mktemp("runs")
    for agent in ("careful", "double_poster"):
        done = onrecord(
            "run", "remittance", "--agent", agent, "--seeds", "0-4", "--repeats", "3",
            "--out", root / agent, "--no-progress",
        )  # fmt: skip
        assert done.returncode in (0, 1), done.stdout + done.stderr
    _set_writable(root, writable=False)
    yield root, _fingerprint(root)
    _set_writable(root, writable=True)  # so pytest can remove it


@pytest.fixture
def remittance_pair_runs(_remittance_pair_runs: tuple[Path, str]) -> Iterator[tuple[Path, Path]]:
    """The runs of ``careful`` and of ``double_poster`` on remittance shared by the
    modules that only read them (5 seeds, 3 repeats each): checked after each test as
    ``smoke_world_model_run`` is. Copy them (``writable_copy``) to change them."""
    root, fingerprint = _remittance_pair_runs
    yield root / "careful", root / "double_poster"
    assert _fingerprint(root) == fingerprint, "the test changed the shared remittance runs"


@pytest.fixture(scope="session")
def _demo_suite_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Any, str]]:
    """``run_demo_suite(DIR, repeats=1)``: every reference agent on every remittance task
    once (about 8 s) per test worker, its directory read-only, with its fingerprint."""
    from onrecord.domains.remittance import run_demo_suite

    out = tmp_path_factory.mktemp("demo-suite")
    result = run_demo_suite(out, repeats=1)
    _set_writable(out, writable=False)
    yield out, result, _fingerprint(out)
    _set_writable(out, writable=True)  # so pytest can remove it


@pytest.fixture
def demo_suite(_demo_suite_run: tuple[Path, Any, str]) -> Iterator[tuple[Path, Any]]:
    """The shared demo suite's directory and a ``SuiteResult`` of the test's own (a
    copy: a test may change it), the directory checked after each test as
    ``smoke_world_model_run`` is."""
    out, result, fingerprint = _demo_suite_run
    yield out, copy.deepcopy(result)
    assert _fingerprint(out) == fingerprint, "the test changed the shared demo suite's files"


def _fingerprint(root: Path) -> str:
    """A digest of every file and directory under ``root``: names and contents."""
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        if path.is_file():
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def writable_copy(source: Path, target: Path) -> Path:
    """A copy of a shared read-only directory that a test may change."""
    shutil.copytree(source, target)
    _set_writable(target, writable=True)
    return target


def _set_writable(root: Path, *, writable: bool) -> None:
    write = stat.S_IWUSR
    for folder, _, files in os.walk(root):
        for path in [Path(folder), *(Path(folder) / name for name in files)]:
            mode = path.stat().st_mode
            path.chmod(mode | write if writable else mode & ~write)
