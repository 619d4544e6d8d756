"""A malformed rule is named by its place in the list; a tool's or a check's bug names
the line of the owner's code that raised it; hostile tool calls are rejected, logged,
and change nothing.

Before: rule 3 of 7, written like the others, was refused as "rule {'rule': 'created',
...} lacks the fields ['count']", with no word on which of the seven it was; a tool
that raised was recorded as "buggy: ZeroDivisionError: division by zero" and a check
that raised as "check raised KeyError: 'x'", with nothing saying where; an agent's
argument with a key of a million characters was quoted whole in the rejection."""

from __future__ import annotations

import inspect
import json
import re
import sys
import textwrap
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Annotated, Any

import pytest

from onrecord import EvalCase
from onrecord._exceptions import describe_raised, raised_at
from onrecord.envkit import (
    Snapshot,
    ToolContext,
    ToolEpisode,
    ToolWorld,
    changed,
    check_rules,
    created,
    get_check,
    no_other_changes,
    passed,
    run_checks,
    save_episode,
    tool,
    unchanged,
)
from onrecord.episode import OutcomeCheck, OutcomeVerdict, run_check
from onrecord.errors import InputError
from tests.cli_process import onrecord

from . import claims_env

CLAIMS = {"claims": ("id", "payer", "amount", "status"), "allocations": ("id", "claim_id")}
SIX = [
    created("allocations", {"claim_id": 1}),
    created("allocations", {"claim_id": 2}),
    changed("claims", {"id": 3}, {"status": "closed"}),
    changed("claims", {"id": 4}, {"status": "closed"}),
    unchanged("claims"),
    no_other_changes(),
]


def _seven(third: Any) -> list[Any]:
    """Seven rules alike, ``third`` in the place of the third."""
    return [*SIX[:2], third, *SIX[2:]]


# -- rules: the refusal names the place ---------------------------------------------------
def test_a_malformed_rule_among_seven_is_named_by_its_place() -> None:
    rule = {"rule": "created", "table": "allocations", "where": {"claim_id": 3}}
    message = (
        f"rule 3 of 7 (rules[2]) {rule!r} lacks the fields ['count']; build it with "
        "created(), or, written out in a task file, give it every field of "
        "['table', 'where', 'count'] (count: the exact number of rows, or "
        "{min = a, max = b})"
    )
    with pytest.raises(InputError, match=f"^{re.escape(message)}$"):
        check_rules({}, _seven(rule))


@pytest.mark.parametrize(
    ("third", "said"),
    [
        ({"rule": "craeted", "table": "claims"}, "unknown rule 3 of 7 (rules[2]) {"),
        (
            {"rule": "created", "table": "claims", "where": {}, "cuont": 1},
            "rule 3 of 7 (rules[2]) {'rule': 'created', 'table': 'claims', 'where': {}, "
            "'cuont': 1} has the unknown fields ['cuont'] (did you mean 'count' for 'cuont'?)",
        ),
        ({"rule": "unchanged", "table": 7}, "rule 3 of 7 (rules[2]) {'rule': 'unchanged', "),
        ({**created("claims"), "where": [1]}, "rule 3 of 7 (rules[2]) {'rule': 'created', "),
        ({**created("claims"), "count": -1}, "rule 3 of 7 (rules[2]) {'rule': 'created', "),
        ("created", "unknown rule 3 of 7 (rules[2]) 'created'"),
    ],
)
def test_every_refusal_of_a_rule_names_its_place(third: Any, said: str) -> None:
    with pytest.raises(InputError) as refused:
        check_rules({}, _seven(third))
    assert str(refused.value).startswith(said), str(refused.value)


@pytest.mark.parametrize(
    ("third", "said"),
    [
        (created("claim"), "rule 3 of 7 (rules[2]) {'rule': 'created', 'table': 'claim', "),
        (
            changed("claims", {"payr": "x"}),
            "rule 3 of 7 (rules[2]) {'rule': 'changed', 'table': 'claims', 'where': "
            "{'payr': 'x'}, 'count': 1, 'to': {}}: claims has no columns ['payr']",
        ),
    ],
)
def test_a_rule_naming_what_the_database_lacks_is_named_by_its_place(third: Any, said: str) -> None:
    with pytest.raises(InputError) as refused:
        check_rules({}, _seven(third), tables=CLAIMS)
    assert str(refused.value).startswith(said), str(refused.value)


