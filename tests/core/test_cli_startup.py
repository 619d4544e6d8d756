"""Start-up of the ``onrecord`` command: what it imports before and after ``main()`` runs,
and a Ctrl-C while it imports.

Before: the console script's ``from onrecord.cli.main import main`` imported numpy and
importlib.metadata (through ``onrecord/__init__``), and ``main()`` imported all eleven
commands with everything they use (gymnasium, rich, ...), so ``onrecord --version`` took
~0.35 s and a Ctrl-C in that time was a Python traceback. No timing here: what is
imported is the deterministic part (``benchmarks/bench_cli.py`` has the times).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import onrecord
from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.cli._app import COMMANDS
from onrecord.cli._parser import command_parser, command_requested
from onrecord.cli.main import build_parser
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task

SCRIPT = Path(sys.executable).parent / "onrecord"
# Heavy at import: none of them is needed to parse a command line or print the version.
HEAVY = ("numpy", "gymnasium", "orjson", "rich", "scipy", "sqlite3")

# Prints, as JSON, the modules that ``code`` imported (those loaded before it ran, by the
# interpreter or a .pth file, do not count) and how ``main()`` ended, if it ran.
_PROBE = """\
import json, sys
before = set(sys.modules)
exit_code = None
try:
{code}
except SystemExit as stop:
    exit_code = stop.code
print(json.dumps({{"new": sorted(set(sys.modules) - before), "exit": exit_code}}))
"""


def _imports(code: str) -> tuple[set[str], object]:
    probe = _PROBE.format(code=textwrap.indent(code, "    "))
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    result = json.loads(done.stdout.splitlines()[-1])
    return set(result["new"]), result["exit"]


def _heavy(modules: set[str]) -> list[str]:
    return sorted(name for name in modules if name.split(".")[0] in HEAVY)


def test_importing_the_entry_point_imports_nothing_but_itself() -> None:
    # What the console script imports before main() runs, where nothing can catch a
    # Ctrl-C: these five modules, nothing else (not even argparse or typing; __future__
    # is the modules' ``from __future__ import annotations``, a few constants).
    new, _ = _imports("import onrecord.cli.main")
    assert new - {"__future__"} == {
        "onrecord",
        "onrecord._lazy",
        "onrecord.cli",
        "onrecord.cli._app",
        "onrecord.cli.main",
    }


def test_python_dash_m_entry_imports_nothing_but_itself() -> None:
    new, _ = _imports("import onrecord.__main__")
    assert new - {"__future__"} == {
        "onrecord",
        "onrecord._lazy",
        "onrecord.cli",
        "onrecord.cli._app",
        "onrecord.__main__",
    }


@pytest.mark.parametrize("args", [["--version"], ["--help"], [], ["frob"]])
def test_version_help_and_usage_errors_import_no_command(args: list[str]) -> None:
    new, code = _imports(f"from onrecord.cli.main import main\nmain({args!r})")
    assert code == (0 if args and args[0].startswith("--") else 3)
    assert _heavy(new) == []
    assert not [name for name, _ in COMMANDS if f"onrecord.cli.{name}" in new]
    # importlib.metadata (with email, zipfile, csv) only to print the version.
    assert ("importlib.metadata" in new) == (args == ["--version"])


def test_a_command_imports_its_own_module_only() -> None:
    new, code = _imports("from onrecord.cli.main import main\nmain(['verify', '--help'])")
    assert code == 0
    assert [name for name, _ in COMMANDS if f"onrecord.cli.{name}" in new] == ["verify"]


def test_the_listed_help_lines_are_the_commands_own() -> None:
    # `onrecord --help` lists the commands from COMMANDS without importing them: the same
    # text as the parser with every command registered by its module.
    full = build_parser().format_help()
    assert command_parser(()).format_help() == full
    for name, _ in COMMANDS:
        assert command_parser((name,)).format_help() == full


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["verify", "x.json"], "verify"),
        (["--version"], None),
        (["-h", "gate", "r.json"], "gate"),
        (["--", "show", "x"], "show"),
        ([], None),
    ],
)
def test_the_command_is_the_first_word_that_is_no_option(
    argv: list[str], command: str | None
) -> None:
    assert command_requested(argv) == command


def test_the_lazy_public_api_is_complete() -> None:
    exported = set(onrecord.__all__)
    assert exported <= set(dir(onrecord))
    namespace: dict[str, object] = {}
    exec("from onrecord import *", namespace)
    assert exported <= set(namespace)
    from onrecord.case import EvalCase
    from onrecord.compare import compare_reports

    assert onrecord.EvalCase is EvalCase
    assert onrecord.compare_reports is compare_reports
    assert isinstance(onrecord.__version__, str)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = onrecord.nothing_here  # type: ignore[attr-defined]


def test_import_onrecord_still_gives_the_submodules_it_gave() -> None:
    # Importing the public names used to load these; code reading
    # ``onrecord.report.Trial`` after a bare ``import onrecord`` keeps working.
    new, _ = _imports(
        "import onrecord\n"
        "for name in ('case', 'compare', 'errors', 'policy', 'report'):\n"
        "    getattr(onrecord, name)\n"
        "onrecord.report.Trial, onrecord.errors.InputError"
    )
    assert {"onrecord.report", "onrecord.errors"} <= new


# A sitecustomize that delivers SIGINT to the process the first time ``MODULE`` is
# looked up for import: a Ctrl-C at exactly that point of start-up, with no timing.
_SITECUSTOMIZE = """\
import os, signal, sys

