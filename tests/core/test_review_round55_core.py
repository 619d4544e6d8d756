"""Review round 55: records well-formed on the surface and malformed inside, and the
commands that read them.

* ``compare`` of a re-sealed report or run whose field is of the wrong type printed a
  traceback and exited 1 ("reject" to CI); ``gate``, ``show`` and ``verify`` exit 3.
* ``EvaluationReport.load`` and ``EpisodeEvidence.load`` raised a bare ValueError or
  TypeError for such a field; they raise an ``OnrecordError`` naming it.
* ``gate`` of a directory that is no run said "not a regular file … put a regular file
  there"; a huge ``min_cases`` failed only when saved, with an internal hint; NumPy ints
  and bools were refused where NumPy floats were accepted.
* ``verify A B C`` stopped at the first failure; ``show --steps 999`` of a 6-step episode
  printed an empty table and exited 0; a file holding ``null`` read "not JSON".
* The McNemar tail beyond 50,000 discordant pairs lost 1e-8 to log-gamma rounding.
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import shutil
from collections.abc import Callable, Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord._canonical import content_digest, record_bytes
from onrecord._stats import _binomial_tail, mcnemar_exact_p
from onrecord.episode import EpisodeEvidence
from onrecord.errors import InputError, OnrecordError, PolicyError, SchemaError
from onrecord.policy import AcceptancePolicy, CheckRequirement
from onrecord.report import CheckResult, EvaluationReport, Trial
from tests.cli_process import onrecord
from tests.test_show_probe27 import _episode as _tool_episode

DOCS = Path(__file__).resolve().parents[2] / "docs"
POLICY = '[[requirements]]\ncheck = "reached_goal"\n'


def _reseal(source: Path, target: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """``source`` with ``edit`` applied and a correct digest again, at ``target``."""
    data = json.loads(source.read_text())
    data.pop("digest", None)
    edit(data)
    target.write_bytes(record_bytes({**data, "digest": content_digest(data)}))
    return target


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished FrozenLake run of two episodes (six steps each), ``policy.toml`` beside."""
    root = tmp_path_factory.mktemp("round55")
    (root / "policy.toml").write_text(POLICY)
    done = onrecord(
        *("run", "frozenlake", "--agent", "walks_to_goal", "--seeds", "0-1"),
        *("--no-progress", "--out", root / "run"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return root / "run"


@pytest.fixture(scope="module")
def episode(run: Path) -> Path:
    """One saved episode (``save_json``) of six steps."""
    from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task

    path = run.parent / "ep0.json"
    run_gym_task(frozenlake_task(), FROZENLAKE_AGENTS["walks_to_goal"](), seed=7).save_json(path)
    return path


def _one_line_refusal(done: Any, *words: str) -> None:
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(lines) == 1, done.stderr
    for word in words:
        assert word in lines[0], done.stderr


# --- 1. compare of a malformed report or run ----------------------------------------


def _edited_run(run: Path, folder: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    shutil.copytree(run, folder)
    _reseal(folder / "run.json", folder / "run.json", edit)
    return folder


def test_compare_refuses_a_report_with_a_malformed_trial(run: Path, tmp_path: Path) -> None:
    bad = _reseal(
        run / "report.json",
        tmp_path / "crashA.json",
        lambda data: data["trials"][0].update(source="x"),
    )
    summary = tmp_path / "summary.md"
    for args in ((bad, run / "report.json"), (run / "report.json", bad)):
        done = onrecord("compare", *args, "--markdown", summary)
        _one_line_refusal(done, "crashA.json", "trials[0].source must be a mapping")
    assert "source must be a mapping" in summary.read_text()  # the CI summary says why


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (
            lambda data: data["protocol"].update(check_versions="x"),
            "run.json: protocol.check_versions must be an object",
        ),
        (
            lambda data: data["protocol"]["environment"].update(target={"a": 1}),
            "run.json: protocol.environment.target must be a non-empty string",
        ),
    ],
    ids=["check_versions", "target"],
)
def test_compare_refuses_a_run_with_a_malformed_protocol(
    run: Path, tmp_path: Path, edit: Callable[[dict[str, Any]], None], error: str
) -> None:
    # Round 56: named by the run store as it opens the run, not by the catch-all.
    folder = _edited_run(run, tmp_path / "runX", edit)
    for args in ((folder, run), (run, folder)):
        done = onrecord("compare", *args)
        _one_line_refusal(done, "runX", error, "restore the run.json")
        assert "malformed record" not in done.stderr


# --- 2. the Python loaders ----------------------------------------------------------


def test_a_report_with_a_string_source_names_the_field(run: Path, tmp_path: Path) -> None:
    bad = _reseal(
        run / "report.json", tmp_path / "r.json", lambda d: d["trials"][1].update(source="x")
    )
    with pytest.raises(SchemaError, match=r"r\.json: trials\[1\]\.source must be a mapping"):
        EvaluationReport.load(bad)
    for field in ("measures", "settings"):
        bad = _reseal(run / "report.json", tmp_path / "r.json", _setting(field, "x"))
        with pytest.raises(SchemaError, match=rf"trials\[0\]\.{field} must be a mapping"):
            EvaluationReport.load(bad)


def _setting(field: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit setting the first trial's ``field`` to ``value``."""

    def edit(data: dict[str, Any]) -> None:
        data["trials"][0][field] = value

    return edit


def test_a_check_result_reason_must_be_text(run: Path, tmp_path: Path) -> None:
    bad = _reseal(
        run / "report.json",
        tmp_path / "r.json",
        lambda d: d["trials"][0]["results"][1].update(reason=5),
    )
    with pytest.raises(SchemaError, match=r"trials\[0\]\.results\[1\]\.reason must be"):
        EvaluationReport.load(bad)
    with pytest.raises(SchemaError, match=r"trials\[0\]\.results\[0\]\.status must be one of"):
        EvaluationReport.load(
            _reseal(
                run / "report.json",
                tmp_path / "r.json",
                lambda d: d["trials"][0]["results"][0].update(status="great"),
            )
        )


def test_the_trial_constructor_names_a_source_that_is_no_mapping() -> None:
    case = {"case_id": "a", "content_digest": "0" * 64}
    with pytest.raises(InputError, match=r"Trial\.source must be a mapping .* got 'x'"):
        Trial(case, 0, "x", (CheckResult("c", "v1", "pass", "ok"),))  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1, None, 2.5, {"a": 1}, True])
