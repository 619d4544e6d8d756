"""What ``resume_run`` refuses before it runs anything: what every remaining episode
would fail on the same way, recorded once per episode and kept in the run."""

from __future__ import annotations

import importlib.util
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from onrecord._exceptions import describe
from onrecord.errors import InputError
from onrecord.runner._agents_and_checks import load_checks, resolve_agent
from onrecord.runner._interrupts import interrupts_kept
from onrecord.runner._registry import build_provider
from onrecord.runner._store import RunStore

__all__ = ["check_resumable"]

T = TypeVar("T")


def check_resumable(store: RunStore) -> None:
    """Refuse to resume ``store`` when its environment, checks or agent cannot be
    loaded here (a module of the user's own, off this ``PYTHONPATH``), or a check's
    version changed since the run started."""
    protocol = store.protocol
    with interrupts_kept():  # not "the checks changed" from a swallowed Ctrl-C
        environment = protocol.environment
        provider = _loaded(
            store, "environment", environment.name, lambda: build_provider(environment)
        )
        try:
            checks = ", ".join(protocol.checks)
            loaded = _loaded(
                store, "checks", checks, lambda: load_checks(provider, protocol.checks)
            )
            # Each remaining episode imports the agent: without its module on the path a
            # resume recorded "cannot import …" once per episode, kept in the run.
            if _remaining(store):
                _loaded(
                    store, "agent", protocol.agent, lambda: resolve_agent(provider, protocol.agent)
                )
        finally:
            provider.close()
    _refuse_changed_checks(store, {check.name: check.version for check in loaded})


def _remaining(store: RunStore) -> bool:
    """Whether planned episodes are not recorded yet (counted, not verified: the
    resume verifies them)."""
    return store.lines_recorded() < store.protocol.episodes


def _loaded(store: RunStore, what: str, name: str, load: Callable[[], T]) -> T:
    """``load()``, an import failure refused naming the run, the module and the fix."""
    try:
        return load()
    except InputError as exc:
        cause = exc.__cause__
        if not isinstance(cause, ImportError):
            raise
        raise InputError(_cannot_import(store, what, name, cause)) from cause


def _cannot_import(store: RunStore, what: str, name: str, cause: ImportError) -> str:
    run = shlex.quote(str(store.path))
    text = (
        f"cannot resume {store.path}: its {what} {name!r} cannot be imported here "
        f"({describe(cause)}); nothing was run or recorded"
    )
    module = (cause.name or "").split(".")[0] if isinstance(cause, ModuleNotFoundError) else ""
    # A package that imports, missing only a submodule (or one the code imports), is a
    # fault in the code, not in PYTHONPATH.
    if not module or (module != cause.name and _importable(module)):
        return f"{text}: fix the import, then `onrecord run --resume {run}`"
    found = _module_above(module, store.path)
    folder = "FOLDER" if found is None else shlex.quote(_shown(found.parent))
    held = "" if found is None else f" ({found} is there)"
    return (
        f"{text}: the run was started where {module!r} could be imported; install it, or "
        f"set PYTHONPATH as the run had it, to the folder that holds {module}{held} "
        f"(PYTHONPATH={folder} onrecord run --resume {run})"
    )


_LEVELS_UP = 4


def _importable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _module_above(module: str, run: Path) -> Path | None:
    """``module`` as a ``.py`` file or a package in the nearest folder above the run
    (runs usually sit in the project that started them: ``runs/NAME``), or else in the
    working directory; None when neither holds it."""
    try:  # only a hint: a folder that cannot be read (or a removed cwd) gives none
        above = list(run.resolve().parents)[:_LEVELS_UP]
        for folder in (*above, Path.cwd().resolve()):
            file, package = folder / f"{module}.py", folder / module
            if file.is_file():
                return file
            if (package / "__init__.py").is_file():
                return package
    except OSError:
        pass
    return None


def _shown(folder: Path) -> str:
    """``folder`` as short as it can be pasted from here: relative to the working
    directory when inside it (``.`` for it)."""
    try:
        return str(folder.relative_to(Path.cwd().resolve()))
    except (ValueError, OSError):
        return str(folder)


def _refuse_changed_checks(store: RunStore, now: dict[str, str]) -> None:
    """Refuse before running anything when a check's version changed since the run
    started: every worker would refuse its episodes, one error per episode."""
    was = dict(store.protocol.check_versions)
    changed = [
        f"{name}: the run has {was.get(name, 'no such check')}, the code now has "
        f"{now.get(name, 'no such check')}"
        for name in sorted(set(now) | set(was))
        if now.get(name) != was.get(name)
    ]
    if changed:
        raise InputError(
            f"the checks changed since the run in {store.path} started:\n  "
            + "\n  ".join(changed)
            + "\nfinish it with the original checks, then `onrecord regrade` it"
        )