def test_the_first_malformed_rule_is_the_one_named() -> None:
    rules = [*SIX, created("nowhere")]
    rules[1] = {"rule": "created"}
    with pytest.raises(InputError, match=r"^rule 2 of 7 \(rules\[1\]\) \{'rule': 'created'\}"):
        check_rules({}, rules, tables=CLAIMS)


def test_a_rule_built_by_a_helper_is_refused_in_the_words_it_had() -> None:
    # No list, no place: the helper's own call is named, as before.
    with pytest.raises(InputError, match=r"^created\('claims'\): count must be"):
        created("claims", count=-1)


def _saved(world: ToolWorld, folder: Path, case: EvalCase, calls: list[Any]) -> ToolEpisode:
    world.reset(seed=0, case=case)
    for name, arguments in calls:
        world.call(name, arguments)
    return save_episode(world, folder)


def test_a_recorded_episode_names_the_malformed_rules_place(
    world: ToolWorld, tmp_path: Path
) -> None:
    rules = [*SIX[:2], {"rule": "created", "table": "allocations"}, SIX[5]]
    case = EvalCase("allocate", {"rules": rules}, case_id="r50")
    episode = _saved(world, tmp_path / "ep", case, [("allocate", {"claim_id": 1, "amount": 1})])
    [result] = run_checks(episode, ["envkit/diff_satisfies_rules"])
    assert result.status == "evaluator_error"
    assert (
        "check raised InputError: the task's expected_output['rules']: rule 3 of 4 (rules[2]) "
        "{'rule': 'created', 'table': 'allocations'} lacks the fields ['where', 'count']"
    ) in result.reason
    assert " (at " not in result.reason  # the task's mistake, not a line of code


STOCKROOM = '''
from onrecord import EvalCase
from onrecord.envkit import Snapshot, no_other_changes, tool
from onrecord.runner import ToolWorldProvider, agent_factory

SNAPSHOT = Snapshot.build("stock", """
    CREATE TABLE items (sku TEXT PRIMARY KEY, stock INTEGER NOT NULL);
    CREATE TABLE picks (id INTEGER PRIMARY KEY, sku TEXT NOT NULL, qty INTEGER NOT NULL);
    """, lambda conn, rng: conn.execute("INSERT INTO items VALUES ('nut', 8), ('bolt', 3)"))


@tool(writes=True, example={"sku": "nut", "qty": 1})
def pick(ctx, sku: str, qty: int) -> dict:
    """Pick qty of sku."""
    ctx.execute("UPDATE items SET stock = stock - ? WHERE sku = ?", (qty, sku))
    return {"pick": ctx.execute("INSERT INTO picks (sku, qty) VALUES (?, ?)",
                                (sku, qty)).lastrowid}


@agent_factory
def careful(context):
    calls = iter([{"tool": "pick", "arguments": context.case.input},
                  {"tool": "finish", "arguments": {}}])
    return lambda observation: next(calls)


def make():
    return ToolWorldProvider(SNAPSHOT, [pick], environment_id="stock/v1",
                             tasks=[EvalCase({}, {"rules": [no_other_changes()]}, case_id="own")],
                             agents={"careful": careful})
'''
TASKS = """
[[tasks]]
case_id = "pick-nut"
input = { sku = "nut", qty = 3 }

[[tasks.expected_output.rules]]
rule = "changed"
table = "items"
where = { sku = "nut" }
count = 1
to = { stock = 5 }

[[tasks.expected_output.rules]]
rule = "created"
table = "picks"
where = { sku = "nut", qty = 3 }
count = 1

[[tasks.expected_output.rules]]
rule = "changed"
table = "items"
where = { sku = "bolt" }
to = { stock = 3 }

[[tasks.expected_output.rules]]
rule = "no_other_changes"
"""


