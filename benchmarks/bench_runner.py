"""Runner throughput, scaling, memory and Ray overhead (see TARGETS.md).

    python benchmarks/bench_runner.py            # full: ~2 minutes on 2 cores
    python benchmarks/bench_runner.py --quick    # smaller runs, same figures

1. Remittance episodes (careful agent, ~7 tool calls, 33 tasks on 1k-row snapshots),
   in-process and in a process pool of 1 and 2 workers: episodes/s, and the ratio
   2 workers / 1 worker. "steady" excludes worker start-up (spawn, imports, building each
   task's snapshot), measured from the first to the last episode recorded.
2. A 10,000-episode run streaming to disk: peak RSS of the parent and of the workers.
3. The Ray executor against the process pool on this machine (same protocol, 2 CPUs).
4. Re-grading the in-process run (one process: rebuild each episode's end state from its
   start snapshot and recorded diff, grade it) against running it in-process.
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from onrecord.runner import (
    Executor,
    InProcessExecutor,
    JobResult,
    ProcessPoolExecutor,
    Progress,
    RayExecutor,
    RunProtocol,
    plan_run,
    regrade_run,
    start_run,
)


class _Clock(Progress):
    def start(self, total: int, done: int) -> None:
        self.begin, self.stamps, self.failed = time.perf_counter(), [], 0

    def advance(self, result: JobResult) -> None:
        self.stamps.append(time.perf_counter())
        self.failed += result.error is not None


def protocol(seeds: int) -> RunProtocol:
    """Careful agent on every remittance task with a 1,000-row background."""
    return plan_run(
        "remittance", "careful", seeds=list(range(seeds)), environment_config={"size": 1000}
    )


def measure(executor: Executor, plan: RunProtocol, root: Path, name: str) -> dict[str, Any]:
    """Run ``plan`` once; overall and steady episodes per second."""
    clock = _Clock()
    started = time.perf_counter()
    with executor:
        result = start_run(root / name, plan, executor=executor, progress=clock)
    overall = time.perf_counter() - started
    stamps = clock.stamps
    if not result.complete or clock.failed:
        raise SystemExit(f"{name}: episodes failed to record: {result.errors[:3]}")
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0])
    return {
        "name": name,
        "episodes": len(stamps),
        "overall": len(stamps) / overall,
        "steady": steady,
        "seconds": overall,
    }


def show(row: dict[str, Any]) -> None:
    print(
        f"  {row['name']:<22} {row['episodes']:>6} episodes  {row['seconds']:7.2f} s  "
        f"overall {row['overall']:7.1f} ep/s  steady {row['steady']:7.1f} ep/s"
    )


def throughput(root: Path, seeds: int) -> dict[str, dict[str, Any]]:
    plan = protocol(seeds)
    print(f"1. remittance throughput ({plan.episodes} episodes, 1k-row snapshots)")
    rows = {}
    for name, make in (
        ("in-process", InProcessExecutor),
        ("process pool, 1 worker", lambda: ProcessPoolExecutor(1)),
        ("process pool, 2 workers", lambda: ProcessPoolExecutor(2)),
    ):
        rows[name] = measure(make(), plan, root, name.replace(" ", "_").replace(",", ""))
        show(rows[name])
    one, two = rows["process pool, 1 worker"], rows["process pool, 2 workers"]
    print(
        f"  scaling 2 workers / 1 worker: steady {two['steady'] / one['steady']:.2f}x, "
        f"overall {two['overall'] / one['overall']:.2f}x   (target: >= 500 ep/s with 2 "
        f"workers, near-linear)"
    )
    return rows


_MEMORY_CHILD = """
import resource, sys, time
from pathlib import Path
from onrecord.runner import ProcessPoolExecutor, plan_run, start_run
plan = plan_run("remittance", "careful", seeds=list(range({seeds})),
                environment_config={{"size": 1000}})
start = time.perf_counter()
with ProcessPoolExecutor(2) as pool:
    result = start_run(Path(sys.argv[1]), plan, executor=pool)
seconds = time.perf_counter() - start
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
size = sum(p.stat().st_size for p in Path(sys.argv[1]).rglob("*") if p.is_file())
print(len(result.report.trials), seconds, int(hwm) / 1024, children / 1024, size / 2**20)
"""


def memory(root: Path, seeds: int) -> None:
    episodes = 33 * seeds
    print(f"2. streaming run of {episodes} episodes (process pool, 2 workers)")
    done = subprocess.run(
        [sys.executable, "-c", _MEMORY_CHILD.format(seeds=seeds), str(root / "big")],
        capture_output=True,
        text=True,
        check=True,
    )
    count, seconds, parent, worker, size = done.stdout.split()
    print(
        f"  {int(count)} episodes in {float(seconds):.1f} s "
        f"({int(count) / float(seconds):.0f} ep/s); peak RSS parent {float(parent):.0f} MB, "
        f"largest worker {float(worker):.0f} MB; run directory {float(size):.0f} MB "
        "(target: peak < 500 MB)"
    )


def ray_overhead(root: Path, seeds: int, pool: dict[str, Any]) -> None:
    import ray

    plan = protocol(seeds)
    print(f"3. Ray executor vs process pool ({plan.episodes} episodes, 2 CPUs, one machine)")
    started = time.perf_counter()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    boot = time.perf_counter() - started
    try:
        row = measure(RayExecutor(), plan, root, "ray, 2 CPUs")
    finally:
        ray.shutdown()
    show(pool)
    show(row)
    print(
        f"  Ray / process pool: steady {row['steady'] / pool['steady']:.2f}x, overall "
        f"{row['overall'] / pool['overall']:.2f}x (cluster start {boot:.1f} s not included)"
    )


def regrade_speed(root: Path, run: dict[str, Any]) -> None:
    clock = _Clock()
    started = time.perf_counter()
    regrade_run(root / "in-process", progress=clock)
    seconds = time.perf_counter() - started
    rate = len(clock.stamps) / seconds
    print(f"4. regrade of the in-process run ({len(clock.stamps)} episodes, one process)")
    print(
        f"  {seconds:.2f} s, {rate:.0f} ep/s; regrade / in-process run: "
        f"{rate / run['overall']:.2f}x the episodes per second (context)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    args = parser.parse_args()
    seeds, big = (12, 61) if args.quick else (40, 304)  # 33 tasks × seeds episodes
    with tempfile.TemporaryDirectory(prefix="bench-runner-") as tmp:
        root = Path(tmp)
        rows = throughput(root, seeds)
        memory(root, big)
        ray_overhead(root, seeds, rows["process pool, 2 workers"])
        regrade_speed(root, rows["in-process"])
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"(benchmark driver peak RSS {usage:.0f} MB)")


if __name__ == "__main__":
    main()
