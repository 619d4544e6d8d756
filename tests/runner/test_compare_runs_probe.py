"""`onrecord compare` on real run directories: two agents on the same seeds (in-process
against a process pool, so the episodes lie in another order on disk), a run against its
own regrade, incomplete and interrupted runs, differing repeats, a run against itself.
Counts and p-values are checked against the episodes and scipy's exact binomial test."""

from __future__ import annotations

import math
import shutil
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import orjson
import pytest

from onrecord.runner import (
    ProcessPoolExecutor,
    RunStore,
    grade_store,
    plan_run,
    regrade_run,
    start_run,
)
from onrecord.runner._job import EpisodeJob, JobResult
from tests.runner.conftest import onrecord

HERE = "tests.runner.test_compare_runs_probe"
GOAL, HOLE = (1, 1, 2, 2, 1, 2), (2, 1)


def _walk(env: Any, path: tuple[int, ...]) -> str:
    for action in path:
        _, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            return "finished"
    return "gave up"


def coin_a(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """FrozenLake: to the goal on about half the seeds (a draw of the seeded env)."""
    return _walk(env, GOAL if env.unwrapped.np_random.random() < 0.5 else HOLE)


def coin_b(env: Any, observation: Any, info: dict[str, Any]) -> str:
    """To the goal on about 70 % of the seeds, from another draw than ``coin_a``."""
    env.unwrapped.np_random.random()
    return _walk(env, GOAL if env.unwrapped.np_random.random() < 0.7 else HOLE)


class _Flaky(gym.Wrapper[Any, Any, Any, Any]):
    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        observation, info = self.env.reset(**kwargs)
        if kwargs.get("seed") is not None and kwargs["seed"] % 4 == 3:
            info = {**info, "handle": object()}  # cannot be recorded: a harness error
        return observation, info


def flaky_lake(**config: Any) -> gym.Env[Any, Any]:
    """FrozenLake whose episodes of seeds 3, 7, 11, ... cannot be recorded."""
    return _Flaky(gym.make("FrozenLake-v1", is_slippery=False, **config))


def _statuses(run: Path) -> dict[tuple[str, int], dict[str, str]]:
    """Straight from episodes.jsonl, not through the report."""
    out = {}
    for line in (run / "episodes.jsonl").read_bytes().splitlines():
        record = orjson.loads(line)
        results = record["trial"]["results"]
        out[(record["case_id"], record["repeat"])] = {r["name"]: r["status"] for r in results}
    return out


def _measure(run: Path, name: str) -> list[float]:
    records = [orjson.loads(line) for line in (run / "episodes.jsonl").read_bytes().splitlines()]
    records.sort(key=lambda r: (r["case_id"], r["repeat"]))
    return [float(r["trial"]["measures"][name]) for r in records]


class _LastFirst(ProcessPoolExecutor):
    """A pool whose results reach the store last first: the pool's own completion order
    is usually shuffled, but not always (one worker may finish every chunk in turn)."""

    def run(self, jobs: Sequence[EpisodeJob]) -> Iterator[JobResult]:
        yield from reversed(list(super().run(jobs)))


@pytest.fixture(scope="module")
def two_agents(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("agents")
    seeds = list(range(40))
    start_run(root / "a", plan_run("frozenlake", f"{HERE}:coin_a", seeds=seeds))
    with _LastFirst(2, chunk_size=3) as pool:
        start_run(root / "b", plan_run("frozenlake", f"{HERE}:coin_b", seeds=seeds), executor=pool)
    return root / "a", root / "b"


def test_two_agents_counts_and_p_values_match_the_episodes_and_scipy(
    two_agents: tuple[Path, Path], tmp_path: Path
) -> None:
    stats = pytest.importorskip("scipy.stats")
    a, b = two_agents
    order = list(_statuses(b))
    assert order != sorted(order)  # the pool wrote them in another order
    done = onrecord("compare", str(a), str(b), "--json", str(tmp_path / "c.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    data = orjson.loads((tmp_path / "c.json").read_bytes())
    status_a, status_b = _statuses(a), _statuses(b)
    assert set(status_a) == set(status_b)
    assert data["pairs"] == len(status_a) == 40
    rows = {line.split("│")[1].strip(): line for line in done.stdout.splitlines() if "│" in line}
    some_discordant = False
    for check in data["checks"]:
        pairs = [(status_a[k][check["name"]], status_b[k][check["name"]]) for k in status_a]
        only_a, only_b = pairs.count(("pass", "fail")), pairs.count(("fail", "pass"))
        assert (check["only_a"], check["only_b"]) == (only_a, only_b)
        assert check["both_pass"] == pairs.count(("pass", "pass"))
        assert check["both_fail"] == pairs.count(("fail", "fail"))
        assert len(check["discordant"]) == only_a + only_b
        expected = stats.binomtest(only_a, only_a + only_b, 0.5).pvalue if only_a + only_b else 1
        assert check["p_value"] == pytest.approx(expected, rel=1e-12)
        some_discordant |= only_a > 0 and only_b > 0
        cells = [c.strip() for c in rows[check["name"]].split("│")[2:8]]
        assert cells == [
            str(check[k]) for k in ("both_pass", "only_a", "only_b", "both_fail", "unmeasured")
        ] + [f"{check['p_value']:.4g}"]
    assert some_discordant  # both directions occur: a real test of the two-sided p
    (steps,) = [m for m in data["measures"] if m["name"] == "steps"]
    difference = [y - x for x, y in zip(_measure(a, "steps"), _measure(b, "steps"), strict=True)]
    assert steps["mean_difference"] == pytest.approx(math.fsum(difference) / 40)
    assert steps["interval"][0] <= steps["mean_difference"] <= steps["interval"][1]


def test_a_run_compared_with_itself_and_with_different_repeats(
    two_agents: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two_agents
    done = onrecord("compare", str(a), str(a), "--json", str(tmp_path / "same.json"))
    assert done.returncode == 0, done.stdout + done.stderr
    data = orjson.loads((tmp_path / "same.json").read_bytes())
    assert all(c["p_value"] == 1 and not c["discordant"] for c in data["checks"])
    assert all(m["mean_difference"] == 0 for m in data["measures"])
    start_run(
        tmp_path / "r2", plan_run("frozenlake", f"{HERE}:coin_a", seeds=list(range(40)), repeats=2)
    )
    done = onrecord("compare", str(a), str(tmp_path / "r2"))
    assert done.returncode == 3
    assert "repeats or seeds differ" in done.stderr


def test_a_run_against_its_regrade_including_the_html_page(
    two_agents: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two_agents
    run = tmp_path / "run"
    shutil.copytree(a, run)
    regrade_run(run, name="same")
    page = tmp_path / "page.html"
    done = onrecord("compare", str(run), str(run / "regrades" / "same"), "--html", str(page))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "regrade same" in page.read_text()
    assert "40 paired trials" in done.stdout


def _flaky_run(path: Path, agent: str) -> None:
    result = start_run(
        path, plan_run(f"{HERE}:flaky_lake", f"{HERE}:{agent}", seeds=list(range(8)))
    )
    assert not result.complete
    assert len(result.errors) == 2


def test_incomplete_runs_are_refused_naming_the_missing_pairs(tmp_path: Path) -> None:
    _flaky_run(tmp_path / "a", "coin_a")
    _flaky_run(tmp_path / "b", "coin_b")
    regrade_run(tmp_path / "a", name="same")
    # Both sides miss the same two episodes, so the locks agree: a comparison of 6 pairs
    # would pass for the whole run.
    for b in (tmp_path / "b", tmp_path / "a" / "regrades" / "same"):
        done = onrecord("compare", str(tmp_path / "a"), str(b), "--json", str(tmp_path / "x"))
        assert done.returncode == 3, done.stdout + done.stderr
        assert "incomplete run: 2 of 8 planned episodes" in done.stderr
        assert f"{HERE}:flaky_lake#3" in done.stderr
        assert f"{HERE}:flaky_lake#7" in done.stderr
        assert not (tmp_path / "x").exists()
    page = tmp_path / "page.html"
    done = onrecord("compare", str(tmp_path / "a"), str(tmp_path / "b"), "--html", str(page))
    assert done.returncode == 3
    assert "incomplete run" in page.read_text()
    # The report files alone still compare, pair by recorded pair.
    done = onrecord(
        "compare", str(tmp_path / "a" / "report.json"), str(tmp_path / "b" / "report.json")
    )
    assert done.returncode == 0
    assert "6 paired trials" in done.stdout


def test_an_interrupted_run_against_a_complete_one(
    two_agents: tuple[Path, Path], tmp_path: Path
) -> None:
    a, _ = two_agents
    cut = tmp_path / "cut"
    shutil.copytree(a, cut)
    lines = (cut / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    (cut / "episodes.jsonl").write_bytes(b"".join(lines[:15]))
    # Killed before grading: no report at all.
    (cut / "report.json").unlink()
    (cut / "decision.json").unlink()
    done = onrecord("compare", str(a), str(cut))
    assert done.returncode == 3
    assert "interrupted with 15 of 40 planned episodes" in done.stderr
    assert "--resume" in done.stderr
    # Graded with episodes missing: refused, the missing pairs named.
    grade_store(RunStore.open(cut))
    done = onrecord("compare", str(a), str(cut))
    assert done.returncode == 3
    assert "B (" in done.stderr
    assert "25 of 40 planned episodes have no trial" in done.stderr
    assert "(frozenlake/goal#15, frozenlake/goal#16," in done.stderr


def test_gate_takes_a_run_directory_and_never_accepts_a_partial_run(tmp_path: Path) -> None:
    # Before: `onrecord gate RUN` was refused ("give the path of a saved record file"),
    # and gating RUN/report.json accepted a run missing planned episodes.
    _flaky_run(tmp_path / "a", "coin_a")
    policy = tmp_path / "lenient.toml"
    policy.write_text('[[requirements]]\ncheck = "*"\nmin_pass_rate = 0.01\ncritical = false\n')
    decision = tmp_path / "decision.out.json"
    for source in (tmp_path / "a", tmp_path / "a" / "report.json"):
        done = onrecord("gate", str(source), "--policy", str(policy), "--output", str(decision))
        assert done.returncode == 2, done.stdout + done.stderr
        assert "the run is incomplete: 2 planned episodes have no trial" in done.stdout
        saved = orjson.loads(decision.read_bytes())
        assert saved["decision"] == "indeterminate"
    # The same report file on its own is judged on what it holds.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy(tmp_path / "a" / "report.json", alone / "report.json")
    done = onrecord("gate", str(alone / "report.json"), "--policy", str(policy))
    assert done.returncode == 0, done.stdout + done.stderr