@pytest.mark.parametrize("field", ["action_index", "transition_index"])
def test_an_episode_index_column_that_is_no_list_is_named(
    episode: Path, tmp_path: Path, field: str, value: Any
) -> None:
    bad = _reseal(episode, tmp_path / "e.json", lambda d: d["steps"].update({field: value}))
    with pytest.raises(SchemaError, match=rf"e\.json: steps\.{field} must be a list"):
        EpisodeEvidence.load(bad)


# Every field of a saved record, each replaced by each of these and re-sealed: loading
# it succeeds or raises an OnrecordError, never another exception.
_VALUES: tuple[Any, ...] = (
    *(None, 0, 1, -1, 1.5, "", "x", True, [], [1], ["x"], [["a"]], [[1]], {}, {"a": 1}),
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if prefix:
        yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:2]):
            yield from _paths(value, (*prefix, index))


def _replaced(data: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(data)
    node = changed
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return changed


def _loads_or_refuses(loader: Callable[[Path], Any], target: Path, data: dict[str, Any]) -> None:
    target.write_bytes(record_bytes({**data, "digest": content_digest(data)}))
    with contextlib.suppress(OnrecordError):
        loader(target)


@pytest.fixture(scope="module")
def saved(run: Path, episode: Path) -> dict[str, tuple[dict[str, Any], Callable[[Path], Any]]]:
    """Each kind's saved record without its digest, and its loader."""
    records = {"report": run / "report.json", "episode": episode}
    loaders: dict[str, Callable[[Path], Any]] = {
        "report": EvaluationReport.load,
        "episode": EpisodeEvidence.load,
    }
    out: dict[str, tuple[dict[str, Any], Callable[[Path], Any]]] = {}
    for kind, path in records.items():
        data = json.loads(path.read_text())
        data.pop("digest")
        out[kind] = (data, loaders[kind])
    return out


@pytest.mark.parametrize("kind", ["report", "episode"])
def test_every_field_resealed_with_every_kind_of_value_loads_or_is_refused(
    saved: dict[str, tuple[dict[str, Any], Callable[[Path], Any]]], tmp_path: Path, kind: str
) -> None:
    data, loader = saved[kind]
    for path in _paths(data):
        for value in _VALUES:
            _loads_or_refuses(loader, tmp_path / "m.json", _replaced(data, path, value))


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner),
    max_leaves=6,
)


