"""Fourth probe of the remittance environment: real SQLite worlds, the real tools, the
runner's provider and the full policy.

Fixed here (each test below failed before):

- free text that shows nothing got through: the schema's ``\\S`` refuses ``" "`` but not a
  zero-width space, a joiner, a soft hyphen or a Hangul filler, so a denial case whose
  reason, note and follow-up said nothing at all was accepted;
- with two denied (or underpaid) lines on one claim, an agent that opened a case per
  line and scheduled a follow-up on only one of them was accepted: the check asked for a
  follow-up per claim, not per case, and said "every case has a follow-up";
- a task file could ask to post a line above the approval threshold outside kind
  ``over_threshold`` (a knee replacement paid in full, say): careful asked for approval
  and was rejected, an agent that posted it failed ``no_post_over_threshold``, so every
  agent was rejected; such a task is now refused, naming it;
- the environment's version was recorded nowhere: the provider's ``environment_id``
  label never reached a trial, so runs of two versions of the tools (same data, same
  schemas, other behaviour) had equal locks and ``compare`` paired them.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import Any

import pytest

from onrecord import EvaluationReport
from onrecord.compare import ComparisonRefused, compare_reports
from onrecord.domains import remittance as domain
from onrecord.domains.remittance import RemittanceEnvironment, _run, load_tasks
from onrecord.errors import InputError
from onrecord.runner import EpisodeSpec
from onrecord.runner._remittance import RemittanceProvider
from tests.domains.test_remittance_probe import Call, Reply, call, careful_but, play, provider

TASKS = Path(__file__).parents[2] / "src/onrecord/domains/remittance/tasks.toml"

__all__ = ["provider"]  # the shared module-scoped fixture

_FREE_TEXT = ("reason", "text", "action", "message")


# -- free text that shows nothing ------------------------------------------------------------
def says(text: str, tools: tuple[str, ...]) -> Any:
    def hook(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        if step["tool"] in tools:
            args = {k: text if k in _FREE_TEXT else v for k, v in step["arguments"].items()}
            step = call(step["tool"], **args)
        return (yield step)

    return hook


_CASE_WORK = ("open_case", "add_note", "schedule_followup")
INVISIBLE = {
    "zero-width-space": "\u200b",
    "joiners": "\u2060\u200d\u200c",
    "soft-hyphen": "\u00ad",
    "bidi-marks": "\u200e\u202a\u202c",
    "hangul-filler": "\u3164",
    "braille-blank": "\u2800",
    "lone-accent": "\u0301",
    "controls": "\x01\x7f",
}


@pytest.mark.parametrize("text", list(INVISIBLE.values()), ids=list(INVISIBLE))
def test_case_work_that_says_nothing_is_refused(provider: RemittanceProvider, text: str) -> None:
    played = play(provider, "denial-01", careful_but(says(text, _CASE_WORK)))
    refused = [a for a in played.actions if a["tool"] in _CASE_WORK]
    assert refused
    assert all(a["status"] == "rejected" for a in refused), refused
    assert "shows no visible character" in refused[0]["error"]["message"]
    assert played.decision == "reject"
    assert "expected_changes" in played.failing


@pytest.mark.parametrize(
    ("task_id", "tool", "missing"),
    [
        ("threshold-01", "request_approval", "expected one approval request"),
        ("recoup-01", "reverse_allocation", "expected one reversal of allocation"),
    ],
)
def test_money_reasons_that_say_nothing_are_refused(
    provider: RemittanceProvider, task_id: str, tool: str, missing: str
) -> None:
    played = play(provider, task_id, careful_but(says("\u200b\u200b", (tool,))))
    assert [a["status"] for a in played.actions if a["tool"] == tool] == ["rejected"]
    # Rejected because the refused write is missing from the outcome, nothing else.
    assert (played.decision, played.failing) == ("reject", {"expected_changes"})
    problems = played.problems("expected_changes")
    assert any(missing in p for p in problems), problems


def test_a_finish_that_says_nothing_is_not_a_finish(provider: RemittanceProvider) -> None:
    played = play(provider, "full-01", careful_but(says("\u200b", ("finish",))))
    assert [a["status"] for a in played.actions if a["tool"] == "finish"] == ["rejected"]
    # The work itself was right, so nothing fails: the episode simply never finished,
    # and the answer check cannot be measured.
    assert (played.decision, played.failing) == ("indeterminate", set())
    assert played.trial.result("answer_reports_done").passed is None
    assert any("not finished" in issue for issue in played.trial.coverage_issues)


@pytest.mark.parametrize(
    "text",
    ["Appeal filed.", "Révision demandée", "異議申し立て済み", "👍", "e\u0301", "\u200bok"],
    ids=["ascii", "accents", "cjk", "emoji", "combining", "zwsp-then-text"],
)
def test_text_in_any_script_is_still_accepted(provider: RemittanceProvider, text: str) -> None:
    played = play(provider, "denial-01", careful_but(says(text, _CASE_WORK)))
    assert played.decision == "accept", played.failing


# -- a follow-up for every case ---------------------------------------------------------------
TWO_LINE_TASKS = """
[[task]]
id = "denial-two-lines"
kind = "denial"
title = "Two lines of one claim denied"
payer = "PAY-BCBS"
deadline_in_days = 12
lines = [{ code = "71046", denial = "50" }, { code = "99213", denial = "50" }]

