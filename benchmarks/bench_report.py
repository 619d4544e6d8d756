"""The HTML report at the scale users run (see docs/html-report.md).

    python -m benchmarks.bench_report            # 1k and 10k episodes: ~2 minutes
    python -m benchmarks.bench_report --quick    # 1k and 2k episodes

Remittance runs of the ``double_poster`` agent (3 of the 33 tasks fail: about 9 % of
the episodes, every one with its diff, audit history and check evidence) on 1k-row
snapshots, recorded by a process pool of 2 workers as in bench_runner.py. For each: the
time ``onrecord report`` takes to write the page (best of 3, one run for 10k), the page's
size, and in headless Chromium (when installed) the time from navigation to the end of
the page's script (the page is then drawn and usable; best of 3) and its DOM elements.
``--episodes all`` (every episode detailed, the reader's explicit choice) is measured on
the largest run too.
"""

from __future__ import annotations

import argparse
import html
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from benchmarks._timing import best_time
from onrecord.html import write_report
from onrecord.runner import ProcessPoolExecutor, plan_run, start_run

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

# Appended after the page's own script: it has run by then, so this reads the time it
# took from navigation start, and the DOM it built.
_PROBE = (
    "<script>document.body.offsetHeight;document.body.setAttribute('data-probe',"
    "JSON.stringify({ms:performance.now(),nodes:document.getElementsByTagName('*').length,"
    "rendered:document.body.dataset.rendered}));</script>"
)


def record(root: Path, seeds: int) -> Path:
    """A finished run of 33 × ``seeds`` episodes."""
    path = root / f"run-{seeds}"
    plan = plan_run(
        "remittance", "double_poster", seeds=list(range(seeds)), environment_config={"size": 1000}
    )
    with ProcessPoolExecutor(2) as pool:
        start_run(path, plan, executor=pool)
    return path


def in_chromium(page: Path, profile: Path) -> dict[str, Any] | None:
    """Load time and DOM size of ``page``: best of 3 loads, or None without Chromium."""
    if CHROMIUM is None:
        return None
    text = page.read_text()
    end = text.rindex("</body>")
    probed = page.with_name(f"probed-{page.name}")
    probed.write_text(text[:end] + _PROBE + text[end:])
    loads = []
    for _ in range(3):
        done = subprocess.run(
            [
                CHROMIUM,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                f"--user-data-dir={profile}",
                "--window-size=1280,900",
                "--dump-dom",
                probed.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            check=True,
        )
        found = re.search(r'data-probe="([^"]*)"', done.stdout)
        if found is None:
            raise SystemExit(f"{page.name}: the probe did not run: {done.stderr[-500:]}")
        loads.append(orjson.loads(html.unescape(found.group(1))))
    probed.unlink()
    best = min(loads, key=lambda load: load["ms"])
    if best["rendered"] != "yes":
        raise SystemExit(f"{page.name}: the page's script did not finish")
    return best


def measure(run: Path, episodes: str, repeat: int, profile: Path) -> dict[str, Any]:
    page = run.parent / f"{run.name}-{episodes}.html"
    seconds = best_time(lambda: write_report(run, page, episodes=episodes), repeat=repeat)
    return {
        "seconds": seconds,
        "bytes": page.stat().st_size,
        "browser": in_chromium(page, profile),
    }


def show(name: str, episodes: int, row: dict[str, Any]) -> None:
    browser = row["browser"]
    loaded = (
        f"Chromium load {browser['ms']:6.0f} ms, {browser['nodes']:>6} elements"
        if browser
        else "(Chromium not installed)"
    )
    print(
        f"  {name:<28} write {row['seconds']:6.2f} s  {row['bytes'] / 2**20:6.2f} MB "
        f"({row['bytes'] / episodes:5.0f} B/episode)  {loaded}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="1k and 2k episodes")
    args = parser.parse_args()
    sizes = (30, 61) if args.quick else (30, 304)  # 33 tasks × seeds episodes
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        root = Path(tmp)
        for seeds in sizes:
            started = time.perf_counter()
            run = record(root, seeds)
            episodes = 33 * seeds
            print(
                f"{episodes} episodes of double_poster (recorded in "
                f"{time.perf_counter() - started:.1f} s, 2 workers)"
            )
            repeat = 3 if seeds < 100 else 1
            show("onrecord report (auto)", episodes, measure(run, "auto", repeat, root / "p"))
            if seeds == sizes[-1]:
                show("--episodes all", episodes, measure(run, "all", 1, root / "p"))
    print("(targets: a page of a few MB that loads in about a second; write time is mostly")
    print(" reading and verifying the run's records, as `onrecord verify` does)")


if __name__ == "__main__":
    main()
