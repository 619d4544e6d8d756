"""Any text in a case id, a check's reason or a check name — control characters, ``]]>``,
``|``, backticks, HTML, characters outside the BMP, very long reasons — yields
well-formed JUnit XML and a Markdown summary whose tables have the rows they should,
each cell showing the text as typed (rendered by markdown-it, as GitHub renders GFM)."""

from __future__ import annotations

import html
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from markdown_it.token import Token

from onrecord import AcceptancePolicy, CheckRequirement
from onrecord.cli._ci_facts import FIRST_UNPASSED, clean
from onrecord.cli.main import main
from onrecord.report import CheckResult, EvaluationReport, Trial

DIGEST = "d" * 64
GFM = MarkdownIt("commonmark").enable(["table", "strikethrough"])
NASTY = st.sampled_from(
    ["]]>", "|", "\\|", "`", "<b>x</b>", "\x00", "\x1b[2J", "\r\n", "\n", "\u202e", "😀",
     "**", "[a](b)", "$x$", "&amp;", "- ", "1. ", "#", "\t", "    ", "\x85", "\u2028"]
)  # fmt: skip
TEXT = st.lists(st.one_of(st.text(max_size=8), NASTY), max_size=6).map("".join)
STATUS = st.sampled_from(["pass", "fail", "not_measured", "evaluator_error"])
TRIAL = st.tuples(TEXT, STATUS, st.one_of(TEXT, st.text(min_size=600, max_size=700)))


def _report(trials: list[tuple[str, str, str]], check: str) -> EvaluationReport:
    return EvaluationReport.from_trials(
        Trial(
            {"case_id": case_id, "content_digest": DIGEST},
            repeat,  # a case id may come twice: repeats keep the trials apart
            {"kind": "test"},
            (CheckResult(check, "v1", status, reason),),
            settings={"environment_id": "env"},
        )
        for repeat, (case_id, status, reason) in enumerate(trials)
    )


def _cell(value: str, limit: int = 500) -> str:
    """The HTML a table cell must render for ``value``: the text as typed (controls as
    escapes, cut after ``limit``), nothing interpreted."""
    shown = clean(value, limit).replace("\t", " ").strip()
    return html.escape(shown, quote=True).replace("&#x27;", "'").replace("\n", "<br>")


def _tables(tokens: list[Token]) -> list[list[list[str]]]:
    """Every table's body rows, each a list of its cells' rendered HTML."""
    tables: list[list[list[str]]] = []
    for index, token in enumerate(tokens):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open" and tokens[index + 1].type == "td_open":
            tables[-1].append([])
        elif token.type == "inline" and tokens[index - 1].type == "td_open":
            tables[-1][-1].append(GFM.renderer.renderInline(token.children or [], {}, {}))
    return tables


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    trials=st.lists(TRIAL, min_size=1, max_size=14),
    check=TEXT.filter(lambda name: name.strip() != ""),
)
def test_any_text_gives_well_formed_xml_and_tables_of_the_right_rows(
    trials: list[tuple[str, str, str]], check: str
) -> None:
    report = _report(trials, check)
    policy = AcceptancePolicy((CheckRequirement(check),), name="release")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        report.save_json(root / "report.json")
        policy.save_json(root / "policy.json")
        junit, summary = root / "junit.xml", root / "summary.md"
        code = main(
            ["gate", str(root / "report.json"), "--policy", str(root / "policy.json"),
             "--junit-xml", str(junit), "--markdown", str(summary)]
        )  # fmt: skip
        decision = policy.evaluate(report)
        assert code == decision.exit_code
        _check_xml(junit.read_bytes(), decision.decision)
        _check_markdown(summary.read_text(encoding="utf-8"), trials, check)


def _check_xml(data: bytes, decision: str) -> None:
    root = ET.fromstring(data)  # raises on anything not well-formed
    (suite,) = root.findall("testsuite")
    cases = suite.findall("testcase")
    assert suite.get("tests") == str(len(cases)) == "2"
    verdict = {"accept": None, "reject": "failure", "indeterminate": "error"}[decision]
    tags = [child.tag for child in cases[-1] if child.tag != "system-out"]
    assert tags == ([verdict] if verdict else [])


def _check_markdown(text: str, trials: list[tuple[str, str, str]], check: str) -> None:
    tokens = GFM.parse(text)
    assert not [t for t in tokens if t.type == "html_block"]  # no markup of a record's
    tables = _tables(tokens)
    (requirement,) = tables[0]
    assert len(requirement) == 8
    assert requirement[0] == _cell(check)
    unpassed = [
        (f"{case}#{repeat}", reason)
        for repeat, (case, status, reason) in enumerate(trials)
        if status != "pass"
    ]
    if not unpassed:
        assert len(tables) == 1
        return
    rows = tables[1]
    assert len(rows) == min(len(unpassed), FIRST_UNPASSED)
    assert all(len(row) == 5 for row in rows)
    assert sorted(row[1] for row in rows) == sorted(
        _cell(episode, 200) for episode, _ in _first(trials)
    )
    assert {row[4] for row in rows} <= {_cell(reason) for _, reason in unpassed}


def _first(trials: list[tuple[str, str, str]]) -> list[tuple[str, str]]:
    """The results listed: failures first, then the others, each in the report's order."""
    order = ("fail", "evaluator_error", "not_measured")
    found = sorted(
        (
            (status, repeat, case, reason)
            for repeat, (case, status, reason) in enumerate(trials)
            if status != "pass"
        ),
        key=lambda item: (order.index(item[0]), item[1]),
    )
    return [(f"{case}#{repeat}", reason) for _, repeat, case, reason in found[:FIRST_UNPASSED]]
