"""Planning and configuration probes: seed specs, TOML configs, task files, protocol
limits and the report lock of a run (in-process; the CLI probes are in
test_cli_probe3.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from onrecord.compare import compare_reports
from onrecord.errors import ComparisonRefused, InputError
from onrecord.runner import (
    RunConfig,
    RunProtocol,
    load_config,
    load_tasks,
    parse_seeds,
    plan_run,
    start_run,
)
from onrecord.runner._registry import EnvironmentRef


@pytest.mark.parametrize(
    ("spec", "seeds"),
    [("0-2", [0, 1, 2]), (" 1 , 2 ", [1, 2]), (" 2 - 4 ,7", [2, 3, 4, 7]), ("007", [7])],
)
def test_seed_specs_that_are_valid(spec: str, seeds: list[int]) -> None:
    assert parse_seeds(spec) == seeds


@pytest.mark.parametrize("spec", ["1_0", "+3", "\u0663", "1e3", "0x10", "-1", "1-", ""])
def test_seed_specs_are_plain_decimal_numbers(spec: str) -> None:
    # int() alone took "1_0" as 10, "+3" as 3 and the Arabic-Indic digit three as 3.
    with pytest.raises(InputError, match="--seeds"):
        parse_seeds(spec, "--seeds")


def test_a_reversed_range_is_named_not_reported_as_no_seeds() -> None:
    with pytest.raises(InputError, match=r"'3-1' runs backwards; write it low-high, e\.g\. 1-3"):
        parse_seeds("3-1", "--seeds")


def test_a_huge_seed_range_is_refused_at_once_not_a_memory_error() -> None:
    # Counted from the range's ends: building the list first died with MemoryError.
    with pytest.raises(InputError, match="more than 10,000,000 seeds"):
        parse_seeds("0-100000000000", "--seeds")


@pytest.mark.parametrize("spec", ["18446744073709551616", "9" * 5000, [2**64], [-1]])
def test_seeds_beyond_64_bits_name_the_range(spec: Any) -> None:
    # Was "store it as a string" from the JSON encoder, or int()'s digit-limit ValueError.
    with pytest.raises(InputError, match=r"from 0 to 2\*\*64 - 1"):
        parse_seeds(spec, "--seeds")
    assert parse_seeds(str(2**64 - 1)) == [2**64 - 1]


def test_huge_repeats_are_refused_before_the_plan_is_built() -> None:
    with pytest.raises(InputError, match="at most 10,000,000"):
        plan_run("frozenlake", "walks_to_goal", repeats=10**12)
    with pytest.raises(InputError, match="would hold 20,000,000 episodes"):
        plan_run("frozenlake", "walks_to_goal", repeats=5_000_000, seeds=range(4))


def test_repeated_task_ids_among_many_are_named() -> None:
    # Counted in one pass (the search was quadratic: 12.5 s for 30,000 tasks).
    tasks = (*({"case_id": f"t{i}"} for i in range(30_000)), {"case_id": "t7"})
    ref = EnvironmentRef("x", "gym", "x")
    with pytest.raises(InputError, match=r"repeated: \['t7'\]"):
        RunProtocol(ref, "a", ("default",), {}, tasks)


def _config(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "run.toml"
    if isinstance(text, str):
        path.write_text(text, encoding="utf-8")
    else:
        path.write_bytes(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("tasks = []", "tasks names nothing"),
        ('tasks = ","', "tasks names nothing"),
        ("checks = []", "checks names nothing"),
        ('checks = " , "', "checks names nothing"),
        ("checks = [1]", "checks must list strings"),
        ("tasks = [1, 2]", "tasks must list strings"),
        ("seeds = []", "seeds is empty"),
        ("seeds = [1.0]", "seeds must list non-negative integers"),
        ('out = ""', "out is empty"),
        ('tasks_file = ""', "tasks_file is empty"),
    ],
)
def test_config_values_that_name_nothing_are_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    # tasks = [] and checks = [] silently meant "all tasks" / "default checks"; a list of
    # numbers as checks crashed with AttributeError; out = "" meant the config's folder.
    with pytest.raises(InputError, match=message) as caught:
        load_config(_config(tmp_path, text))
    assert "run.toml" in str(caught.value)


def test_a_config_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    path = _config(tmp_path, b'environment = "frozenlake"\nagent = "\xff"\n')
    with pytest.raises(InputError, match=r"not UTF-8 text \(byte 36 is 0xff\)"):
        load_config(path)


def test_a_tasks_file_that_is_not_utf8_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(b'{"case_id": "a", "input": "\xfe"}\n')
    with pytest.raises(InputError, match=r"tasks\.jsonl is not UTF-8 text"):
        load_tasks(path)


def test_env_config_flags_merge_into_the_config_files_table() -> None:
    base = RunConfig(environment_config={"size": 30, "kinds": ["split"]})
    merged = base.merged(RunConfig(environment_config={"size": 40}))
    assert merged.environment_config == {"size": 40, "kinds": ["split"]}
    assert base.merged(RunConfig()).environment_config == {"size": 30, "kinds": ["split"]}


@pytest.mark.parametrize("kinds", ["split", ["nope"], []])
def test_remittance_kinds_must_be_a_list_of_known_kinds(kinds: Any) -> None:
    # kinds="split" was the set of letters {s, p, l, i, t}: no task matched, and the
    # error blamed the environment for having no tasks.
    with pytest.raises(InputError, match="remittance kinds"):
        plan_run("remittance", "careful", environment_config={"kinds": kinds, "size": 30})


def test_the_report_lock_of_a_run_covers_max_steps(tmp_path: Path) -> None:
    # Tool-world trials record neither the step limit nor the seed in their settings:
    # two runs that differ only there compared as if they were the same experiment.
    config = {"size": 30, "kinds": ["full_payment"]}
    reports = []
    for name, steps in (("a", None), ("b", 3)):
        protocol = plan_run(
            "remittance", "careful", environment_config=config, max_steps=steps, seeds=[0]
        )
        protocol = RunProtocol(**{**protocol.__dict__, "tasks": protocol.tasks[:1]})
        reports.append(start_run(tmp_path / name, protocol).report)
    with pytest.raises(ComparisonRefused, match="run"):
        compare_reports(reports[0], reports[1])
    ref = protocol.environment
    locks = [
        RunProtocol(ref, "a", ("default",), {}, protocol.tasks, seeds=seeds).lock_extra()
        for seeds in ((0,), (1,))
    ]
    assert locks[0] != locks[1]
