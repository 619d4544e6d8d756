"""Review round 55 of runs: a torn last record of a graded run is refused, not re-run; a
resume keeps the run's executor; deleted records are named as such by verify, show and
gate; a partial regrade is indeterminate in `show RUN`; stopped pool workers leave no
scratch directories; the refusals of `run --resume` and `--address` name what is wrong;
the HTML headline and Per task table of an incomplete or stale grading. Real `onrecord`
processes on real run directories throughout."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.warm_client import run_onrecord

ROOT = Path(__file__).resolve().parents[2]
TASKS = "full-01,full-02,recoup-01"
AGENTS = '''
import os, time
from onrecord.domains.remittance import ScriptedAgent
from onrecord.runner import agent_factory


@agent_factory
def picky(context):
    """The careful agent on the tasks $R55_OK lists (every one: "all"); on any other
    it kills its process, as an untrusted agent may."""
    ok = os.environ.get("R55_OK", "all")
    if ok != "all" and context.case.identity["case_id"] not in ok.split(","):
        os._exit(7)
    time.sleep(float(os.environ.get("R55_SLEEP", "0")))
    return ScriptedAgent("careful", context.case.input)


@agent_factory
def stubborn(context):
    """Ignores the episode timeout's signal: only its worker's end stops it."""
    end = time.monotonic() + 60
    while time.monotonic() < end:
        try:
            time.sleep(0.05)
        except BaseException:
            pass
    return ScriptedAgent("careful", context.case.input)
'''
POOL = ("--executor", "process", "--workers", "2")
POLICY = '[[requirements]]\ncheck = "expected_changes"\nmin_pass_rate = 1.0\n'


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``r55agents.py``, as a user's own agent module."""
    folder = tmp_path_factory.mktemp("agents")
    (folder / "r55agents.py").write_text(AGENTS)
    return folder


