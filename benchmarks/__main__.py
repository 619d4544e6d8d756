"""Run every benchmark script in this folder: ``python -m benchmarks`` (``make bench``).
``python -m benchmarks core envkit`` runs only those."""

from __future__ import annotations

import importlib
import pkgutil
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
        importlib.import_module(f"benchmarks.{name}").main()


if __name__ == "__main__":
    main(sys.argv[1:])
