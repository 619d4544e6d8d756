"""``--tasks-file`` mistakes are named where they are: a repeated case id by file and
task numbers, a resume with an edited task by the task and the field that changed."""

from __future__ import annotations

import codecs
from pathlib import Path

import orjson
import pytest

from onrecord.case import EvalCase
from onrecord.errors import InputError
from onrecord.runner import load_config, load_tasks
from tests.runner.conftest import onrecord


def _jsonl(path: Path, inputs: dict[str, object]) -> Path:
    path.write_bytes(
        b"".join(orjson.dumps({"case_id": k, "input": v}) + b"\n" for k, v in inputs.items())
    )
    return path


def _write(path: Path, ids: list[str]) -> Path:
    if path.suffix == ".toml":
        path.write_text("".join(f'[[tasks]]\ncase_id = "{i}"\ninput = 1\n' for i in ids))
    else:
        path.write_bytes(b"".join(orjson.dumps({"case_id": i, "input": 1}) + b"\n" for i in ids))
    return path


@pytest.mark.parametrize("suffix", [".toml", ".jsonl"])
def test_a_repeated_case_id_names_the_file_and_both_tasks(tmp_path: Path, suffix: str) -> None:
    ids = ["a", "A", "é", "e\u0301", "b"]  # differing only by case or form: distinct
    assert [c.identity["case_id"] for c in load_tasks(_write(tmp_path / f"ok{suffix}", ids))] == ids
    with pytest.raises(InputError, match=r"bad\.\w+: task 6 has the case_id 'a' of task 1"):
        load_tasks(_write(tmp_path / f"bad{suffix}", [*ids, "a"]))


def test_the_cli_names_the_tasks_file_of_a_repeated_id(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"case_id": "x", "input": 1}\n\n{"case_id": "x", "input": 2}\n')
    run = onrecord(
        "run", "frozenlake", "--agent", "walks_to_goal", "--tasks-file", str(tasks),
        "--out", str(tmp_path / "run"), "--no-progress",
    )  # fmt: skip
    assert run.returncode == 3
    assert "tasks.jsonl: task 2 has the case_id 'x' of task 1" in run.stderr
    assert not (tmp_path / "run").exists()


def test_resume_with_an_edited_task_names_the_task_and_field(tmp_path: Path) -> None:
    inputs: dict[str, object] = {f"t{i}": i for i in range(60)}
    run_dir = tmp_path / "run"
    args = ["--tasks-file", str(_jsonl(tmp_path / "a.jsonl", inputs)), "--no-progress"]
    first = onrecord("run", "frozenlake", "--agent", "walks_to_goal", "--out", str(run_dir), *args)
    assert first.returncode == 0, first.stderr
    before = {p.name: p.read_bytes() for p in run_dir.iterdir()}
    edited = _jsonl(tmp_path / "b.jsonl", {**inputs, "t57": "changed"})
    resumed = onrecord("run", "--resume", str(run_dir), "--tasks-file", str(edited))
    assert resumed.returncode == 3
    # Both sides cut short to "[{'case_id': 't0', ..." looked the same.
    assert "tasks['t57'].input: the run has 57, the new settings say 'changed'" in resumed.stderr
    assert "content_digest" not in resumed.stderr
    assert {p.name: p.read_bytes() for p in run_dir.iterdir()} == before


def test_resume_lists_at_most_ten_edited_tasks(tmp_path: Path) -> None:
    inputs: dict[str, object] = {f"t{i}": i for i in range(30)}
    run_dir = tmp_path / "run"
    args = ["--tasks-file", str(_jsonl(tmp_path / "a.jsonl", inputs)), "--no-progress"]
    assert (
        onrecord("run", "frozenlake", "-a", "walks_to_goal", "-o", str(run_dir), *args).returncode
        == 0
    )
    edited = _jsonl(tmp_path / "b.jsonl", dict.fromkeys(inputs, -1))
    resumed = onrecord("run", "--resume", str(run_dir), "--tasks-file", str(edited))
    assert resumed.returncode == 3
    assert "tasks['t9'].input" in resumed.stderr
    assert "tasks['t10']" not in resumed.stderr
    assert "tasks: 20 more differences" in resumed.stderr


@pytest.mark.parametrize("suffix", [".toml", ".jsonl"])
def test_a_utf8_byte_order_mark_is_not_content(tmp_path: Path, suffix: str) -> None:
    # PowerShell 5's `Out-File -Encoding utf8` and older Notepad start files with one.
    path = _write(tmp_path / f"tasks{suffix}", ["ü", "b"])
    path.write_bytes(codecs.BOM_UTF8 + path.read_bytes())
    assert [c.identity["case_id"] for c in load_tasks(path)] == ["ü", "b"]


def test_a_config_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    path = tmp_path / "run.toml"
    path.write_bytes(codecs.BOM_UTF8 + b'environment = "frozenlake"\nseeds = "0-2"\n')
    assert load_config(path).seeds == [0, 1, 2]


def test_a_bad_byte_after_a_byte_order_mark_is_placed_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + b'{"case_id": "\xff"}\n')
    with pytest.raises(InputError, match="byte 16 is 0xff"):
        load_tasks(path)


def test_a_misspelt_task_key_is_refused_not_dropped(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text(
        '{"case_id": "a", "input": 1}\n{"case_id": "b", "input": 2, "expected_ouput": 3}\n'
    )
    with pytest.raises(
        InputError,
        match=r"task 2 \('b'\) has the unknown key 'expected_ouput' "
        r"\(did you mean 'expected_output'\?\)",
    ):
        load_tasks(path)


def test_saved_cases_load_as_a_tasks_file(tmp_path: Path) -> None:
    cases = [EvalCase({"n": 1}, 2, case_id="a", metadata={"k": "v"}, completion="either")]
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b"".join(orjson.dumps(case.to_dict()) + b"\n" for case in cases))
    assert [case.to_dict() for case in load_tasks(path)] == [case.to_dict() for case in cases]