class _CtrlC:
    target = os.environ["ONRECORD_TEST_SIGINT_AT"]

    def find_spec(self, name, path=None, target=None):
        if name == self.target:
            sys.meta_path.remove(self)
            print(f"sigint at {name}", file=sys.stderr, flush=True)
            signal.raise_signal(signal.SIGINT)
        return None

sys.meta_path.insert(0, _CtrlC())
"""


@pytest.fixture(scope="module")
def report_and_policy(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("startup")
    task = frozenlake_task()
    episodes = [run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=1)]
    report = evaluate_episodes(episodes, list(task.checks)).save_json(root / "report.json")
    policy = AcceptancePolicy((CheckRequirement("reached_goal"),)).save_json(root / "p.json")
    return report, policy


# argparse: the first import main() makes; rich: the heaviest left (NumPy is not imported
# to read a record), in the middle of the command's imports; orjson: the record being read.
@pytest.mark.parametrize("module", ["argparse", "rich", "orjson"])
@pytest.mark.parametrize("command", ["verify", "gate"])
def test_ctrl_c_while_starting_is_130_without_a_traceback(
    module: str, command: str, report_and_policy: tuple[Path, Path], tmp_path: Path
) -> None:
    (tmp_path / "sitecustomize.py").write_text(_SITECUSTOMIZE)
    report, policy = report_and_policy
    args = [report] if command == "verify" else [report, "--policy", policy]
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    done = subprocess.run(
        [str(SCRIPT), command, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": path, "ONRECORD_TEST_SIGINT_AT": module},
    )
    assert f"sigint at {module}" in done.stderr  # the hook fired: the test tested something
    assert done.returncode == 130, done.stderr
    assert f"onrecord {command}: interrupted" in done.stderr  # which command, in a CI log
    assert "Traceback" not in done.stderr
    assert done.stdout == ""


# Only running or re-grading episodes needs these; reading records never does. gymnasium
# came in through ``onrecord.dynamics`` and ``onrecord.runner`` (their ``__init__`` and the
# registry), importlib.metadata through modules reading ``onrecord.__version__`` at the top.
# NumPy (60-110 ms, close to half of `verify` or `gate`) through the value codecs, the
# statistics and the world-model record kinds: now only a record holding an array, a
# forecast or a comparison's bootstrap imports it.
NOT_FOR_READING = ("gymnasium", "scipy", "sklearn", "matplotlib", "ray", "asyncio", "numpy")
"""Never needed to read a record: asyncio (~20 ms) is for running async agents only."""


def _main_in_fresh_interpreter(args: list[str]) -> tuple[set[str], object, str]:
    """The modules ``main(args)`` imported, its exit code and what it printed."""
    probe = _PROBE.format(
        code=textwrap.indent(
            f"from onrecord.cli.main import main\nraise SystemExit(main({args!r}))", "    "
        )
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    *printed, last = done.stdout.splitlines()
    result = json.loads(last)
    return set(result["new"]), result["exit"], "\n".join(printed)


@pytest.mark.parametrize("command", ["verify", "gate", "show", "compare"])
def test_reading_a_report_imports_no_environment_code(
    command: str, report_and_policy: tuple[Path, Path]
) -> None:
    report, policy = map(str, report_and_policy)
    args = {
        "verify": [report],
        "gate": [report, "--policy", policy],
        "show": [report],
        "compare": [report, report],
    }[command]
    new, code, printed = _main_in_fresh_interpreter([command, *args])
    assert code == 0, printed
    # compare bootstraps the difference of each measure (FrozenLake's steps): with NumPy
    needed = {"numpy"} if command == "compare" else set()
    imported = {name.split(".")[0] for name in new}
    assert sorted(imported & set(NOT_FOR_READING) - needed) == []
    assert ("numpy" in imported) == (command == "compare")
    assert "importlib.metadata" not in new
    assert "onrecord.envkit" not in new


@pytest.fixture(scope="module")
def small_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from onrecord.runner import plan_run, start_run

    run = tmp_path_factory.mktemp("startup-run") / "run"
    start_run(run, plan_run("frozenlake", "walks_to_goal", seeds=[1, 2]))
    return run


def test_verifying_a_run_directory_still_verifies_without_gymnasium(
    small_run: Path, report_and_policy: tuple[Path, Path], tmp_path: Path
) -> None:
    new, code, printed = _main_in_fresh_interpreter(["verify", str(small_run)])
    digest = json.loads((small_run / "run.json").read_bytes())["digest"]
    assert code == 0
    assert (
        printed == f"ok  {small_run}  run directory (2 of 2 episodes, 0 regrades)  sha256:{digest}"
    )
    policy = str(report_and_policy[1])
    for args in (["show", str(small_run)], ["gate", str(small_run), "--policy", policy]):
        more, code, _ = _main_in_fresh_interpreter(args)
        assert code == 0
        new |= more
    assert sorted(name for name in new if name.split(".")[0] in NOT_FOR_READING) == []
    # Nor the tool-world kit, which `show` imported to look for a saved tool episode.
    assert "onrecord.envkit" not in new
    # ... and still reads every record: an edited episode is refused.
    edited = tmp_path / "run"
    shutil.copytree(small_run, edited)
    episodes = edited / "episodes.jsonl"
    episodes.write_bytes(episodes.read_bytes().replace(b'"seed":1', b'"seed":3', 1))
    _, code, _ = _main_in_fresh_interpreter(["verify", str(edited)])
    assert code == 3


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["--version"], "onrecord: interrupted\n"),
        (["gate", "r.json", "--policy", "p.toml"], "onrecord gate: interrupted\n"),
        (["--quiet", "worldmodel", "run"], "onrecord worldmodel: interrupted\n"),
        (["r.json"], "onrecord: interrupted\n"),  # not a command: never named as one
    ],
)
def test_an_interrupt_names_the_command_it_stopped(
    words: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from onrecord.cli import _app

    def interrupted(args_list: list[str]) -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(_app, "_main", interrupted)
    assert _app.main(words) == 130
    assert capsys.readouterr().err == said
