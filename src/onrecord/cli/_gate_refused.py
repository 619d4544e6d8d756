"""A refused gate (exit 3) in its CI files: why it was refused, where a reader looks.

``gate RUN --policy P --markdown "$GITHUB_STEP_SUMMARY" --junit-xml out.xml`` on a run
that cannot be gated (interrupted before its ``report.json``, changed after saving,
missing, or a policy that does not load) wrote neither file: the job failed with an
empty summary and no test report, and the reason was only in the log. Both now say it,
as ``compare --markdown`` says a refused comparison: a summary section headed "refused
(exit 3)", and a JUnit file whose one test case is an ``<error type="refused">``, which
CI test reporters show red. The error's text is record text (paths, an agent's words):
escaped as the other summaries escape it.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from onrecord.cli._ci_facts import clean
from onrecord.cli._markdown import text
from onrecord.cli._refused_section import MESSAGE, named_commands, refused_section

__all__ = ["refused_junit", "refused_markdown"]


def refused_markdown(message: str, *, report: str, policy: str) -> str:
    """The Markdown section of a gate refused for ``message`` (``REPORT``, ``--policy``
    as given)."""
    subject = f"{text(report)} · policy {text(policy)} · no decision was made"
    return refused_section("gate", subject, message)


def refused_junit(message: str, *, report: str, policy: str) -> bytes:
    """The JUnit XML of a gate refused for ``message``: the decision's test case, as an
    accept, reject or indeterminate gate names it, is an error (``type="refused"``)."""
    from onrecord import __version__

    counts = {"tests": "1", "failures": "0", "errors": "1", "skipped": "0", "time": "0"}
    root = ET.Element("testsuites", {"name": "onrecord gate", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": _line(report), **counts})
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("onrecord.decision", "refused"),
        ("onrecord.exit_code", "3"),
        ("onrecord.policy", policy),
        ("onrecord.version", __version__),
    ):
        ET.SubElement(properties, "property", name=name, value=_line(value))
    case = ET.SubElement(suite, "testcase", classname="onrecord.gate", name="decision", time="0")
    headline = _line(f"refused: {message}")
    error = ET.SubElement(case, "error", message=headline, type="refused")
    commands = named_commands(message)
    named = ["", "commands it names (then gate again):", *commands] if commands else []
    error.text = "\n".join(["refused (exit 3)", clean(message, MESSAGE), *named]) + "\n"
    ET.indent(root)
    document: bytes = ET.tostring(root, encoding="UTF-8", xml_declaration=True)
    return document + b"\n"


def _line(value: str) -> str:
    """An attribute shown on one line: newlines and tabs become spaces."""
    return clean(value, 1000).replace("\n", " ").replace("\t", " ")
