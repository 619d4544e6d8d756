"""Review round 56: saved records that ``verify`` passed and ``show`` could not show, a
Python loader laxer than ``verify``, and refusals that did not say what to do.

* A ledger ``summary.json`` re-sealed with ``ablation: 5`` (or a bad ablation row,
  ``ok``, ``complete``, digest or classic ``expected``) verified (exit 0), then ``show``
  printed a TypeError traceback (exit 1). Each field is now refused by both (exit 3),
  named with what it must be.
* ``Comparison.from_dict`` took a p-value of 2 or -1, counts that did not add up to the
  pairs, a reversed interval, a wrong mean difference and a check listed twice, all of
  which ``verify`` refused; the two now make one check and say the same.
* A gate decision whose requirement was re-sealed ``met`` (same verdict) read "says
  'indeterminate', but … make it 'indeterminate'"; it now names the reason at fault.
* The CLI's net for a loader's KeyError said "malformed record (KeyError: 'x')": no fix.
"""

from __future__ import annotations

import copy
import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord._canonical import content_digest, record_bytes
from onrecord.cli._bundle import named
from onrecord.cli._records import load_any
from onrecord.compare import Comparison
from onrecord.domains.ledger import analyze_ledger_dir
from onrecord.domains.ledger._artifacts import MANIFEST
from onrecord.episode import evaluate_episodes
from onrecord.errors import EvidenceError, SchemaError
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.runner import plan_run, start_run
from tests.cli_process import onrecord

Edit = Callable[[dict[str, Any]], None]
NOT_A_COMPARISON = "not a comparison (Comparison.to_dict())"
"""What opens ``Comparison.from_dict``'s refusals, as it opened them before."""


