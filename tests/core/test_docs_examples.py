"""Code in the docs runs: the first Python block of docs/evidence.md is a complete
example and must keep working as the API evolves."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _python_blocks(page: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", (DOCS / page).read_text(), flags=re.S)


def test_the_evidence_page_example_runs() -> None:
    namespace: dict[str, object] = {}
    exec(compile(_python_blocks("evidence.md")[0], "docs/evidence.md", "exec"), namespace)
    episode = namespace["episode"]
    assert episode.ended == "truncated"  # type: ignore[attr-defined]
    assert episode.coverage_issues == ()  # type: ignore[attr-defined]
    assert episode.measures["steps"] == 500  # type: ignore[attr-defined]