def test_onrecord_run_names_the_place_of_a_tasks_files_malformed_rule(tmp_path: Path) -> None:
    (tmp_path / "stockroom.py").write_text(STOCKROOM)
    (tmp_path / "tasks.toml").write_text(TASKS)
    done = onrecord(
        "run", "stockroom:make", "--tasks-file", "tasks.toml", "--agent", "careful",
        "--out", "runs/a", cwd=tmp_path, pythonpath=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stdout + done.stderr
    err = " ".join(done.stderr.split())  # the error wraps to the terminal
    assert (
        "tasks.toml: task 1: task ('pick-nut') expected_output['rules']: rule 3 of 4 "
        "(rules[2]) {'rule': 'changed', 'table': 'items', 'where': {'sku': 'bolt'}, "
        "'to': {'stock': 3}} lacks the fields ['count']"
    ) in err


# -- a tool's bug names its line -----------------------------------------------------------
def _divide(amount: float) -> float:
    return amount / 0


_DIVIDE_LINE = _divide.__code__.co_firstlineno + 1


@tool(writes=True)
def buggy(ctx: ToolContext, claim_id: int) -> None:
    """Close a claim, then fail in a helper (a bug in the owner's code)."""
    ctx.execute("UPDATE claims SET status = 'closed' WHERE id = ?", (claim_id,))
    _divide(claim_id)


@tool(writes=True)
def parses(ctx: ToolContext, text: str) -> Any:
    """Fail inside the standard library, called from the tool."""
    ctx.execute("UPDATE claims SET status = 'parsed' WHERE id = 1")
    return json.loads(text)


@tool(writes=True)
def misspelt(ctx: ToolContext) -> None:
    """Fail in SQLite, on a statement of the tool's."""
    ctx.execute("UPDATE claimz SET status = 'x'")


@tool(writes=True)
def unportable(ctx: ToolContext) -> Any:
    """Return what is not JSON: onrecord's refusal, no line of the tool's."""
    ctx.execute("UPDATE claims SET status = 'x' WHERE id = 1")
    return {1, 2}


@tool(writes=True)
def refuses(ctx: ToolContext) -> None:
    """Reject the call, as tools do on purpose."""
    ctx.reject("not today")


def _line_of(function: Any, text: str) -> int:
    """The line of ``function``'s source holding ``text``."""
    lines, first = inspect.getsourcelines(getattr(function, "function", function))
    return first + next(i for i, line in enumerate(lines) if text in line)


@pytest.fixture
def buggy_world(snap: Snapshot) -> Any:
    tools = [*claims_env.TOOLS, buggy, parses, misspelt, unportable, refuses]
    with ToolWorld(snap, tools, hidden=["notes"]) as built:
        built.reset(seed=0)
        yield built


def test_a_tool_error_names_the_line_of_the_owners_code(buggy_world: ToolWorld) -> None:
    before = buggy_world.state_digest()
    event = buggy_world.call("buggy", {"claim_id": 3})
    assert event["status"] == "error"
    assert event["error"]["type"] == "tool_error"
    assert event["error"]["message"] == (
        f"buggy: ZeroDivisionError: division by zero (at {__file__}:{_DIVIDE_LINE} in _divide)"
    )
    assert buggy_world.state_digest() == before  # rolled back, as before
    # Recorded data: the same bug reads the same after a reset (no address, no time).
    buggy_world.reset(seed=0)
    assert buggy_world.call("buggy", {"claim_id": 3})["error"] == event["error"]


def test_a_failure_inside_the_standard_library_names_the_tools_line(
    buggy_world: ToolWorld,
) -> None:
    message = buggy_world.call("parses", {"text": "{"})["error"]["message"]
    line = _line_of(parses, "json.loads(text)")
    assert message.startswith("parses: JSONDecodeError: Expecting property name"), message
    assert message.endswith(f" (at {__file__}:{line} in parses)"), message


def test_an_sqlite_error_names_the_statement_of_the_tool(buggy_world: ToolWorld) -> None:
    message = buggy_world.call("misspelt", {})["error"]["message"]
    line = _line_of(misspelt, "UPDATE claimz")
    assert message == (
        f"misspelt: OperationalError: no such table: claimz (at {__file__}:{line} in misspelt)"
    )


def test_onrecords_own_refusals_and_rejections_keep_their_words(buggy_world: ToolWorld) -> None:
    before = buggy_world.state_digest()
    refused = buggy_world.call("unportable", {})
    assert refused["error"]["type"] == "tool_error"
    assert refused["error"]["message"].startswith("unportable: PortabilityError: $.result holds")
    assert " (at " not in refused["error"]["message"]  # no line of the tool's is at fault
    rejected = buggy_world.call("refuses", {})
    assert rejected["status"] == "rejected"
    assert rejected["error"] == {"type": "rule_violation", "message": "not today"}
    assert buggy_world.state_digest() == before


def test_a_saved_tool_error_keeps_its_line_and_verifies(
    buggy_world: ToolWorld, tmp_path: Path
) -> None:
    buggy_world.reset(seed=0, case=EvalCase("x", {"rules": [no_other_changes()]}, case_id="b"))
    buggy_world.call("buggy", {"claim_id": 3})
    save_episode(buggy_world, tmp_path / "ep")
    loaded = ToolEpisode.load(tmp_path / "ep")
    assert loaded.actions[0]["error"]["message"].endswith(f":{_DIVIDE_LINE} in _divide)")
    [result] = run_checks(loaded, ["envkit/diff_satisfies_rules"])
    assert result.status == "pass"


def test_an_episode_recorded_before_lines_were_named_still_loads_and_grades(
    buggy_world: ToolWorld, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Recorded as earlier versions wrote it: "buggy: ZeroDivisionError: division by zero".
    monkeypatch.setattr("onrecord._exceptions.raised_at", lambda exc: "")
    buggy_world.reset(seed=0, case=EvalCase("x", {"rules": [no_other_changes()]}, case_id="o"))
    buggy_world.call("buggy", {"claim_id": 3})
    save_episode(buggy_world, tmp_path / "old")
    monkeypatch.undo()
    loaded = ToolEpisode.load(tmp_path / "old")
    assert loaded.actions[0]["error"]["message"] == "buggy: ZeroDivisionError: division by zero"
    checks = ["envkit/diff_satisfies_rules", "envkit/rejected_calls_changed_nothing"]
    assert [r.status for r in run_checks(loaded, checks)] == ["pass", "pass"]


# -- a check's bug names its line ----------------------------------------------------------
def _reads_missing(episode: Any) -> OutcomeVerdict:
    return passed("never", table=episode.diff["nowhere"])


def test_a_check_that_raises_names_its_line() -> None:
    check = OutcomeCheck("reads_missing", "1", _reads_missing)
    result = run_check(check, type("Episode", (), {"diff": {}})())
    line = _line_of(_reads_missing, 'diff["nowhere"]')
    assert result.status == "evaluator_error"
    assert result.reason == (
        f"check raised KeyError: 'nowhere' (at {__file__}:{line} in _reads_missing)"
    )


def test_a_check_refusing_in_onrecords_code_names_no_line(world: ToolWorld, tmp_path: Path) -> None:
    # diff_satisfies_rules refusing an empty rules list: the task's mistake, no line.
    episode = _saved(world, tmp_path / "ep", EvalCase("x", {"rules": []}, case_id="e"), [])
    result = run_check(get_check("envkit/diff_satisfies_rules"), episode)
    assert result.status == "evaluator_error"
    assert result.reason.startswith("check raised InputError: the task's expected_output")
    assert " (at " not in result.reason, result.reason


CHECKS = """
from onrecord.envkit import check, passed


def _count(episode):
    return len(episode.diff["nowhere"])


@check("mine/broken", "1")
def broken(episode):
    return passed("counted", rows=_count(episode))
"""


def test_onrecord_check_prints_the_line_of_a_check_that_raised(
    world: ToolWorld, tmp_path: Path
) -> None:
    (tmp_path / "mychecks.py").write_text(textwrap.dedent(CHECKS))
    _saved(world, tmp_path / "ep", EvalCase("x", case_id="c"), [])
    done = onrecord(
        "check", "mine/broken", "--episode", "ep", "--import", "mychecks",
        cwd=tmp_path, pythonpath=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stdout + done.stderr
    path = tmp_path / "mychecks.py"
    assert (
        f"evaluator_error mine/broken v1: check raised KeyError: 'nowhere' (at {path}:6 in _count)"
    ) in " ".join(done.stdout.split())


# -- raised_at: which frame is the owner's -------------------------------------------------
CATCH = """
def caught():
    try:
        f()
    except BaseException as exc:
        return exc
"""


def _raise_from(code: str, filename: str) -> BaseException:
    """The exception ``f()`` of ``code`` raises, caught in the same file: every frame
    of its traceback is in ``filename``."""
    space: dict[str, Any] = {}
    exec(compile(code + CATCH, filename, "exec"), space)
    exc = space["caught"]()
    assert isinstance(exc, BaseException)
    return exc


SITE = f"{Path(sys.prefix) / 'lib' / 'site-packages' / 'somelib.py'}"


def test_an_installed_packages_frame_gives_way_to_the_owners() -> None:
    library: dict[str, Any] = {}
    exec(compile("def g():\n    raise ValueError('deep')\n", SITE, "exec"), library)

    def mine() -> None:
        library["g"]()

    with pytest.raises(ValueError, match="deep") as raised:
        mine()
    line = mine.__code__.co_firstlineno + 1
    assert raised_at(raised.value) == f" (at {__file__}:{line} in mine)"
    # Alone (the owner's code installed as a package), the package's frame is named.
    alone = _raise_from("def f():\n    raise ValueError('x')\n", SITE)
    assert raised_at(alone) == f" (at {SITE}:2 in f)"


def test_no_line_for_an_exception_never_raised_or_an_interrupt() -> None:
    assert raised_at(ValueError("never raised")) == ""
    assert describe_raised(ValueError("never raised")) == "ValueError: never raised"
    interrupt = _raise_from("def f():\n    raise KeyboardInterrupt\n", "/owner/agent.py")
    assert raised_at(interrupt) == ""  # where a Ctrl-C lands differs every time
    frozen = _raise_from("def f():\n    raise ValueError('x')\n", "<frozen importlib>")
    assert raised_at(frozen) == ""


def test_a_file_name_json_cannot_hold_is_escaped() -> None:
    exc = _raise_from("def f():\n    raise ValueError('x')\n", "/owner/\ud800.py")
    assert raised_at(exc) == " (at /owner/\\ud800.py:2 in f)"


# -- hostile calls: rejected, logged, nothing changed --------------------------------------
class _Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


class _HostileMapping(Mapping[str, Any]):
    """Arguments whose reading runs the agent's code, which raises."""

    def __getitem__(self, key: str) -> Any:
        raise RuntimeError("hostile __getitem__")

    def __iter__(self) -> Iterator[str]:
        return iter(["claim_id", "amount"])

    def __len__(self) -> int:
        return 2


HUGE = "x" * 2_000_000


@tool(writes=True)
def note(
    ctx: ToolContext,
    claim_id: int,
    body: Annotated[str, {"maxLength": 100}],
    tags: dict[str, int],
) -> None:
    """Add a note to a claim."""
    ctx.execute("INSERT INTO notes (claim_id, body) VALUES (?, ?)", (claim_id, body))


HOSTILE: list[tuple[str, Any, str]] = [
    ("allocate", {"claim_id": "1", "amount": 5.0}, "arguments.claim_id must be an integer"),
    ("allocate", {"claim_id": True, "amount": 5.0}, "arguments.claim_id must be an integer"),
    ("allocate", {"claim_id": 1.5, "amount": 5.0}, "arguments.claim_id must be an integer"),
    ("allocate", {"claim_id": 1, "amount": -1}, "arguments.amount must be at least 0"),
    ("allocate", {"claim_id": 1, "amount": 5.0, "extra": 1}, "has the unknown field 'extra'"),
    ("allocate", {"claim_id": 1, "amount": 5.0, "ctx": 1}, "has the unknown field 'ctx'"),
    ("allocate", {"amount": 5.0}, "is missing the required field 'claim_id'"),
    ("allocate", {}, "is missing the required fields 'claim_id', 'amount'"),
    ("allocate", None, "is missing the required fields 'claim_id', 'amount'"),
    ("allocate", {"claim_id": {1, 2}, "amount": 5.0}, "holds a builtins.set"),
    ("allocate", {"claim_id": b"1", "amount": 5.0}, "holds a builtins.bytes"),
    ("allocate", {"claim_id": 1, "amount": float("nan")}, "non-finite numbers"),
    ("allocate", {"claim_id": 2**70, "amount": 5.0}, "beyond the 64-bit range"),
    ("allocate", {"claim_id": 1, "amount": 5.0, "memo": "\ud800"}, "lone surrogate"),
    ("allocate", {"claim_id": 1, "amount": 5.0, "memo": _Unprintable()}, "_Unprintable"),
    ("allocate", {1: 2}, "JSON object keys must be strings"),
    ("allocate", _HostileMapping(), "arguments cannot be read: RuntimeError: hostile"),
    ("allocate", [1, 5.0], "must be a JSON object of named arguments, got list"),
    ("allocate", "claim_id=1", "must be a JSON object of named arguments, got str"),
    ("allocate", {"claim_id": HUGE, "amount": 5.0}, "arguments.claim_id must be an integer"),
    ("allocate", {"claim_id": 1, "amount": 5.0, HUGE: 1}, "has the unknown field 'xxx"),
    ("note", {"claim_id": 1, "body": HUGE, "tags": {}}, "arguments.body must have at most 100"),
    ("note", {"claim_id": 1, "body": "b", "tags": {HUGE: "x"}}, '.tags["xxxx'),
    ("note", {"claim_id": 1, "body": "b", "tags": [HUGE]}, "arguments.tags must be an object"),
]


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    HOSTILE,
    ids=[f"{index}-{case[2][:30]}" for index, case in enumerate(HOSTILE)],
)
def test_a_hostile_call_is_a_logged_rejection_that_changes_nothing(
    snap: Snapshot, name: str, arguments: Any, said: str
) -> None:
    with ToolWorld(snap, [*claims_env.TOOLS, note], hidden=["notes"]) as world:
        world.reset(seed=0)
        before, audited = world.state_digest(), len(world.audit_history())
        event = world.call(name, arguments)
        assert event["status"] == "rejected", event["error"]
        assert event["error"]["type"] == "invalid_arguments"
        message = event["error"]["message"]
        assert message.startswith(f"{name}: "), message
        assert said in message, message
        assert len(message) < 400  # a huge value or key is cut, not quoted whole
        assert world.state_digest() == before
        assert len(world.audit_history()) == audited
        assert world.state_version == 0
        assert world.log.events[-1] is event
        assert event["step"] == 1
        json.dumps(event, allow_nan=False)  # the log can hold it


def test_a_hostile_tool_name_is_a_logged_rejection(snap: Snapshot) -> None:
    with claims_env.world(snap) as world:
        world.reset(seed=0)
        before = world.state_digest()
        for name in (None, 1, b"allocate", ["allocate"], HUGE, "\ud800"):
            event = world.call(name, {"claim_id": 1, "amount": 1.0})
            assert event["status"] == "rejected"
            assert event["error"]["type"] == "unknown_tool"
            assert len(event["error"]["message"]) < 1000
        assert world.state_digest() == before
        assert world.state_version == 0


def test_a_huge_string_a_tool_allows_is_taken_as_sent(snap: Snapshot) -> None:
    # Not hostile: memo has no maxLength, so the call runs and the log keeps it whole.
    with claims_env.world(snap) as world:
        world.reset(seed=0)
        event = world.call("allocate", {"claim_id": 1, "amount": 1.0, "memo": HUGE})
        assert event["status"] == "ok"
        assert event["arguments"]["memo"] == HUGE
