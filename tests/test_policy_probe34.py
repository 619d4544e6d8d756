"""A careless or adversarial CI engineer against policies and ``onrecord gate``.

- A hand-written TOML policy stating a ``digest`` is held to it: one copied from a saved
  policy and then edited was gated with the edit, the stale digest silently ignored.
- ``--markdown``, ``--junit-xml`` or ``--output`` naming the TOML policy (or another
  input) is refused: the summary was appended to the policy, or the policy replaced.
- An indeterminate gate of a partial run names the missing episodes as its cause in
  every output: it was headlined "every requirement met".
- JUnit test cases of two requirements shown under one name are numbered apart: CI tools
  merge test cases of equal name, hiding one.
"""

from __future__ import annotations

import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.errors import DigestMismatch
from tests.cli_process import onrecord
from tests.core.test_ci_outputs import make_report
from tests.runner.test_compare_runs_probe import _flaky_run


def _toml(requirement: CheckRequirement, *, digest: str | None = None) -> str:
    lines = ['name = "release"']
    if digest is not None:
        lines.append(f'digest = "{digest}"')
    lines += ["[[requirements]]", f'check = "{requirement.check}"']
    lines.append(f"critical = {'true' if requirement.critical else 'false'}")
    lines.append(f"min_pass_rate = {requirement.min_pass_rate!r}")
    lines.append(f"min_cases = {requirement.min_cases}")
    return "\n".join(lines) + "\n"


@pytest.fixture
def seven_of_ten(tmp_path: Path) -> Path:
    report = make_report({"a": ["pass"] * 7 + ["fail"] * 3})
    return report.save_json(tmp_path / "report.json")


def test_a_toml_policy_with_a_stale_digest_is_refused(tmp_path: Path, seven_of_ten: Path) -> None:
    strict = AcceptancePolicy((CheckRequirement("a", min_pass_rate=0.9),), name="release")
    # Reviewed and pinned at 0.9, then lowered to 0.5 by hand: the digest no longer fits.
    edited = tmp_path / "policy.toml"
    edited.write_text(_toml(CheckRequirement("a", min_pass_rate=0.5), digest=strict.digest))
    done = onrecord("gate", seven_of_ten, "--policy", edited)
    assert done.returncode == 3, done.stdout + done.stderr
    assert "policy.toml" in done.stderr
    assert strict.digest in done.stderr
    assert "changed after the digest was written" in done.stderr
    assert "decision" not in done.stdout
    # Stating the right digest still loads (and rejects 7 of 10 at 0.9).
    edited.write_text(_toml(CheckRequirement("a", min_pass_rate=0.9), digest=strict.digest))
    done = onrecord("gate", seven_of_ten, "--policy", edited)
    assert done.returncode == 1, done.stdout + done.stderr


_requirements = st.builds(
    CheckRequirement,
    st.sampled_from(["a", "dynamics/pole_angle/*", "score[0]"]),
    critical=st.booleans(),
    min_pass_rate=st.floats(min_value=0.01, max_value=1.0),
    min_cases=st.integers(min_value=1, max_value=50),
)


@settings(max_examples=40, deadline=None)
@given(_requirements, st.floats(min_value=0.01, max_value=1.0))
def test_a_toml_digest_is_verified_against_the_loaded_requirements(
    requirement: CheckRequirement, other_rate: float
) -> None:
    policy = AcceptancePolicy((requirement,), name="release")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "policy.toml"
        path.write_text(_toml(requirement, digest=policy.digest))
        assert AcceptancePolicy.load(path) == policy  # the round trip keeps its digest
        changed = CheckRequirement(
            requirement.check,
            critical=requirement.critical,
            min_pass_rate=other_rate,
            min_cases=requirement.min_cases,
        )
        path.write_text(_toml(changed, digest=policy.digest))
        if changed == requirement:
            assert AcceptancePolicy.load(path) == policy
        else:
            with pytest.raises(DigestMismatch, match=r"policy\.toml"):
                AcceptancePolicy.load(path)


