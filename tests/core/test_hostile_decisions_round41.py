"""Digest-valid but hostile decisions, and compare outputs naming their own inputs.

1. A run's ``decision.json`` copied out of its run is not decided again: its fields
   were read unchecked, so one edited and re-sealed with ``"recorded": true`` verified
   as "True of 2 episodes", ``5`` as an accept of "5 of 2", and a missing field was
   "malformed record (KeyError: 'recorded')". A ``gate --output`` decision named on its
   own showed a threshold of "≥ 700.0%" for ``min_pass_rate: 7`` and an interval of
   "90.0% – 10.0%". Each is refused (exit 3) naming the field.
2. ``compare A B --markdown A`` appended the summary to A when A was a decision given
   by mistake, and ``--html A`` replaced an unreadable A (the evidence its error said to
   restore) with the page saying so. Refused up front, nothing written.

Real runs (FrozenLake), real records re-sealed after editing, the real CLI.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest, record_bytes
from onrecord.cli._records import load_any
from onrecord.errors import OnrecordError
from tests.cli_process import onrecord

Edit = Callable[[dict[str, Any]], None]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("runs")
    for name, seeds in (("a", "0-1"), ("b", "0-1")):
        args = ("frozenlake", "--agent", "walks_to_goal", "--seeds", seeds, "--no-progress")
        done = onrecord("run", *args, "--out", root / name, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr
    (root / "policy.toml").write_text(
        '[[requirements]]\ncheck = "reached_goal"\nmin_pass_rate = 0.5\n'
    )
    gated = root / "gated.json"
    done = onrecord("gate", root / "a", "--policy", root / "policy.toml", "--output", gated)
    assert done.returncode == 0, done.stdout + done.stderr
    return root


def _resealed(source: Path, target: Path, edit: Edit) -> Path:
    record = orjson.loads(source.read_bytes())
    record.pop("digest")
    edit(record)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(record_bytes({**record, "digest": content_digest(record)}))
    return target


def _set(*keys: str | int, value: Any) -> Edit:
    def edit(record: dict[str, Any]) -> None:
        inner: Any = record
        for key in keys[:-1]:
            inner = inner[key]
        inner[keys[-1]] = value

    return edit


def _drop(key: str) -> Edit:
    return lambda record: record.pop(key)


def _refused(path: Path, *expected: str) -> None:
    for command in ("verify", "show"):
        done = onrecord(command, path, "--no-progress")
        message = " ".join(done.stderr.split())
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, message
        assert "malformed record" not in message, message
        for text in expected:
            assert text in message, (command, message)


RUN_DECISION_EDITS: dict[str, tuple[Any, ...]] = {
    "recorded true": (
        _set("recorded", value=True),
        "'recorded' must be a whole number",
        "true (a boolean)",
    ),
    "recorded float": (_set("recorded", value=2.0), "'recorded' must be a whole number", "2.0"),
    "recorded negative": (_set("recorded", value=-1), "'recorded' must be a whole number", "-1"),
    "recorded over": (_set("recorded", value=5), "'recorded' (5) must be at most 'expected' (2)"),
    "recorded missing": (_drop("recorded"), "'recorded' must be", "missing"),
    "expected text": (_set("expected", value="2"), "'expected' must be a whole number", "'2'"),
    "complete text": (_set("complete", value="yes"), "'complete' must be true"),
    "complete wrong": (_set("complete", value=False), "'complete' must be true (2 of 2"),
    "partial complete": (_set("recorded", value=1), "'complete' must be false (1 of 2"),
    "decision list": (_set("decision", value=[]), "'decision' must be an object"),
    "verdict": (_set("decision", "decision", value=7), "'decision.decision' must be accept"),
    "digest": (_set("report_digest", value=5), "'report_digest' must be a sha256 digest"),
    "rate": (
        _set("decision", "requirements", 0, "min_pass_rate", value=7),
        "min_pass_rate must be in (0, 1]",
    ),
    "matched": (
        _set("decision", "requirements", 0, "matched", value=[1]),
        "matched' must be a list of check names",
    ),
    "cases": (
        _set("decision", "requirements", 0, "cases", value=3),
        "counts 3 cases with a measured result",
    ),
}


@pytest.mark.parametrize("name", sorted(RUN_DECISION_EDITS))
def test_a_copied_run_decision_with_a_forged_field_is_refused_naming_it(
    runs: Path, tmp_path: Path, name: str
) -> None:
    edit, *expected = RUN_DECISION_EDITS[name]
    copy = _resealed(runs / "a" / "decision.json", tmp_path / "copy" / "decision.json", edit)
    _refused(copy, str(copy), *expected)


def test_an_honest_copied_run_decision_still_verifies(runs: Path, tmp_path: Path) -> None:
    copy = _resealed(runs / "a" / "decision.json", tmp_path / "decision.json", lambda r: None)
    done = onrecord("verify", copy, "--no-progress")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "accept, 2 of 2 episodes" in " ".join(done.stdout.split())


GATE_EDITS: dict[str, tuple[Any, ...]] = {
    "rate over one": (
        _set("requirements", 0, "min_pass_rate", value=7),
        "min_pass_rate must be in (0, 1]",
    ),
    "rate true": (
        _set("requirements", 0, "min_pass_rate", value=True),
        "min_pass_rate must be in (0, 1]",
    ),
    "rate missing": (
        lambda r: r["requirements"][0].pop("min_pass_rate"),
        "has no 'min_pass_rate'",
    ),
    "interval": (
        _set("requirements", 0, "interval", value=[0.9, 0.1]),
        "interval' must be [low, high]",
    ),
    "interval text": (
        _set("requirements", 0, "interval", value="x"),
        "interval' must be [low, high]",
    ),
    "matched": (
        _set("requirements", 0, "matched", value=7),
        "matched' must be a list of check names",
    ),
    "cases": (
        _set("requirements", 0, "cases", value=99),
        "counts 99 cases with a measured result",
    ),
    "policy digest": (
        _set("policy_digest", value="zz"),
        "'policy_digest' must be a sha256 digest",
    ),
}


@pytest.mark.parametrize("name", sorted(GATE_EDITS))
def test_a_gate_decision_with_a_forged_field_is_refused_naming_it(
    runs: Path, tmp_path: Path, name: str
) -> None:
    edit, *expected = GATE_EDITS[name]
    copy = _resealed(runs / "gated.json", tmp_path / "gated.json", edit)
    _refused(copy, str(copy), *expected)


_SCALARS = st.none() | st.booleans() | st.integers(-3, 5) | st.floats() | st.text(max_size=3)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner),
    max_leaves=4,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(field=st.sampled_from(["recorded", "expected", "complete", "decision"]), value=_JSON)
def test_any_value_of_a_run_decisions_field_verifies_only_when_it_can_be_so(
    runs: Path, tmp_path: Path, field: str, value: Any
) -> None:
    target = tmp_path / "h" / "decision.json"
    copy = _resealed(runs / "a" / "decision.json", target, _set(field, value=value))
    try:
        bundle = load_any(copy)
    except OnrecordError as exc:  # refused, naming the file: never another exception
        refusal = str(exc)
    else:
        refusal = ""
    if refusal:
        assert str(copy) in refusal
        return
    data = bundle.items[0]
    recorded, expected = data["recorded"], data["expected"]
    assert type(recorded) is int
    assert type(expected) is int
    assert 0 <= recorded <= expected
    assert data["complete"] is (recorded == expected)
    assert data["decision"]["decision"] in ("accept", "reject", "indeterminate")


# -- 2. compare outputs naming an input ---------------------------------------------
def _compare_refused(cwd: Path, a: str, b: str, option: str, target: str, side: str) -> None:
    before = (cwd / target).read_bytes()
    done = onrecord("compare", a, b, option, target, cwd=cwd)
    assert done.returncode == 3, done.stdout + done.stderr
    assert f"{option} {target} is the {side} file" in " ".join(done.stderr.split())
    assert (cwd / target).read_bytes() == before  # nothing written into it


def test_compare_refuses_markdown_onto_a_decision_given_as_an_input(runs: Path) -> None:
    _compare_refused(runs, "gated.json", "b/report.json", "--markdown", "gated.json", "A")


def test_compare_refuses_html_replacing_a_damaged_input(runs: Path, tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.json"
    damaged.write_bytes((runs / "a" / "report.json").read_bytes()[:300])  # cut short
    shutil.copy(runs / "b" / "report.json", tmp_path / "b.json")
    _compare_refused(tmp_path, "damaged.json", "b.json", "--html", "damaged.json", "A")
    _compare_refused(tmp_path, "damaged.json", "b.json", "--markdown", "damaged.json", "A")


def test_compare_refuses_its_json_onto_a_comparison_given_as_an_input(
    runs: Path, tmp_path: Path
) -> None:
    saved = tmp_path / "saved.json"
    done = onrecord("compare", runs / "a", runs / "b", "--json", saved)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.copy(runs / "a" / "report.json", tmp_path / "a.json")
    for option in ("--json", "--markdown", "--html"):
        _compare_refused(tmp_path, "a.json", "saved.json", option, "saved.json", "B")


def test_compare_still_writes_beside_its_inputs(runs: Path, tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    done = onrecord("compare", runs / "a", runs / "b", "--markdown", summary)
    assert done.returncode == 0, done.stdout + done.stderr
    assert summary.read_text().strip()
