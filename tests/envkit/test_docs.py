from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "envkit.md"


def test_the_first_example_in_the_docs_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)[0]
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(DOC), "exec"), {"__name__": "envkit_doc"})
    assert "status='pass'" in capsys.readouterr().out
    assert (tmp_path / "episodes" / "alloc-17" / "manifest.json").is_file()