@settings(max_examples=300)
@given(data=st.data())
def test_any_single_field_resealed_loads_or_raises_an_onrecord_error(
    saved: dict[str, tuple[dict[str, Any], Callable[[Path], Any]]],
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
) -> None:
    kind = data.draw(st.sampled_from(sorted(saved)))
    record, loader = saved[kind]
    path = data.draw(st.sampled_from(list(_paths(record))))
    value = data.draw(_JSON)
    target = tmp_path_factory.getbasetemp() / "round55-mutated.json"
    _loads_or_refuses(loader, target, _replaced(record, path, value))


# --- 3. gate of a directory that is no run, and a directory as --policy --------------


def test_gate_of_a_directory_that_is_no_run_says_so(run: Path, tmp_path: Path) -> None:
    policy = run.parent / "policy.toml"
    (tmp_path / "empty").mkdir()
    done = onrecord("gate", tmp_path / "empty", "--policy", policy)
    _one_line_refusal(done, "is not a run directory (it has no run.json)")
    assert "regular file" not in done.stderr
    shutil.copytree(run, tmp_path / "norun")
    (tmp_path / "norun" / "run.json").unlink()
    done = onrecord("gate", tmp_path / "norun", "--policy", policy)
    _one_line_refusal(done, "is not a run directory (it has no run.json)", "norun/report.json")
    assert "regular file" not in done.stderr
    # What it suggests works.
    assert onrecord("gate", tmp_path / "norun/report.json", "--policy", policy).returncode == 0


def test_gate_of_a_directory_as_the_policy_says_so(run: Path, tmp_path: Path) -> None:
    (tmp_path / "pol").mkdir()
    done = onrecord("gate", run / "report.json", "--policy", tmp_path / "pol")
    _one_line_refusal(done, "a policy is a .json or .toml file, got a directory")
    assert "regular file" not in done.stderr
    shutil.copy(run.parent / "policy.toml", tmp_path / "pol" / "policy.toml")
    with pytest.raises(PolicyError, match=r"it holds .*policy\.toml: give that"):
        AcceptancePolicy.load(tmp_path / "pol")


# --- 4. min_cases: huge, and NumPy values -------------------------------------------


def test_a_huge_min_cases_in_toml_is_refused_naming_it(run: Path, tmp_path: Path) -> None:
    policy = tmp_path / "huge.toml"
    policy.write_text(POLICY + "min_cases = 18446744073709551616\n")
    done = onrecord("gate", run / "report.json", "--policy", policy)
    _one_line_refusal(done, "huge.toml", "min_cases must be a positive integer", "2**63 - 1")
    assert "to_portable" not in done.stderr


def test_min_cases_is_bounded_where_it_is_given(tmp_path: Path) -> None:
    for cases in (2**63, 2**64, 10**30):
        with pytest.raises(PolicyError, match=r"min_cases .* \(at most 2\*\*63 - 1"):
            CheckRequirement("g", min_cases=cases)
    policy = AcceptancePolicy((CheckRequirement("g", min_cases=2**63 - 1),))
    loaded = AcceptancePolicy.load(policy.save_json(tmp_path / "p.json"))
    assert loaded.requirements[0].min_cases == 2**63 - 1