@pytest.mark.parametrize("option", ["--markdown", "--junit-xml", "--output"])
def test_an_output_naming_the_policy_is_refused_and_the_policy_kept(
    tmp_path: Path, seven_of_ten: Path, option: str
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[requirements]]\ncheck = "a"\nmin_pass_rate = 0.7\n')
    before = policy.read_bytes()
    # Through a symbolic link too: the same file by another name.
    alias = tmp_path / "alias.toml"
    alias.symlink_to(policy)
    for target in (policy, alias):
        done = onrecord("gate", seven_of_ten, "--policy", policy, option, target)
        assert done.returncode == 3, done.stdout + done.stderr
        assert f"{option} " in done.stderr
        assert "is the --policy file" in done.stderr
        assert policy.read_bytes() == before
    done = onrecord("gate", seven_of_ten, "--policy", policy)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_partial_run_is_headlined_as_incomplete_in_every_output(tmp_path: Path) -> None:
    _flaky_run(tmp_path / "run", "coin_a")  # 2 of 8 planned episodes have no trial
    policy = tmp_path / "lenient.toml"
    policy.write_text('[[requirements]]\ncheck = "*"\nmin_pass_rate = 0.01\ncritical = false\n')
    # With what stopped them, from the run's errors.jsonl.
    cause = "the run is incomplete: 2 planned episodes have no trial: 2 raised PortabilityError"
    summary, junit, saved = tmp_path / "s.md", tmp_path / "g.xml", tmp_path / "d.json"
    done = onrecord(
        "gate", tmp_path / "run", "--policy", policy,
        "--markdown", summary, "--junit-xml", junit, "--output", saved,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    assert "every requirement met" not in done.stdout
    assert done.stdout.splitlines()[1].strip() == cause
    subject = summary.read_text().splitlines()[2]
    assert subject.endswith(f"· {cause}"), subject
    (decision_case,) = [
        case
        for case in ET.parse(junit).getroot().iter("testcase")
        if case.get("name") == "decision"
    ]
    error = decision_case.find("error")
    assert error is not None
    assert error.get("message") == f"indeterminate: {cause}"
    assert orjson.loads(saved.read_bytes())["decision"] == "indeterminate"
    shown = onrecord("show", saved)
    assert shown.returncode == 0, shown.stdout + shown.stderr
    # The line under the decision is its cause, as gate printed it.
    # The cause is the line under the verdict (the verify summary above may wrap).
    lines = shown.stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("decision:"))
    assert lines[verdict + 1].strip() == cause, shown.stdout


def test_a_decision_with_no_named_cause_is_never_headlined_as_met() -> None:
    decision = AcceptancePolicy((CheckRequirement("a"),)).evaluate(make_report({"a": ["pass"]}))
    assert decision.headline == "every requirement met"
    import dataclasses

    odd = dataclasses.replace(decision, decision="indeterminate", reasons=("the sky fell",))
    assert odd.headline == "the sky fell"
    bare = dataclasses.replace(decision, decision="reject", reasons=())
    assert bare.headline == "reject (no reason recorded)"


def test_requirements_shown_under_one_name_are_numbered_apart_in_junit(
    tmp_path: Path,
) -> None:
    report = make_report({"a": ["fail"], "a\n": ["pass"]}).save_json(tmp_path / "r.json")
    policy = AcceptancePolicy(
        (CheckRequirement("a\n"), CheckRequirement("a ", critical=False)), name="release"
    ).save_json(tmp_path / "p.json")
    junit = tmp_path / "g.xml"
    done = onrecord("gate", report, "--policy", policy, "--junit-xml", junit)
    assert done.returncode == 2, done.stdout + done.stderr
    names = [
        case.get("name")
        for case in ET.parse(junit).getroot().iter("testcase")
        if case.get("classname") == "onrecord.gate.requirement"
    ]
    assert names == ["a  (requirement 1)", "a  (requirement 2)"]
