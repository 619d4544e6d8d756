"""The tests' warm ``onrecord`` (``tests/warm_client.py``): a command run in a child of
the warm server must be what the same command is in a fresh process — exit code,
stdout, stderr, files written, environment, working directory, the user's modules —
or the suite's ~1,500 warm command runs would test something other than what a user runs.
Where a fork cannot be the same (an environment that changes how Python starts), the
command must start afresh."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.episode import evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from tests import warm_client
from tests.warm_client import SCRIPT, run_onrecord

USER_MODULE = """\
import json, os, sys

def make(**config):
    # What the user's module sees of its process, printed where the test reads it.
    print(json.dumps({"pid": os.getpid(), "parent": os.getppid(), "cwd": os.getcwd(),
                      "argv0": sys.argv[0], "tmpdir": os.environ.get("TMPDIR"),
                      "hash": hash("onrecord"), "path0": sys.path[0],
                      "numpy": "numpy" in sys.modules}), file=sys.stderr)
    raise SystemExit(5)
"""


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A report (two FrozenLake agents' trials) and a policy it fails, in one folder."""
    folder = tmp_path_factory.mktemp("records")
    task = frozenlake_task()
    trials = [
        run_gym_task(task, FROZENLAKE_AGENTS[name](), seed=seed)
        for name in ("walks_to_goal", "walks_into_hole")
        for seed in range(3)
    ]
    evaluate_episodes(trials, list(task.checks)).save_json(folder / "report.json")
    strict = AcceptancePolicy((CheckRequirement("*", min_pass_rate=1.0, critical=True),))
    strict.save_json(folder / "policy.json")
    return folder


def _both(
    args: list[str], *, cwd: Path, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    environment = {**os.environ, "COLUMNS": "120", **(env or {})}
    warm = run_onrecord(args, env=environment, cwd=cwd, timeout=120)
    fresh = subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, timeout=120, cwd=cwd,
        env=environment, check=False,
    )  # fmt: skip
    return warm, fresh


@pytest.mark.parametrize(
    "args",
    [
        ["verify", "report.json"],
        ["show", "report.json"],
        ["gate", "report.json", "--policy", "policy.json"],  # exit 1: reject
        ["compare", "report.json", "report.json"],
        ["verify", "no-such-file.json"],  # exit 3
        ["gate", "report.json"],  # a usage error: --policy is missing
        ["--version"],
        ["show", "--help"],
    ],
)
def test_a_warm_command_is_the_fresh_command(records: Path, args: list[str]) -> None:
    warm, fresh = _both(args, cwd=records)
    assert (warm.returncode, warm.stdout, warm.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )
    assert warm.stdout or warm.stderr  # each prints something: the comparison says something


def test_a_warm_command_writes_the_same_files(records: Path, tmp_path: Path) -> None:
    for name in ("warm", "fresh"):
        (tmp_path / name).mkdir()
    args = ["gate", str(records / "report.json"), "--policy", str(records / "policy.json")]
    out = ["--output", "decision.json", "--markdown", "decision.md"]
    warm = run_onrecord([*args, *out], env=dict(os.environ), cwd=tmp_path / "warm", timeout=120)
    fresh = subprocess.run(
        [str(SCRIPT), *args, *out], capture_output=True, text=True, cwd=tmp_path / "fresh",
        check=False, timeout=120,
    )  # fmt: skip
    assert warm.returncode == fresh.returncode == 1
    for name in ("decision.json", "decision.md"):
        made = (tmp_path / "warm" / name).read_text()
        assert made == (tmp_path / "fresh" / name).read_text().replace("fresh", "warm")


def test_the_child_is_its_own_process_with_the_users_path_and_environment(
    tmp_path: Path,
) -> None:
    (tmp_path / "mymodule.py").write_text(USER_MODULE)
    env = {**os.environ, "PYTHONPATH": str(tmp_path), "TMPDIR": str(tmp_path)}
    seen = []
    for _ in range(2):
        done = run_onrecord(
            ["run", "mymodule:make", "--executor", "inprocess", "--out", "runs/x", "--no-progress"],
            env=env, cwd=tmp_path, timeout=120,
        )  # fmt: skip
        line = next(line for line in done.stderr.splitlines() if line.startswith('{"pid"'))
        seen.append(json.loads(line))
    first, second = seen
    assert first["pid"] != second["pid"] != os.getpid()
    # The two warm servers ran them, one each: no silent fresh start.
    servers = {server.process.pid for server in warm_client._Server._servers if server}
    assert {first["parent"], second["parent"]} == servers
    assert len(servers) == 2
    # Two seeds for str hashes, as two fresh processes have (unless PYTHONHASHSEED is set).
    if "PYTHONHASHSEED" not in os.environ:
        assert first["hash"] != second["hash"]
    assert first["cwd"] == str(tmp_path)
    assert first["tmpdir"] == str(tmp_path)
    assert first["argv0"] == str(SCRIPT)
    assert first["path0"] == str(SCRIPT.parent)  # the console script's folder, as Python sets
    assert not first["numpy"]  # nothing the command does not import itself


def test_a_timeout_kills_the_command_as_subprocess_run_does(tmp_path: Path) -> None:
    (tmp_path / "slow.py").write_text("import time\ndef make(**c):\n    time.sleep(60)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    with pytest.raises(subprocess.TimeoutExpired):
        run_onrecord(
            ["run", "slow:make", "--executor", "inprocess", "--out", "r", "--no-progress"],
            env=env, cwd=tmp_path, timeout=3,
        )  # fmt: skip


@pytest.mark.parametrize(
    ("name", "value"),
    [("PYTHONWARNINGS", "error"), ("LC_ALL", "C"), ("PYTHONIOENCODING", "ascii")],
)
def test_an_environment_that_changes_how_python_starts_starts_afresh(name: str, value: str) -> None:
    assert warm_client._needs_fresh_process({**os.environ, name: value})
    assert not warm_client._needs_fresh_process({**os.environ, "COLUMNS": "7"})
    # Read when breakpoint() is called, not at start: set by Ray in the tests' process,
    # it sent every later command of that worker to a fresh process.
    assert not warm_client._needs_fresh_process({**os.environ, "PYTHONBREAKPOINT": "0"})


def test_a_sitecustomize_on_the_path_starts_afresh(tmp_path: Path) -> None:
    (tmp_path / "sitecustomize.py").write_text("import sys\nprint('custom', file=sys.stderr)\n")
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    done = run_onrecord(["--version"], env=env, cwd=tmp_path, timeout=120)
    assert done.returncode == 0
    assert done.stderr == "custom\n"  # Python ran it at start: a fresh process


def test_a_server_that_is_gone_runs_nothing_and_says_so(tmp_path: Path) -> None:
    server = warm_client._Server()  # one of this test's own, not the worker's
    server.process.kill()
    server.process.wait()
    marker = tmp_path / "made"
    done = server.run(
        [str(SCRIPT), "run", "frozenlake", "--out", str(marker)],
        env=dict(os.environ), cwd=tmp_path, timeout=30,
    )  # fmt: skip
    server.stop()
    assert done is None  # the caller starts the command afresh: it must not have run
    assert not marker.exists()