def test_numpy_thresholds_are_taken_as_plain_values() -> None:
    made = CheckRequirement(
        "g",
        critical=np.bool_(False),  # type: ignore[arg-type]
        min_pass_rate=np.float64(0.9),
        min_cases=np.int64(3),  # type: ignore[arg-type]
        min_coverage=np.float32(0.5),  # type: ignore[arg-type]
        min_lower_bound=np.float64(0.25),
    )
    plain = CheckRequirement(
        "g", critical=False, min_pass_rate=0.9, min_cases=3, min_coverage=0.5, min_lower_bound=0.25
    )
    assert made == plain
    assert [type(getattr(made, name)) for name in ("critical", "min_cases")] == [bool, int]
    assert AcceptancePolicy((made,)).digest == AcceptancePolicy((plain,)).digest
    with pytest.raises(PolicyError, match="min_cases"):
        CheckRequirement("g", min_cases=np.int64(0))  # type: ignore[arg-type]
    with pytest.raises(PolicyError, match="critical"):
        CheckRequirement("g", critical=np.int64(1))  # type: ignore[arg-type]


@given(st.integers(1, 2**63 - 1), st.booleans())
def test_any_numpy_min_cases_has_the_plain_policys_digest(cases: int, critical: bool) -> None:
    numpy = CheckRequirement("g", min_cases=np.int64(cases), critical=np.bool_(critical))  # type: ignore[arg-type]
    assert (
        AcceptancePolicy((numpy,)).digest
        == AcceptancePolicy((CheckRequirement("g", min_cases=cases, critical=critical),)).digest
    )


# --- 5. verify of several files -----------------------------------------------------


def test_verify_gives_every_file_its_verdict(run: Path, episode: Path, tmp_path: Path) -> None:
    bad = _reseal(
        run / "report.json", tmp_path / "bad.json", lambda d: d["trials"][0].update(source="x")
    )
    files = (run / "report.json", tmp_path / "missing.json", episode, bad)
    done = onrecord("verify", *files, "--no-progress")
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    ok = done.stdout.splitlines()
    assert [line.split()[1] for line in ok] == [str(run / "report.json"), str(episode)]
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert len(errors) == 2
    assert "missing.json" in errors[0]
    assert "bad.json" in errors[1]
    assert "2 of 4 did not verify" in done.stderr
    good = onrecord("verify", run / "report.json", episode, "--no-progress")
    assert good.returncode == 0
    assert good.stderr == ""


# --- 6. show --steps outside the episode --------------------------------------------


def test_show_refuses_steps_outside_the_episode(episode: Path) -> None:
    for spec in ("999", "6", "6-100"):
        done = onrecord("show", episode, "--steps", spec)
        _one_line_refusal(done, f"--steps {spec}", "it has steps 0-5 (6 in all)")
        assert done.stdout == ""  # refused before a line of the episode
    partly = onrecord("show", episode, "--steps", "4-999")
    assert partly.returncode == 0
    steps = [line.split()[1] for line in partly.stdout.splitlines() if line[:1] == "│"]
    assert steps == ["…", "4", "5"]
    assert onrecord("show", episode, "--steps", "all").returncode == 0


def test_show_refuses_steps_outside_a_runs_episode(run: Path) -> None:
    done = onrecord("show", run, "--episode", "frozenlake/goal#0", "--steps", "999")
    _one_line_refusal(done, "it has steps 0-5")
    assert done.stdout == ""
    shown = onrecord("show", run, "--episode", "frozenlake/goal#0", "--steps", "2", "--no-progress")
    assert shown.returncode == 0, shown.stderr


def test_show_refuses_steps_outside_a_saved_tool_world_episode(tmp_path: Path) -> None:
    _tool_episode(tmp_path / "episode", ("overflow", {}), ("bulk", {"rows": 2}))
    done = onrecord("show", tmp_path / "episode", "--steps", "9")
    _one_line_refusal(done, "--steps 9", "it has steps 1-2 (2 in all)")
    assert done.stdout == ""
    assert onrecord("show", tmp_path / "episode", "--steps", "2").returncode == 0