[[task]]
id = "underpaid-two-lines"
kind = "underpayment"
title = "Two lines of one claim paid below contract"
payer = "PAY-CIGNA"
deadline_in_days = 20
lines = [{ code = "99214", underpaid_by = 3000 }, { code = "99213", underpaid_by = 1000 }]
"""


@pytest.fixture(scope="module")
def two_lines(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RemittanceProvider]:
    path = tmp_path_factory.mktemp("tasks") / "tasks.toml"
    path.write_text(TASKS.read_text().split("# ----")[0] + TWO_LINE_TASKS)
    built = RemittanceProvider(tasks_file=str(path))
    yield built
    built.close()


def only_first_followup(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """A case per line, each with its note, but the second case is never scheduled."""
    if step["tool"] == "schedule_followup":
        context["followups"] = context.get("followups", 0) + 1
        if context["followups"] > 1:
            return {"ok": True, "result": {"followup_id": 0}, "error": None}
    return (yield step)


def one_case_per_claim(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
    """One case (note, follow-up) for both lines of the claim: legitimate."""
    if step["tool"] == "open_case" and "case" in context:
        context["skip"] = 2  # its note and follow-up too
        return {"ok": True, "result": {"case_id": context["case"]}, "error": None}
    if step["tool"] in ("add_note", "schedule_followup") and context.get("skip"):
        context["skip"] -= 1
        return {"ok": True, "result": {}, "error": None}
    reply = yield step
    if step["tool"] == "open_case":
        context["case"] = reply["result"]["case_id"]
    return reply


@pytest.mark.parametrize("task_id", ["denial-two-lines", "underpaid-two-lines"])
def test_a_case_left_without_a_followup_is_rejected(
    two_lines: RemittanceProvider, task_id: str
) -> None:
    played = play(two_lines, task_id, careful_but(only_first_followup))
    assert (played.decision, played.failing) == ("reject", {"followup_before_deadline"})
    assert any("no follow-up for" in p for p in played.problems("followup_before_deadline"))
    versions = {r.name: r.version for r in played.trial.results}
    assert versions["followup_before_deadline"] == "remittance-v3"


@pytest.mark.parametrize("task_id", ["denial-two-lines", "underpaid-two-lines"])
def test_a_case_per_line_or_one_per_claim_is_accepted(
    two_lines: RemittanceProvider, task_id: str
) -> None:
    def as_is(step: Call, context: dict[str, Any]) -> Generator[Call, Reply, Reply]:
        return (yield step)

    for hook in (as_is, one_case_per_claim):
        played = play(two_lines, task_id, careful_but(hook))
        assert played.decision == "accept", (hook.__name__, played.failing)


# -- a task whose line needs an approval but whose kind posts it ----------------------------
@pytest.mark.parametrize(
    ("kind", "fields"),
    [
        ("full_payment", 'lines = [{ code = "27447" }]'),
        ("partial_contractual", 'lines = [{ code = "27447", patient_resp = 5000 }]'),
        ("hidden_redirect", 'lines = [{ code = "27447" }]'),
        ("underpayment", 'deadline_in_days = 9\nlines = [{ code = "27447", underpaid_by = 100 }]'),
        ("split", 'paid = 1500000\nlines = [{ code = "27447" }, { code = "99213" }]'),
        (
            "recoupment",
            'offset = [{ code = "27447" }]\nlines = [{ code = "99213" }]',
        ),
    ],
    ids=lambda value: value if "\n" not in value and "=" not in value else "",
)
def test_a_task_posting_above_the_threshold_is_refused(
    tmp_path: Path, kind: str, fields: str
) -> None:
    body = f'[[task]]\nid = "big"\nkind = "{kind}"\npayer = "PAY-BCBS"\n{fields}\n'
    path = tmp_path / "tasks.toml"
    path.write_text(TASKS.read_text().split("# ----")[0] + body)
    with pytest.raises(InputError, match=r"task big: .* above the approval threshold"):
        RemittanceEnvironment(load_tasks(path)[0])


def test_the_same_line_under_over_threshold_still_builds(tmp_path: Path) -> None:
    body = '[[task]]\nid = "big"\nkind = "over_threshold"\npayer = "PAY-BCBS"\n'
    path = tmp_path / "tasks.toml"
    path.write_text(TASKS.read_text().split("# ----")[0] + body + 'lines = [{ code = "27447" }]\n')
    env = RemittanceEnvironment(load_tasks(path)[0])
    try:
        assert [x["action"] for x in env.expectation["lines"]] == ["approve"]
    finally:
        env.close()


# -- the environment's version in every record ---------------------------------------------
def _careful_report(kinds: list[str]) -> EvaluationReport:
    built = RemittanceProvider(kinds=kinds)
    try:
        agent = built.reference_agents()["careful"]
        trials = []
        for case in built.tasks():
            out = built.run_episode(EpisodeSpec(case, 0, 0, 60, run_id="probe4"), agent)
            trials.append(built.trial(out.subject, built.default_checks(), 0))
        return EvaluationReport.from_trials(trials)
    finally:
        built.close()


@pytest.fixture(scope="module")
def current() -> EvaluationReport:
    return _careful_report(["full_payment"])


def test_every_trial_names_the_environment_version(current: EvaluationReport) -> None:
    environments = current.lock["environments"]
    assert environments
    for settings in environments:
        assert settings["environment_id"].startswith(f"envkit:{domain.ENVIRONMENT_ID}/")
        assert settings["snapshot"]["name"].startswith(f"{domain.ENVIRONMENT_ID}/")


def test_runs_of_two_environment_versions_are_not_compared(
    current: EvaluationReport, monkeypatch: pytest.MonkeyPatch
) -> None:
    again = _careful_report(["full_payment"])  # the same version: equal locks, statistics
    assert compare_reports(current, again).pairs == len(current.trials)
    # The same data, tool schemas and tasks: only the version says the tools differ.
    monkeypatch.setattr(_run, "ENVIRONMENT_ID", "onrecord.domains.remittance/v-next")
    later = _careful_report(["full_payment"])
    with pytest.raises(ComparisonRefused, match="v-next"):
        compare_reports(current, later)
