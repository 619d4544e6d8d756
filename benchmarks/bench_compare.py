"""``onrecord compare A B`` of two remittance runs, with and without ``--html PAGE``.

Run: ``python -m benchmarks.bench_compare``. Two finished runs of 33 tasks × 30 seeds
(990 episodes each: the ``careful`` and the ``double_poster`` agent, recorded by a
process pool of 2 workers as in bench_report.py) compared by whole ``onrecord``
processes, timed in interleaved rounds (best round counts). The page adds only its
rendering: A and B are read, verified and compared once (before, the page read, verified
and compared them again, and ``--html`` cost 1.93× the comparison alone).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks._timing import best_times_interleaved, row
from onrecord.runner import ProcessPoolExecutor, plan_run, start_run

ROUNDS = 5
SEEDS = 30
SCRIPT = str(Path(sys.executable).parent / "onrecord")
# What the page may add to the comparison: its rendering, never a second read.
HTML_BOUND = 1.5


def _record(root: Path, agent: str) -> Path:
    path = root / agent
    plan = plan_run("remittance", agent, seeds=list(range(SEEDS)))
    with ProcessPoolExecutor(2) as pool:
        start_run(path, plan, executor=pool)
    return path


def _process(command: Sequence[str]) -> Callable[[], object]:
    def run() -> None:
        # Exit 0: the comparison is made (a refused one would time the refusal).
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)

    return run


def main() -> None:
    episodes = 33 * SEEDS
    print(f"# onrecord compare, two runs of {episodes} episodes (best of {ROUNDS} rounds)")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        a, b = _record(root, "careful"), _record(root, "double_poster")
        compare = [SCRIPT, "compare", str(a), str(b)]
        alone, with_page = best_times_interleaved(
            [_process(compare), _process([*compare, "--html", str(root / "page.html")])],
            rounds=ROUNDS,
        )
    print(row("onrecord compare A B", f"{alone:.2f} s", "(info)", True))
    print(row("onrecord compare A B --html PAGE", f"{with_page:.2f} s", "(info)", True))
    ratio = with_page / alone
    print(row("--html / compare alone", f"{ratio:.2f}x", f"≤ {HTML_BOUND}x", ratio <= HTML_BOUND))


if __name__ == "__main__":
    main()
