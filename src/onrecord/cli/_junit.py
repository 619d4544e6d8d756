"""``onrecord gate --junit-xml``: a decision as JUnit XML, the test-report format GitLab,
Jenkins, Azure Pipelines, CircleCI and GitHub's test-report actions read.

One ``<testsuite>`` per gate, one ``<testcase>`` per policy requirement (classname
``onrecord.gate.requirement``, name the requirement's check pattern) and one for the
decision (classname ``onrecord.gate``, name ``decision``). JUnit has four outcomes;
each status maps to the one whose meaning it shares:

* met → passed;
* failed, critical → ``<failure>``: the check was measured and fell short;
* failed, advisory → ``<skipped>``: a tolerated failure that does not reject, as pytest
  reports an expected failure (xfail); shown, but not red;
* undecided → ``<error>``: the test could not conclude (nothing matched, results not
  measured or an evaluator error, too few cases). It makes the decision indeterminate,
  which must never look green, and skipped usually does;
* the decision: accept → passed, reject → ``<failure>``, indeterminate → ``<error>``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence

from onrecord._numbers import shown_reason
from onrecord.cli._ci_facts import RequirementFacts, clean
from onrecord.policy import PolicyDecision

__all__ = ["gate_junit"]

_MESSAGE = 1000  # a message attribute is shown on one line; the text holds the rest


def gate_junit(
    decision: PolicyDecision,
    facts: Sequence[RequirementFacts],
    *,
    suite: str,
    policy: str,
    unchecked: str | None = None,
) -> bytes:
    """The JUnit XML document of a gate: ``suite`` names the report or run, ``policy``
    the policy applied; ``unchecked`` (a world-model report's coordinates without a
    tolerance) is said under the decision, as the terminal and Markdown say it."""
    # Imported here, not at the top: the version comes from importlib.metadata (~25 ms),
    # which commands that only read records need not load.
    from onrecord import __version__

    cases = [_requirement_case(item, name) for item, name in zip(facts, _names(facts), strict=True)]
    cases.append(_decision_case(decision, unchecked))
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(case.find("failure") is not None for case in cases)),
        "errors": str(sum(case.find("error") is not None for case in cases)),
        "skipped": str(sum(case.find("skipped") is not None for case in cases)),
        "time": "0",  # nothing is timed: the file stays the same for the same inputs
    }
    root = ET.Element("testsuites", {"name": "onrecord gate", **counts})
    testsuite = ET.SubElement(root, "testsuite", {"name": _line(suite), **counts})
    properties = ET.SubElement(testsuite, "properties")
    for name, value in (
        ("onrecord.decision", decision.decision),
        ("onrecord.exit_code", str(decision.exit_code)),
        ("onrecord.policy", policy),
        ("onrecord.policy_digest", decision.policy_digest),
        ("onrecord.report_digest", decision.report_digest),
        ("onrecord.version", __version__),
    ):
        ET.SubElement(properties, "property", name=name, value=clean(value, _MESSAGE))
    testsuite.extend(cases)
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="UTF-8", xml_declaration=True)
    return document + b"\n"


def _names(facts: Sequence[RequirementFacts]) -> list[str]:
    """Each requirement's check pattern, numbered when a policy repeats one (two
    thresholds for one check): CI tools merge test cases of equal name."""
    # Counted as shown, not as written: "a\n" and "a " are both shown "a ", and a CI tool
    # merging the two test cases hid one requirement's failure behind the other's pass.
    names = [_line(item.outcome.requirement.check) for item in facts]
    return [
        name + (f" (requirement {index})" if names.count(name) > 1 else "")
        for index, name in enumerate(names, start=1)
    ]


def _line(text: str, limit: int = _MESSAGE) -> str:
    """An attribute shown on one line (a name, a message): newlines become spaces."""
    return clean(text, limit).replace("\n", " ").replace("\t", " ")


def _block(text: str, indent: str) -> str:
    """Record text in a test case's text: its lines after the first ``indent`` deeper
    than the entry it belongs to. A reason that quoted an agent's "fine\n  c9#0  check
    pass: ..." or "\n- accept" otherwise read as another result or another reason."""
    return clean(text).replace("\n", "\n" + indent)


def _case(classname: str, name: str) -> ET.Element:
    return ET.Element("testcase", classname=classname, name=name, time="0")


def _requirement_case(item: RequirementFacts, name: str) -> ET.Element:
    case = _case("onrecord.gate.requirement", name)
    outcome = item.outcome
    if outcome.status == "met":
        ET.SubElement(case, "system-out").text = _details(item)
        return case
    if outcome.status == "undecided":
        tag, kind = "error", "undecided"
    elif outcome.requirement.critical:
        tag, kind = "failure", "failed"
    else:
        tag, kind = "skipped", "advisory-failed"
    child = ET.SubElement(case, tag, message=_line(shown_reason(outcome.explanation)), type=kind)
    child.text = _details(item)
    return case


def _details(item: RequirementFacts) -> str:
    """The numbers behind a requirement's status, then the results that did not pass."""
    outcome = item.outcome
    lines = [
        _block(shown_reason(outcome.explanation), "  "),
        f"measured pass rate: {item.rate}, 95% interval {item.interval}, clustered by case",
        f"threshold: {item.threshold} ({_kind(outcome.requirement.critical)})",
        f"measured cases: {outcome.cases}; unmeasured results: {outcome.unmeasured}",
        f"matched checks: {_line(', '.join(outcome.matched) or '(none)', 500)}",
    ]
    if item.unpassed and outcome.status != "met":
        shown = len(item.unpassed)
        lines += ["", f"results that did not pass (first {shown} of {shown + item.more}):"]
        lines += [
            # One line each: a case id or check holding a newline split its result in two.
            f"  {_line(u.episode, 200)}  {_line(u.check, 200)}  {u.status}: "
            + _block(u.reason, "      ")
            for u in item.unpassed
        ]
    return "\n".join(lines) + "\n"


def _kind(critical: bool) -> str:
    return "critical" if critical else "advisory"


def _decision_case(decision: PolicyDecision, unchecked: str | None) -> ET.Element:
    case = _case("onrecord.gate", "decision")
    reasons = [f"- {_block(shown_reason(reason), '  ')}" for reason in decision.reasons[:50]]
    if len(decision.reasons) > 50:
        reasons.append(f"… {len(decision.reasons) - 50} more reasons")
    # Under the verdict, as the terminal and Markdown say it: an accept on dynamics/*/h1
    # is no word on the coordinates no tolerance checks.
    said = [_line(unchecked)] if unchecked is not None else []
    text = f"{decision.decision} (exit {decision.exit_code})\n" + "".join(
        f"{line}\n" for line in (*said, *reasons)
    )
    if decision.decision == "accept":  # its reasons, if any, are advisory failures
        ET.SubElement(case, "system-out").text = text
        return case
    tag = "failure" if decision.decision == "reject" else "error"
    headline = _line(f"{decision.decision}: {decision.headline}")
    ET.SubElement(case, tag, message=headline, type=decision.decision).text = text
    return case
