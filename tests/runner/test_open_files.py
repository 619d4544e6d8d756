"""A process that runs many runs keeps few files open: the providers of runs it moved on
from are released (their tool worlds closed, their snapshots kept), and a provider keeps
a bounded number of task worlds open. Before, every provider and every world a process
ever built stayed open: evaluating the remittance agents one after another in-process
ran out of descriptors (``EMFILE``) at the sixth under ``ulimit -n 1024``.

Each test runs in a fresh interpreter with a low descriptor limit (real runs, real
SQLite worlds), counting the descriptors open after every run."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]
KINDS = ["partial_contractual", "full_payment", "denial"]
"""15 remittance tasks: a world each."""

SCRIPT = textwrap.dedent(
    """
    import os, resource, sys
    from pathlib import Path

    import orjson

    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))
    from onrecord.runner import InProcessExecutor, plan_run, start_run
    from onrecord.runner import _toolrunner

    KINDS = orjson.loads(sys.argv[4])

    def main():
        root = Path(sys.argv[1])
        spec = orjson.loads(sys.argv[3])
        print(len(os.listdir("/proc/self/fd")), flush=True)
        for index, (agent, worlds) in enumerate(spec):
            if worlds is not None:
                _toolrunner.MAX_OPEN_WORLDS = worlds
            protocol = plan_run(
                "remittance", agent, environment_config={"kinds": KINDS}
            )
            result = start_run(root / str(index), protocol, executor=InProcessExecutor())
            print(orjson.dumps({
                "agent": agent,
                "open": len(os.listdir("/proc/self/fd")),
                "complete": result.complete,
                "errors": list(result.errors),
            }).decode(), flush=True)

    if __name__ == "__main__":
        main()
    """
)


def _runs(tmp_path: Path, limit: int, spec: list[tuple[str, int | None]]) -> list[Any]:
    """What each run of ``spec`` (agent, open worlds at most) left open, beyond what the
    process had open before the first."""
    script = tmp_path / "runs.py"
    script.write_text(SCRIPT, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path), str(limit), *map(_json, (spec, KINDS))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    before, *runs = [orjson.loads(line) for line in done.stdout.splitlines()]
    assert len(runs) == len(spec)
    for run in runs:
        assert run["complete"], run
        assert not run["errors"], run
        run["open"] -= before
    return runs


def _json(value: Any) -> str:
    return orjson.dumps(value).decode()


def _fingerprints(run_dir: Path) -> dict[str, str]:
    lines = (run_dir / "episodes.jsonl").read_bytes().splitlines()
    return {orjson.loads(line)["case_id"]: orjson.loads(line)["fingerprint"] for line in lines}


def test_agent_after_agent_in_one_process_keeps_the_open_files_of_one_run(
    tmp_path: Path,
) -> None:
    # 15 worlds hold ~80 descriptors: before, the third run here hit the limit of 200.
    agents = ["careful", "double_poster", "careful", "skips_notes", "careful"]
    runs = _runs(tmp_path, 200, [(agent, None) for agent in agents])
    opened = [run["open"] for run in runs]
    assert 15 * 4 <= opened[0] <= 15 * 7, opened  # the worlds of one run
    assert all(count <= opened[0] + 10 for count in opened), opened
    # "careful" came back to its kept provider (worlds reopened from its snapshots):
    # the same episodes as from the provider built for it.
    assert _fingerprints(tmp_path / "2") == _fingerprints(tmp_path / "0")
    assert _fingerprints(tmp_path / "4") == _fingerprints(tmp_path / "0")
    assert len(_fingerprints(tmp_path / "0")) == 15


def test_a_run_over_more_tasks_than_open_worlds_closes_the_oldest(tmp_path: Path) -> None:
    # Three worlds open at most: a run of 15 tasks closes twelve on the way, and
    # records what a run keeping all 15 open records.
    runs = _runs(tmp_path, 200, [("careful", 3), ("double_poster", 40), ("careful", 40)])
    opened = [run["open"] for run in runs]
    assert opened[0] <= 3 * 7, opened
    assert 15 * 4 <= opened[1] <= 15 * 7, opened
    assert _fingerprints(tmp_path / "0") == _fingerprints(tmp_path / "2")
    assert len(_fingerprints(tmp_path / "0")) == 15
