"""Run every benchmark script in this folder: ``python -m benchmarks`` (``make bench``).
``python -m benchmarks core envkit`` runs only those."""

from __future__ import annotations

import pkgutil
import runpy
import sys
from pathlib import Path


def main(selected: list[str]) -> None:
    folder = str(Path(__file__).parent)
    names = sorted(
        info.name for info in pkgutil.iter_modules([folder]) if info.name.startswith("bench_")
    )
    for name in names:
        if selected and name.removeprefix("bench_") not in selected:
            continue
        print(f"\n=== {name} ===", flush=True)
        sys.argv = [name]  # each script parses its own (empty) options
        runpy.run_module(f"benchmarks.{name}", run_name="__main__")


if __name__ == "__main__":
    main(sys.argv[1:])
