"""The same run gives the same evidence and the same decision whatever runs it: in
process, a pool of one or two processes, Ray, or interrupted and resumed on another
executor; and nothing downstream (re-grading, the HTML report, ``compare``) depends on
the order in which a pool appended the episodes.

Episodes are compared per (case, repeat) independently of ``fingerprint``: each record
with the timings removed (a Gymnasium step's ``wall_time_ns``; a tool call's ``ts`` and
``duration_ns`` in the action log) and what names the execution (the run id and the
digests over it), every other byte kept. Removing a field that is not there fails the
test, so a timing field that moves cannot make the comparison vacuous.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

from onrecord._canonical import canonical_bytes
from onrecord.runner import (
    InProcessExecutor,
    ProcessPoolExecutor,
    RunProtocol,
    RunStore,
    plan_run,
    regrade_run,
    start_run,
)
from onrecord.runner._executors import Executor
from tests.runner.conftest import interrupt_run, onrecord

HERE = "tests.runner.test_executor_equivalence13"

# Small runs of each kind of provider: seeded Gymnasium dynamics, a stochastic agent
# seeded per repeat, slippery FrozenLake, and the remittance tool world (action logs).
PROTOCOLS: dict[str, Callable[[], RunProtocol]] = {
    "cartpole": lambda: plan_run("cartpole", "balances", seeds=[0, 1], repeats=2),
    "CartPole-v1": lambda: plan_run("CartPole-v1", "random", seeds=[3, 4], repeats=2),
    "frozenlake": lambda: plan_run("frozenlake", "walks_into_hole", seeds=[0, 1], repeats=2),
    "remittance": lambda: plan_run(
        "remittance",
        "double_poster",
        seeds=[0, 1],
        repeats=2,
        environment_config={"size": 30, "kinds": ["duplicate", "split"]},
    ),
}
Episodes = dict[tuple[str, int], bytes]


# -- what is compared ---------------------------------------------------------------------


def _episodes(run: Path) -> Episodes:
    """Each recorded episode as canonical bytes without timings and run ids."""
    assert sum(1 for _ in RunStore.open(run).records()) > 0  # verifies every record
    actions = (run / "actions.jsonl").read_bytes()
    offset, episodes = 0, {}
    for line in (run / "episodes.jsonl").read_bytes().splitlines():
        record = json.loads(line)
        size = record["action_log"]["bytes"]
        events = [json.loads(event) for event in actions[offset : offset + size].splitlines()]
        offset += size
        key = (record["case_id"], record["repeat"])
        assert key not in episodes
        episodes[key] = canonical_bytes(_without_execution(record, events))
    return episodes


def _without_execution(record: dict[str, Any], events: list[dict[str, Any]]) -> Any:
    run_id = record.pop("run_id")
    record.pop("digest")
    del record["action_log"]  # its length and sha256 cover the timings: compared below
    evidence = record["evidence"]
    digest = evidence.pop("digest")
    assert record["trial"]["source"].pop("digest") == digest
    if evidence["schema"] == "onrecord.episode/v1":  # Gymnasium: the one timing, per step
        evidence["steps"].pop("wall_time_ns")
    else:  # a tool world's evidence names its run; its timings are in the action log
        assert evidence["schema"] == "onrecord.run.tool-episode/v1"
        assert evidence.pop("run_id") == run_id
    for event in events:
        event.pop("ts")
        event.pop("duration_ns")
        assert event.pop("run_id") == run_id
    return {"record": record, "actions": events}


def grading(run: Path) -> bytes:
    """report.json (lock, every trial in order) and decision.json, without digests."""
    report = json.loads((run / "report.json").read_bytes())
    report.pop("digest")
    for trial in report["trials"]:
        trial["source"].pop("digest")
    decision = json.loads((run / "decision.json").read_bytes())
    decision.pop("digest")
    decision.pop("report_digest")
    decision["decision"].pop("report_digest")
    return canonical_bytes({"report": report, "decision": decision})


def _same_run(run: Path, baseline: Path) -> None:
    episodes, expected = _episodes(run), _episodes(baseline)
    assert set(episodes) == set(expected)
    for key, evidence in expected.items():
        assert episodes[key] == evidence, key
    assert grading(run) == grading(baseline)


def _run_all(root: Path, executor: Executor) -> Path:
    for name, protocol in PROTOCOLS.items():
        assert start_run(root / name, protocol(), executor=executor).complete
    return root


@pytest.fixture(scope="module")
def inprocess(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _run_all(tmp_path_factory.mktemp("inprocess"), InProcessExecutor())


@pytest.fixture(scope="module", params=[1, 2], ids=["workers1", "workers2"])
def pool(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    # One episode per chunk: with two workers, episodes interleave as finely as they can.
    with ProcessPoolExecutor(request.param, chunk_size=1) as executor:
        return _run_all(tmp_path_factory.mktemp(f"pool{request.param}"), executor)


# -- every executor, the same episodes ------------------------------------------------------


@pytest.mark.parametrize("name", list(PROTOCOLS))
def test_a_process_pool_records_what_inprocess_records(
    name: str, inprocess: Path, pool: Path
) -> None:
    _same_run(pool / name, inprocess / name)


@pytest.mark.ray
def test_ray_records_what_inprocess_records(inprocess: Path, tmp_path: Path) -> None:
    pytest.importorskip("ray", reason="pip install 'onrecord[ray]'")
    from onrecord.runner import RayExecutor
    from tests.runner._ray_cluster import local_ray_cluster

    with local_ray_cluster(), RayExecutor(workers=2, chunk_size=1) as executor:
        _run_all(tmp_path, executor)
    for name in PROTOCOLS:
        _same_run(tmp_path / name, inprocess / name)


def _interrupted_then_resumed(
    tmp_path: Path, args: list[str], interrupted_on: list[str], resumed_on: list[str]
) -> Path:
    """Run ``args`` on one executor, Ctrl-C it once 6 episodes are committed (held there
    until then: ``interrupt_run``), resume it on another."""
    run = tmp_path / "resumed"
    code, stderr = interrupt_run(*args, *interrupted_on, run_dir=run, env={}, after=6)
    planned = RunStore.open(run).protocol.episodes
    recorded = (run / "episodes.jsonl").read_bytes().count(b"\n")
    assert code == 130, stderr
    assert 0 < recorded == 6 < planned, (recorded, stderr)
    resumed = onrecord("run", "--resume", str(run), "--no-progress", *resumed_on)
    # Both agents pass every episode when run whole (exit 0): so must the resumed run.
    assert resumed.returncode == 0, resumed.stderr
    return run


def test_a_remittance_run_interrupted_in_a_pool_and_resumed_in_process(tmp_path: Path) -> None:
    # 66 episodes. (Before the run was held for Ctrl-C, a slow agent, 4 ms a tool call,
    # made it land while episodes remained: most of the time.)
    args = ["remittance", "--agent", "careful", "--seeds", "0,1"]
    run = _interrupted_then_resumed(tmp_path, args, ["--executor", "process", "-w", "2"], [])
    whole = onrecord("run", *args, "--no-progress", "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    _same_run(run, tmp_path / "whole")


def test_a_gymnasium_run_interrupted_in_process_and_resumed_in_a_pool(tmp_path: Path) -> None:
    args = ["tests.runner.helpers:lake", "--agent", "tests.runner.helpers:walker"]
    args += ["--seeds", "0-29"]
    run = _interrupted_then_resumed(tmp_path, args, [], ["--executor", "process", "-w", "2"])
    whole = onrecord("run", *args, "--no-progress", "--out", str(tmp_path / "whole"))
    assert whole.returncode == 0, whole.stderr
    _same_run(run, tmp_path / "whole")


# -- compare pairs runs of one agent on different executors ----------------------------


@pytest.mark.parametrize("name", ["cartpole", "remittance"])
def test_compare_finds_no_difference_between_executors(
    name: str, inprocess: Path, pool: Path
) -> None:
    result = onrecord("compare", str(inprocess / name), str(pool / name), "--json", "-")
    assert result.returncode == 0, result.stderr
    comparison = json.loads(result.stdout)
    assert comparison["pairs"] == PROTOCOLS[name]().episodes
    # Every check and measure of the runs is compared, so the loops below are not empty.
    assert comparison["checks"]
    assert comparison["measures"]
    for check in comparison["checks"]:
        assert (check["only_a"], check["only_b"], check["discordant"]) == (0, 0, [])
        assert check["p_value"] == 1.0
    for measure in comparison["measures"]:
        assert measure["pairs"] == comparison["pairs"]
        assert measure["mean_a"] == measure["mean_b"]
        assert measure["mean_difference"] == 0.0


# -- the order of episodes.jsonl ----------------------------------------------------------


def _reordered(run: Path, target: Path) -> Path:
    """A copy of ``run`` whose episodes were appended in the reverse order (each with its
    action-log block): an order a pool can produce."""
    shutil.copytree(run, target, ignore=shutil.ignore_patterns("regrades", "report.html"))
    actions = (run / "actions.jsonl").read_bytes()
    entries, offset = [], 0
    for line in (run / "episodes.jsonl").read_bytes().splitlines(keepends=True):
        size = json.loads(line)["action_log"]["bytes"]
        entries.append((line, actions[offset : offset + size]))
        offset += size
    entries.reverse()
    (target / "episodes.jsonl").write_bytes(b"".join(line for line, _ in entries))
    (target / "actions.jsonl").write_bytes(b"".join(block for _, block in entries))
    return target


@pytest.mark.parametrize("name", ["cartpole", "remittance"])
def test_nothing_downstream_depends_on_the_order_of_episodes(
    name: str, inprocess: Path, tmp_path: Path
) -> None:
    original = tmp_path / "as-appended"
    shutil.copytree(inprocess / name, original)
    reordered = _reordered(original, tmp_path / "reversed")
    assert (reordered / "episodes.jsonl").read_bytes() != (original / "episodes.jsonl").read_bytes()
    assert onrecord("verify", str(reordered)).returncode == 0
    codes = []
    for run in (original, reordered):
        regrade_run(run, name="again")
        codes.append(onrecord("report", str(run)).returncode)
        compared = onrecord("compare", str(inprocess / name), str(run), "--json", "-")
        (run.parent / f"{run.name}.compare.json").write_text(compared.stdout)
    # The report's exit status is the decision's (0 accept, 1 reject): the same for both.
    assert codes[0] == codes[1]
    assert codes[0] in (0, 1)
    for name_of in ("report.json", "decision.json", "changes.json"):
        again = Path("regrades", "again", name_of)
        assert (reordered / again).read_bytes() == (original / again).read_bytes()
    html = (original / "report.html").read_text().replace(original.name, reordered.name)
    assert (reordered / "report.html").read_text() == html
    compared = (tmp_path / "as-appended.compare.json").read_text()
    assert (tmp_path / "reversed.compare.json").read_text() == compared


# -- the episodes a run could not record are listed in plan order -------------------------


class _Handoff(gym.Env[int, int]):
    """Every episode ends as a harness error (its reset ``info`` has no JSON form). The
    episode of seed 0 waits (at most a minute) until the run has committed the error of
    seed 1's, so in a pool of two workers they finish in the reverse of plan order."""

    observation_space = gym.spaces.Discrete(2)
    action_space = gym.spaces.Discrete(2)

    def __init__(self, errors: str) -> None:
        self.errors = Path(errors)

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[int, dict[str, Any]]:
        super().reset(seed=seed)
        deadline = time.monotonic() + 60
        while seed == 0 and self._nothing_committed() and time.monotonic() < deadline:
            time.sleep(0.01)
        return 0, {"handle": object()}

    def _nothing_committed(self) -> bool:
        return not self.errors.exists() or self.errors.stat().st_size == 0

    def step(self, action: int) -> tuple[int, float, bool, bool, dict[str, Any]]:
        return 0, 0.0, True, False, {}


def handoff(errors: str) -> gym.Env[int, int]:
    """``module:factory`` of ``_Handoff``."""
    return _Handoff(errors)


def test_episodes_not_recorded_are_listed_in_plan_order(tmp_path: Path) -> None:
    run = tmp_path / "run"
    protocol = plan_run(
        f"{HERE}:handoff",
        "noop",
        seeds=[0, 1],
        environment_config={"errors": str(run / "errors.jsonl")},
    )
    with ProcessPoolExecutor(2, chunk_size=1) as executor:
        result = start_run(run, protocol, executor=executor)
    # errors.jsonl keeps the order they happened in (seed 1's episode first) ...
    happened = [
        json.loads(line)["repeat"] for line in (run / "errors.jsonl").read_text().splitlines()
    ]
    assert happened == [1, 0]
    # ... the run's result (whose first ten the summary of `onrecord run` names), the plan's.
    listed = [error.split(": ", 1)[0].rsplit("#", 1)[1] for error in result.errors]
    assert listed == ["0", "1"]
    assert all("PortabilityError" in error for error in result.errors)
