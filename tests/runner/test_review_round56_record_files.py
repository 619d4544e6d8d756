"""A re-sealed line of ``episodes.jsonl`` whose ``files`` is not a mapping of side-file
names to sha256s is refused when the record is read, naming the field: ``verify``
refused such a run, but ``onrecord report`` and ``RunStore.saved_episode`` failed on it
with an AttributeError traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from onrecord._canonical import content_digest, record_bytes
from onrecord.errors import SchemaError
from onrecord.runner import RunStore, plan_run, start_run
from tests.runner.conftest import onrecord


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("round56-files") / "run"
    start_run(run, plan_run("remittance", "careful", tasks=["full-01"], repeats=1))
    return run


def _with_files(run: Path, files: Any, into: Path) -> Path:
    """A copy of the run whose first record's ``files`` is ``files``, re-sealed."""
    into.mkdir()
    for item in run.iterdir():
        if item.is_file():
            (into / item.name).write_bytes(item.read_bytes())
    (into / "files").mkdir()
    lines = (run / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    record = orjson.loads(lines[0])
    record["files"] = files
    record["digest"] = content_digest({k: v for k, v in record.items() if k != "digest"})
    (into / "episodes.jsonl").write_bytes(record_bytes(record) + b"\n" + b"".join(lines[1:]))
    return into


@pytest.mark.parametrize("files", ["x", ["a"], 3, None, True])
def test_a_files_field_that_is_no_mapping_is_refused_on_reading(
    finished_run: Path, tmp_path: Path, files: Any
) -> None:
    run = _with_files(finished_run, files, tmp_path / "edited")
    store = RunStore.open(run)
    with pytest.raises(SchemaError, match=r"line 1: files is .* not a mapping of side file"):
        list(store.records())


def test_report_of_such_a_run_exits_3_naming_the_field(finished_run: Path, tmp_path: Path) -> None:
    run = _with_files(finished_run, "x", tmp_path / "edited")
    done = onrecord("report", str(run), "-o", str(tmp_path / "report.html"))
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    assert "files is str 'x', not a mapping of side file names" in done.stderr
    assert not (tmp_path / "report.html").exists()


def test_the_untouched_run_still_reads(finished_run: Path) -> None:
    store = RunStore.open(finished_run)
    records = list(store.records())
    assert len(records) == 1
    assert (
        store.saved_episode(records[0]).evidence["digest"] == records[0].data["evidence"]["digest"]
    )