# --- 7. what a file that is not a record holds --------------------------------------


@pytest.mark.parametrize(
    ("raw", "said"),
    [
        (b"null\n", "(a JSON null, not a record object)"),
        (b"[1, 2]\n", "(a JSON array, not a record object)"),
        (b"7\n", "(a JSON number, not a record object)"),
        (b"", "(an empty file, not JSON)"),
        (b'{"a": [1, 2', "it ends in the middle of a value at line 1, column 12, truncated"),
        (b'{"a": 1}}\n', "not JSON: unexpected content after document at line 1, column 9"),
    ],
)
def test_verify_says_what_a_file_holds_instead(tmp_path: Path, raw: bytes, said: str) -> None:
    path = tmp_path / "f.json"
    path.write_bytes(raw)
    for command in ("verify", "show"):
        _one_line_refusal(onrecord(command, path), said)


# --- D1. the McNemar tail beyond the exact limit ------------------------------------


def _exact_tail(trials: int, last: int) -> float:
    """P(X <= last), X ~ Binomial(trials, 1/2), in integers: the terms more than 12
    standard deviations below ``last`` are below 1e-60 of the sum and left out."""
    low = max(0, last - 12 * math.isqrt(trials))
    term = total = math.comb(trials, low)
    for i in range(low, last):
        term = term * (trials - i) // (i + 1)
        total += term
    return float(Fraction(total, 1 << trials))


@pytest.mark.parametrize("z", [0.3, 1, 2.5, 6, 12])
def test_the_floating_point_tail_is_exact_to_1e_13(z: float) -> None:
    trials = 120_001
    last = int(trials / 2 - z * math.sqrt(trials) / 2)
    exact = _exact_tail(trials, last)
    assert abs(_binomial_tail(trials, last) - exact) <= 1e-13 * exact


@settings(max_examples=12)
@given(st.integers(50_001, 70_000), st.floats(0.05, 10))
def test_mcnemar_beyond_the_exact_limit_matches_exact_integers(discordant: int, z: float) -> None:
    smaller = int(discordant / 2 - z * math.sqrt(discordant) / 2)
    exact = min(1.0, 2 * _exact_tail(discordant, smaller))
    assert math.isclose(
        mcnemar_exact_p(smaller, discordant - smaller), exact, rel_tol=1e-13, abs_tol=0
    )


@pytest.mark.parametrize("trials", [2_000_000, 9_990_000, 10_000_000])
def test_the_tail_agrees_with_scipy_up_to_ten_million(trials: int) -> None:
    stats = pytest.importorskip("scipy.stats")
    for z in (0.5, 3, 8):
        last = int(trials / 2 - z * math.sqrt(trials) / 2)
        expected = float(stats.binom.cdf(last, trials, 0.5))
        assert math.isclose(_binomial_tail(trials, last), expected, rel_tol=1e-11)


# --- D2. pass^1 and the trial pass rate ---------------------------------------------


def test_pass_hat_1_is_not_the_pass_rate_with_unequal_repeats() -> None:
    def trial(case: str, repeat: int, status: str) -> Trial:
        identity = {"case_id": case, "content_digest": case * 64}
        return Trial(identity, repeat, {}, (CheckResult("c", "v1", status, "."),))  # type: ignore[arg-type]

    trials = [trial("a", i, s) for i, s in enumerate(("pass", "pass", "fail"))]
    trials += [trial("c", i, "pass") for i in range(4)]
    summary = EvaluationReport.from_trials(trials).summary()
    assert summary.pass_rate == pytest.approx(6 / 7)
    assert summary.pass_hat_k[1] == pytest.approx(5 / 6)
    text = " ".join((DOCS / "reports-and-policies.md").read_text().split())
    assert "every case has the same number of measured repeats" in text
    assert "6/7 of the trials pass, pass^1 is 0.833" in text