def _resealed(source: Path, target: Path, edit: Edit) -> Path:
    """``source`` edited and its digest recomputed, as a forger would, at ``target``."""
    data = orjson.loads(source.read_bytes())
    data.pop("digest", None)
    edit(data)
    target.write_bytes(record_bytes({**data, "digest": content_digest(data)}))
    return target


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _refused_by_both(path: Path, *expected: str) -> None:
    """``verify`` and ``show`` both exit 3, no traceback, saying each of ``expected``."""
    for command in ("verify", "show"):
        done = onrecord(command, path)
        message = _one_line(done.stderr)
        assert done.returncode == 3, (command, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (command, done.stderr)
        for text in expected:
            assert text in message, (command, message)


def _set(*place: Any, value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        node: Any = data
        for key in place[:-1]:
            node = node[key]
        node[place[-1]] = value

    return edit


# --- 1. the ledger summary -----------------------------------------------------------

SUMMARY_EDITS: dict[str, tuple[Edit, str]] = {
    "ablation a number": (
        _set("ablation", value=5),
        "'ablation' must be a list of 3 rows, one per grader",
    ),
    "ablation row a list": (_set("ablation", 0, value=[]), "'ablation[0]' must be an object"),
    "ablation count true": (_set("ablation", 1, "accepted", value=True), "'ablation[1].accepted'"),
    "ablation violating a number": (
        _set("ablation", 0, "violating", value=3),
        "'ablation[0].violating' must be a list of complete episodes' names",
    ),
    "ablation violating unknown": (
        _set("ablation", 0, "violating", value=["nobody"]),
        "'ablation[0].violating'",
    ),
    "ablation accepted_violating": (
        _set("ablation", 0, "accepted_violating", value=99),
        "'ablation[0].accepted_violating' must be",
    ),
    "ok a string": (_set("ok", value="yes"), "'ok' must be true or false"),
    "complete a string": (
        _set("episodes", 0, "complete", value="yes"),
        "'episodes[0].complete' must be true or false",
    ),
    "seed true": (_set("episodes", 0, "seed", value=True), "'episodes[0].seed'"),
    "evidence digest": (
        _set("episodes", 1, "evidence_digest", value="x"),
        "'episodes[1].evidence_digest' must be a sha256 digest",
    ),
    "name leads outside": (
        _set("episodes", 0, "name", value="../elsewhere"),
        "'episodes[0].name' must be a folder name under runs/",
    ),
    "decisions without a grader": (
        lambda data: data["episodes"][0]["decisions"].pop("final_answer"),
        "'episodes[0].decisions' must be an object of each grader's verdict",
    ),
    "classic expected": (
        _set("classic", 0, "expected", value="maybe"),
        "'classic[0].expected' must be accept, reject or indeterminate",
    ),
    "classic row without expected": (
        lambda data: data["classic"][0].pop("expected"),
        "'classic[0]' must be an object of exactly name, decision, expected",
    ),
    "a field added": (_set("note", value=1), "a ledger summary has exactly the fields"),
}


@pytest.mark.parametrize("name", list(SUMMARY_EDITS))
def test_a_resealed_ledger_summary_is_refused_by_verify_and_show(
    written: dict[str, Path], tmp_path: Path, name: str
) -> None:
    edit, field = SUMMARY_EDITS[name]
    # Alone, as the reviewer had it: no decision.json beside it to disagree with.
    path = _resealed(written["ledger summary"], tmp_path / "summary.json", edit)
    _refused_by_both(path, str(path), field, "restore it or run `onrecord ledger run` again")


def test_a_resealed_summary_in_its_experiment_is_refused_by_ledger_analyze(
    written: dict[str, Path], tmp_path: Path
) -> None:
    ledger = shutil.copytree(written["ledger directory"], tmp_path / "ledger")
    _resealed(ledger / "summary.json", ledger / "summary.json", _set("ablation", value=5))

    def repin(data: dict[str, Any]) -> None:  # the manifest vouches for the new bytes
        data["sha256"]["summary.json"] = hashlib.sha256(
            (ledger / "summary.json").read_bytes()
        ).hexdigest()

    _resealed(ledger / MANIFEST, ledger / MANIFEST, repin)
    problems = analyze_ledger_dir(ledger).problems
    assert problems == [
        "summary.json: 'ablation' must be a list of 3 rows, one per grader (final_answer, "
        "final_posting, full_policy), not 5; it was changed after the experiment saved it; "
        "restore it or run `onrecord ledger run` again"
    ], problems


# --- 2. Comparison.from_dict and verify ------------------------------------------------


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``compare --json`` of two FrozenLake runs that differ: discordant pairs, each
    side's pass rate and two measures."""
    root = tmp_path_factory.mktemp("round56")
    for name, agent in (("goal", "walks_to_goal"), ("hole", "walks_into_hole")):
        start_run(root / name, plan_run("frozenlake", agent, seeds=[0, 1]))
    saved = root / "comparison.json"
    done = onrecord("compare", root / "goal", root / "hole", "--json", saved)
    assert done.returncode == 0, done.stderr
    record = orjson.loads(saved.read_bytes())
    assert record["checks"][0]["discordant"]
    assert record["measures"]
    assert "rate_a" in record["checks"][0]
    return saved


def _python_refusal(data: dict[str, Any]) -> EvidenceError:
    with pytest.raises(EvidenceError) as raised:
        Comparison.from_dict(data)
    return raised.value


def _verify_refusal(path: Path) -> EvidenceError:
    with pytest.raises(EvidenceError) as raised:
        load_any(path)
    return raised.value


def _same_refusal(path: Path) -> str:
    """``verify`` (in process) and ``Comparison.from_dict`` refuse ``path`` with one error:
    its kind, and its words after what each opens them with (the file; "not a
    comparison"). Returns those words."""
    by_verify = _verify_refusal(path)
    by_python = _python_refusal(orjson.loads(path.read_bytes()))
    assert type(by_python) is type(by_verify), (by_python, by_verify)
    words = str(by_verify).removeprefix(f"{path}: ")
    assert str(by_python) == f"{NOT_A_COMPARISON}: {words}", (by_python, by_verify)
    return words


def _twice(data: dict[str, Any]) -> None:
    data["checks"].append(copy.deepcopy(data["checks"][0]))


COMPARISON_EDITS: dict[str, tuple[Edit, str]] = {
    "p_value 2": (
        _set("checks", 0, "p_value", value=2.0),
        "'checks[0].p_value' must be a number from 0 to 1, not 2.0",
    ),
    "p_value -1": (
        _set("checks", 0, "p_value", value=-1.0),
        "'checks[0].p_value' must be a number from 0 to 1, not -1.0",
    ),
    "counts not adding up": (
        _set("checks", 1, "both_fail", value=5),
        "check 'reached_goal' counts do not add up to 2 pairs",
    ),
    "rate interval reversed": (
        _set("checks", 0, "rate_b", "interval", value=[0.6, 0.0]),
        "'checks[0].rate_b.interval' must be two numbers from 0 to 1, low then high",
    ),
    "pass rate not passed / measured": (
        _set("checks", 0, "rate_a", "pass_rate", value=0.5),
        "'checks[0].rate_a.pass_rate' must be 1.0 (2 / 2), not 0.5",
    ),
    "mean difference not B - A": (
        _set("measures", 0, "mean_difference", value=3.0),
        "its mean difference 3.0 is not mean B − mean A",
    ),
    "measure interval reversed": (
        _set("measures", 1, "interval", value=[1.0, -4.0]),
        "'measures[1].interval' must be two finite numbers, low then high",
    ),
    "a check listed twice": (_twice, "'checks' lists 'no_hole_visited' more than once"),
    "report_a not a digest": (
        _set("report_a", value="x"),
        "'report_a' must be a sha256 digest (64 hex digits), not 'x'",
    ),
}


@pytest.mark.parametrize("name", list(COMPARISON_EDITS))
def test_from_dict_refuses_what_verify_refuses_in_the_same_words(
    comparison: Path, tmp_path: Path, name: str
) -> None:
    edit, words = COMPARISON_EDITS[name]
    path = _resealed(comparison, tmp_path / "forged.json", edit)
    assert words in _same_refusal(path)
    _refused_by_both(path, f"{path}: ", words)


# Every number a comparison holds, by where it is in the record.
_NUMBERS: list[tuple[Any, ...]] = [
    ("pairs",),
    *[
        ("checks", c, key)
        for c in (0, 1)
        for key in ("both_pass", "only_a", "only_b", "both_fail", "unmeasured", "p_value")
    ],
    ("checks", 0, "discordant", 1, "repeat"),
    *[
        ("checks", 1, side, key)
        for side in ("rate_a", "rate_b")
        for key in ("passed", "measured", "pass_rate")
    ],
    *[("checks", 0, side, "interval", end) for side in ("rate_a", "rate_b") for end in (0, 1)],
    *[
        ("measures", m, key)
        for m in (0, 1)
        for key in ("pairs", "cases", "mean_a", "mean_b", "mean_difference")
    ],
    *[("measures", 1, "interval", end) for end in (0, 1)],
]
_OUT_OF_RANGE = st.one_of(
    st.integers(min_value=-(2**62), max_value=-1),
    st.integers(min_value=3, max_value=2**62),
    st.floats(min_value=1.0, max_value=1e300, exclude_min=True),
    st.floats(min_value=-1e300, max_value=0.0, exclude_max=True),
    st.sampled_from([True, False, None, "1", [0.5]]),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(place=st.sampled_from(_NUMBERS), value=_OUT_OF_RANGE)
@example(place=("checks", 0, "p_value"), value=2.0)
@example(place=("checks", 1, "rate_a", "pass_rate"), value=1.5)
@example(place=("checks", 0, "rate_a", "interval", 0), value=1.5)
def test_any_number_out_of_range_is_refused_alike_by_from_dict_and_verify(
    comparison: Path, tmp_path: Path, place: tuple[Any, ...], value: Any
) -> None:
    path = _resealed(comparison, tmp_path / "forged.json", _set(*place, value=value))
    data = orjson.loads(path.read_bytes())
    try:
        load_any(path)
    except EvidenceError:
        _same_refusal(path)
    else:  # verify passed it: from_dict reads it, and show can show it
        Comparison.from_dict(data)


# --- 3. a decision's reasons ------------------------------------------------------------


def test_a_requirement_resealed_met_names_the_reason_not_the_same_verdict_twice(
    tmp_path: Path,
) -> None:
    task = frozenlake_task()
    episodes = [run_gym_task(task, FROZENLAKE_AGENTS["walks_to_goal"](), seed=1)]
    report = evaluate_episodes(episodes, list(task.checks)).save_json(tmp_path / "r.json")
    policy = tmp_path / "policy.json"
    # Two requirements no check matches: undecided both, so the verdict is indeterminate.
    AcceptancePolicy((CheckRequirement("absent_a"), CheckRequirement("absent_b"))).save_json(policy)
    saved = tmp_path / "gate.json"
    done = onrecord("gate", report, "--policy", policy, "--output", saved)
    assert done.returncode == 2, done.stderr  # indeterminate
    forged = _resealed(
        saved, tmp_path / "forged.json", _set("requirements", 0, "status", value="met")
    )
    for command in ("verify", "show"):
        done = onrecord(command, forged)
        message = _one_line(done.stderr)
        assert done.returncode == 3, (command, message)
        assert "Traceback" not in done.stderr
        # Before: "says 'indeterminate', but … make it 'indeterminate'".
        assert "make it 'indeterminate'" not in message, message
        assert f"{forged} says 'indeterminate', as its requirements' statuses" in message
        assert "the explanation of requirement 'absent_a', whose status is 'met'" in message
        assert "it was changed after it was decided" in message


# --- 4. the CLI's net for what a loader did not name -------------------------------------


def test_the_net_for_an_unnamed_fault_names_the_file_and_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "record.json"

    def loader() -> None:
        raise KeyError("x")

    with pytest.raises(SchemaError) as raised:
        named(path, loader)
    message = str(raised.value)
    assert message.startswith(f"{path}: malformed record, in a way onrecord's checks do not name")
    assert "(KeyError: 'x')" in message
    assert "re-create it with the command that wrote it" in message
    assert "report a bug" in message