def cli(
    *args: str | Path, agents: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``onrecord ARGS`` in a real process: this checkout's package and ``agents``
    importable, ``env`` added to the environment."""
    path = [str(p) for p in (agents, ROOT / "src", ROOT) if p is not None]
    environment = {**os.environ, "COLUMNS": "200", "PYTHONPATH": os.pathsep.join(path), **env}
    return run_onrecord([str(arg) for arg in args], env=environment, cwd=ROOT, timeout=300)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A complete, graded run of three remittance tasks (copy it before changing it)."""
    run = tmp_path_factory.mktemp("graded") / "run"
    done = cli("run", "remittance", "--agent", "careful", "--tasks", TASKS, "--out", run)
    assert done.returncode == 0, done.stderr
    return run


@pytest.fixture(scope="module")
def partial(tmp_path_factory: pytest.TempPathFactory, agents: Path) -> Path:
    """A run on a process pool whose agent killed its process on one task: 2 of 3
    episodes recorded, graded, exit 2 (copy it before changing it)."""
    run = tmp_path_factory.mktemp("partial") / "run"
    done = cli(
        *("run", "remittance", "--agent", "r55agents:picky", "--tasks", TASKS, "--out", run),
        *("--executor", "process", "--workers", "2", "--no-progress"),
        agents=agents,
        R55_OK="full-01,full-02",
    )
    assert done.returncode == 2, done.stderr
    return run


def copy(run: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(run, tmp_path / "run"))


def test_a_torn_last_record_of_a_graded_run_is_refused_not_run_again(
    graded: Path, tmp_path: Path
) -> None:
    """decision.json graded every whole line; a killed writer tears only a line appended
    after it. Before, the cut record was "repaired" and its episode run again."""
    run = copy(graded, tmp_path)
    episodes = run / "episodes.jsonl"
    os.truncate(episodes, episodes.stat().st_size - 100)
    size = episodes.stat().st_size
    done = cli("run", "--resume", run, "--no-progress")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "decision.json graded 3 recorded episodes" in done.stderr
    assert "holds 2 whole records and a partial last line" in done.stderr
    assert "repaired" not in done.stdout + done.stderr
    assert episodes.stat().st_size == size  # nothing cut, nothing run


def test_a_resume_keeps_the_process_pool_the_run_was_started_on(
    partial: Path, agents: Path, tmp_path: Path
) -> None:
    """Before, `run --resume R` ran in-process, where the agent's os._exit ended
    onrecord itself: exit 7, no word."""
    run = copy(partial, tmp_path)
    done = cli("run", "--resume", run, "--no-progress", agents=agents, R55_OK="full-01,full-02")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "process × 2" in done.stdout
    assert "recoup-01#0: the worker process running this episode died" in done.stdout
    manifest = json.loads((run / "run.json").read_text())
    assert manifest["executor"] == {"name": "process", "workers": 2}  # beside the protocol
    # --workers alone changes the pool's size, not the executor.
    done = cli("run", "--resume", run, "-w", "1", "--no-progress", agents=agents, R55_OK="all")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "process × 1" in done.stdout


def test_deleted_records_are_named_by_verify_show_and_gate(graded: Path, tmp_path: Path) -> None:
    """Before, each blamed report.json ("copied from another run or edited; re-grade the
    run"), and a regrade cannot bring records back."""
    run = copy(graded, tmp_path)
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (run / "episodes.jsonl").write_bytes(b"".join(lines[:-1]))
    for command in (["verify", run], ["show", run], ["gate", run, "--policy", policy]):
        done = cli(*command)
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "committed records were deleted" in done.stderr, done.stderr
        assert "restore episodes.jsonl and actions.jsonl" in done.stderr
        assert "copied from another run" not in done.stderr
    (run / "episodes.jsonl").unlink()
    done = cli("verify", run)
    assert done.returncode == 3
    assert "episodes.jsonl is missing, but" in done.stderr
    assert "the run's records were deleted" in done.stderr


def test_show_of_a_run_calls_a_partial_regrade_indeterminate(partial: Path, tmp_path: Path) -> None:
    """decision.json keeps the policy's accept of the 2 recorded episodes; `show RUN`'s
    regrades table printed it as is, where `show` of the regrade says indeterminate."""
    run = copy(partial, tmp_path)
    done = cli("regrade", run, "--name", "r1", "--no-progress")
    assert done.returncode == 2, done.stdout + done.stderr
    shown = cli("show", run, "--no-progress").stdout
    row = next(line for line in shown.splitlines() if "│ r1 " in line)
    assert "indeterminate" in row, row
    assert "accept" not in row, row
    assert "2 of 3" in row


def _world_dirs(folder: Path) -> list[str]:
    return sorted(entry.name for entry in folder.iterdir() if entry.name.startswith("onrecord-"))


def test_a_pool_stopped_by_sigterm_leaves_no_scratch_directories(
    agents: Path, tmp_path: Path
) -> None:
    """The workers a cancelled run stops run no cleanup: their tool worlds stayed in
    TMPDIR (6-8 directories, ~1.5 MB) until the next run's sweep."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    run = tmp_path / "run"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(map(str, (agents, ROOT / "src", ROOT))),
        "TMPDIR": str(scratch),
        "R55_SLEEP": "0.4",
    }
    command = [str(Path(sys.executable).parent / "onrecord"), "run", "remittance"]
    process = subprocess.Popen(
        [*command, "--agent", "r55agents:picky", "--out", str(run), "--no-progress", *POOL],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        episodes, deadline = run / "episodes.jsonl", time.monotonic() + 120
        while time.monotonic() < deadline and process.poll() is None:
            if episodes.exists() and episodes.read_bytes().count(b"\n") >= 2:
                break
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        assert _world_dirs(scratch), "no episode in flight: nothing to test"
        process.send_signal(signal.SIGTERM)  # the run only, as a CI job's cancel
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 130, stderr
    assert _world_dirs(scratch) == []


def test_a_worker_ended_by_the_episode_timeout_leaves_no_scratch_directory(
    agents: Path, tmp_path: Path
) -> None:
    """A run that ends by itself: its worker ended by the watchdog (os._exit) left its
    tool world behind. (3 s: the world is set up within the limit, on a busy machine
    too; a limit that ends the setup stops the episode where it cleans up.)"""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    done = cli(
        *("run", "remittance", "--agent", "r55agents:stubborn", "--tasks", "full-01"),
        *("--out", tmp_path / "run", "--executor", "process", "--workers", "1"),
        *("--episode-timeout", "3", "--no-progress"),
        agents=agents,
        TMPDIR=str(scratch),
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "full-01#0: timed out" in done.stdout
    assert _world_dirs(scratch) == []


def test_resume_of_what_is_not_a_run_says_so(tmp_path: Path) -> None:
    """Before: "--resume needs the run directory", of a directory given."""
    empty = tmp_path / "empty"
    empty.mkdir()
    done = cli("run", "--resume", empty)
    assert done.returncode == 3
    assert f"{empty} is not a run directory (it has no run.json)" in done.stderr
    done = cli("run", "--resume", tmp_path / "nosuch")
    assert done.returncode == 3
    assert f"no such directory: {tmp_path / 'nosuch'}" in done.stderr
    assert "Traceback" not in done.stderr


def test_resume_names_an_other_environment_or_environment_setting(graded: Path) -> None:
    """Before: ledger's policy error, and "task 'full-01' differs from the run's
    recorded task", naming no setting."""
    done = cli("run", "ledger", "--agent", "correct", "--out", graded, "--resume")
    assert done.returncode == 3
    assert "environment: the run has 'remittance', the new settings say 'ledger'" in done.stderr
    done = cli("run", "--resume", graded, "--env-config", "size=1000")
    assert done.returncode == 3
    assert "environment.config.size: the run has nothing, the new settings say 1000" in (
        done.stderr
    )


@pytest.mark.parametrize("executor", ["inprocess", "process"])
def test_address_with_an_executor_that_is_not_ray_is_refused(executor: str, tmp_path: Path) -> None:
    """Before, the address was ignored and the run went here."""
    run = tmp_path / "run"
    done = cli(
        *("run", "remittance", "--agent", "careful", "--tasks", "full-01", "--out", run),
        *("--executor", executor, "--address", "127.0.0.1:1", "--no-progress"),
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"--address names a Ray cluster, but the {executor} executor" in done.stderr
    assert not run.exists()


def _page_data(run: Path, tmp_path: Path) -> dict[str, object]:
    data = tmp_path / "data.json"
    done = cli("report", run, "-o", tmp_path / "page.html", "--json", data)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, object] = json.loads(data.read_text())
    return loaded


def test_html_of_a_run_whose_episodes_all_timed_out(agents: Path, tmp_path: Path) -> None:
    """The headline is gate's; before it lacked "the run is incomplete …" and the Per
    task table had no row at all."""
    run = tmp_path / "run"
    done = cli(
        *("run", "remittance", "--agent", "r55agents:picky", "--tasks", "full-01,full-02"),
        *("--out", run, "--executor", "process", "--workers", "2"),
        *("--episode-timeout", "1", "--no-progress"),
        agents=agents,
        R55_SLEEP="30",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    data = _page_data(run, tmp_path)
    decision = data["decision"]
    assert isinstance(decision, dict)
    expected = "the run is incomplete: 2 planned episodes have no trial: 2 timed out"
    assert str(decision["headline"]).startswith(expected), decision["headline"]
    tasks = data["tasks"]
    assert isinstance(tasks, list)
    assert [(t["case_id"], t["episodes"], t["missing"]) for t in tasks] == [
        ("full-01", 0, 1),
        ("full-02", 0, 1),
    ]
    page = (tmp_path / "page.html").read_text()
    assert "1 planned episode without a trial" in page


def test_html_of_an_out_of_date_grading_says_recorded_and_graded(
    partial: Path, agents: Path, tmp_path: Path
) -> None:
    """A resume killed while recording leaves the earlier grading (2 episodes) beside
    more records (3): the headline said "(2 of 3 episodes recorded)"."""
    run = copy(partial, tmp_path)
    old = {name: (run / name).read_bytes() for name in ("report.json", "decision.json")}
    done = cli("run", "--resume", run, "--no-progress", agents=agents, R55_OK="all")
    assert done.returncode == 0, done.stdout + done.stderr
    for name, content in old.items():  # the grading a killed resume leaves
        (run / name).write_bytes(content)
    data = _page_data(run, tmp_path)
    decision = data["decision"]
    assert isinstance(decision, dict)
    headline = str(decision["headline"])
    page = (tmp_path / "page.html").read_text()
    said = "the run holds 3 of 3 episodes recorded, 2 graded"
    assert said in page, headline
    assert "2 of 3 episodes recorded)" not in page


def test_small_refusals_name_the_option_and_the_fix(graded: Path, tmp_path: Path) -> None:
    run = tmp_path / "run"
    done = cli("run", "remittance", "--agent", "careful", "--tasks", "full-1", "--out", run)
    assert done.returncode == 3
    assert "unknown task 'full-1' for environment 'remittance' (did you mean 'full-01'" in (
        done.stderr
    )
    done = cli("run", "remittance", "--agent", "careful", "--policy", "nosuch.toml", "--out", run)
    assert done.returncode == 3
    assert "--policy nosuch.toml: no such file" in done.stderr
    assert not run.exists()
    done = cli("regrade", graded, "--policy", "nosuch.toml", "--no-progress")
    assert done.returncode == 3
    assert "--policy nosuch.toml: no such file" in done.stderr
    helped = cli("run", "--help").stdout
    options = helped[helped.index("options:") :]
    executor = options[options.index("--executor {") :]
    assert "where episodes run" in " ".join(executor.split()[:6])
