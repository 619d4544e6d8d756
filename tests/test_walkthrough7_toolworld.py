"""docs/writing-a-task.md steps 7-10 followed with a tool world of a new user's own (a
library loans desk under ``ToolWorldProvider``), as real ``onrecord`` processes over
real files: the decisions for a careful, a sloppy (writes and restores) and a boasting
(claims success, writes nothing) agent, and the messages that must say what to fix."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.cli_process import onrecord

MODULE = '''
from onrecord import EvalCase
from onrecord.envkit import Snapshot, changed, created, failed, no_other_changes, passed, tool
from onrecord.episode import OutcomeCheck
from onrecord.runner import ToolWorldProvider, agent_factory

BOOKS = {"B1": ("Dune", 2), "B2": ("Emma", 1)}
SNAPSHOT = Snapshot.build("loans", """
    CREATE TABLE members (member_id TEXT PRIMARY KEY, fines_cents INTEGER NOT NULL);
    CREATE TABLE books (book_id TEXT PRIMARY KEY, title TEXT NOT NULL,
                        copies INTEGER NOT NULL);
    CREATE TABLE loans (id INTEGER PRIMARY KEY, member_id TEXT NOT NULL,
                        book_id TEXT NOT NULL);""",
    lambda conn, rng: (
        conn.executemany("INSERT INTO members VALUES (?, ?)", [("M1", 0), ("M2", 350)]),
        conn.executemany("INSERT INTO books VALUES (?, ?, ?)",
                         [(k, t, c) for k, (t, c) in BOOKS.items()])))


@tool(writes=True, example={"member_id": "M1", "book_id": "B1"})
def checkout(ctx, member_id: str, book_id: str) -> dict:
    """Lend a book (takes the copy off the shelf before checking the member)."""
    ctx.execute("UPDATE books SET copies = copies - 1 WHERE book_id = ?", (book_id,))
    fines = ctx.execute("SELECT fines_cents FROM members WHERE member_id = ?",
                        (member_id,)).fetchone()
    if fines is None or fines[0] > 0:
        ctx.reject(f"member {member_id} cannot borrow")
    return {"loan_id": ctx.execute("INSERT INTO loans (member_id, book_id) VALUES (?, ?)",
                                   (member_id, book_id)).lastrowid}


@tool(writes=True, example={"book_id": "B1", "delta": 1})
def adjust_copies(ctx, book_id: str, delta: int) -> dict:
    """Correct the shelf count of a book."""
    ctx.execute("UPDATE books SET copies = copies + ? WHERE book_id = ?", (delta, book_id))
    return {"book_id": book_id}


def script(*calls):
    steps = iter(calls)
    return lambda observation: next(steps)


def lend(task):
    return [{"tool": "checkout", "arguments": {"member_id": "M2", "book_id": task["book_id"]}},
            {"tool": "checkout", "arguments": task},
            {"tool": "finish", "arguments": {"message": "lent"}}]


@agent_factory
def careful(context):                 # its refused first try changes nothing
    return script(*lend(context.case.input))


@agent_factory
def sloppy(context):                  # takes a copy of Emma and puts it back
    return script({"tool": "adjust_copies", "arguments": {"book_id": "B2", "delta": -1}},
                  {"tool": "adjust_copies", "arguments": {"book_id": "B2", "delta": 1}},
                  *lend(context.case.input))


@agent_factory
def boaster(context):                 # says it lent the book, writes nothing
    return script({"tool": "finish", "arguments": {"message": "book lent!"}})


def crashing(task):
    def act(observation):
        raise RuntimeError("model server down")
    return act


def _other_books_untouched(episode):
    book = episode.task["input"]["book_id"]
    touched = sorted({e["key"] for e in episode.audit
                      if e["table"] == "books" and e["key"] != book})
    if touched:
        return failed("another book's copies were written", books=touched)
    return passed("no other book written")


other_books_untouched = OutcomeCheck("other_books_untouched", "v1", _other_books_untouched)


def make():
    return ToolWorldProvider(
        SNAPSHOT, [checkout, adjust_copies], environment_id="loans/v1",
        checks=[other_books_untouched],
        agents={"careful": careful, "sloppy": sloppy, "boaster": boaster},
        max_steps=10)
'''

# The task file as step 7 now shows it: rules as [[tasks.expected_output.rules]] tables.
TASKS = """
[[tasks]]
case_id = "lend-B1"
input = { member_id = "M1", book_id = "B1" }

[[tasks.expected_output.rules]]
rule = "changed"
table = "books"
where = { book_id = "B1" }
count = 1
to = { copies = 1 }

[[tasks.expected_output.rules]]
rule = "created"
table = "loans"
where = { member_id = "M1", book_id = "B1" }
count = 1

[[tasks.expected_output.rules]]
rule = "no_other_changes"
"""

POLICY = """
name = "loans-release"
[[requirements]]
check = "envkit/diff_satisfies_rules"
[[requirements]]
check = "envkit/rejected_calls_changed_nothing"
[[requirements]]
check = "other_books_untouched"
"""

CONFIG = """
environment = "loans:make"
agent = "careful"
tasks_file = "tasks.toml"
seeds = "0-1"
repeats = 2
max_steps = 20
policy = "policy.toml"
out = "runs/careful"
"""


@pytest.fixture
def desk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The user's folder: module, task file, policy and run config; on PYTHONPATH as
    step 8 says."""
    for name, text in [
        ("loans.py", MODULE),
        ("tasks.toml", TASKS),
        ("policy.toml", POLICY),
        ("careful.toml", CONFIG),
    ]:
        (tmp_path / name).write_text(textwrap.dedent(text))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    return tmp_path


def test_steps_7_to_10_decide_right_for_each_agent(desk: Path) -> None:
    careful = onrecord("run", "--config", "careful.toml", cwd=desk)
    assert careful.returncode == 0, careful.stdout + careful.stderr
    run = ["run", "--config", "careful.toml", "--agent"]
    sloppy = onrecord(*run, "sloppy", "--out", "runs/sloppy", cwd=desk)
    assert sloppy.returncode == 1, sloppy.stdout + sloppy.stderr
    assert "'other_books_untouched' (critical) failed" in sloppy.stdout
    boaster = onrecord(*run, "boaster", "--out", "runs/boaster", cwd=desk)
    assert boaster.returncode == 1, boaster.stdout + boaster.stderr
    assert "'envkit/diff_satisfies_rules' (critical) failed" in boaster.stdout

    assert onrecord("run", "--resume", "runs/sloppy", cwd=desk).returncode == 1
    module = desk / "loans.py"
    module.write_text(module.read_text().replace('"v1", _other', '"v2", _other'))
    regrade = onrecord("regrade", "runs/sloppy", "--name", "v2", cwd=desk)
    assert regrade.returncode == 1, regrade.stdout + regrade.stderr
    assert "version v1 → v2" in regrade.stdout
    compared = onrecord("compare", "runs/careful", "runs/sloppy", "--html", "c.html", cwd=desk)
    assert compared.returncode == 0, compared.stdout + compared.stderr
    gate = ["gate", "runs/sloppy/regrades/v2/report.json", "--policy", "policy.toml"]
    assert onrecord(*gate, "--output", "decision.json", cwd=desk).returncode == 1
    assert onrecord("report", "runs/sloppy", "--grading", "v2", cwd=desk).returncode == 0
    assert (desk / "runs/sloppy/regrades/v2/report.html").is_file()


def test_an_agents_exception_is_named_in_the_decision(desk: Path) -> None:
    # The coverage issue used to read "ended with agent_error, not finished": the
    # message was recorded but never shown, so the user had to grep episodes.jsonl.
    out = desk / "runs" / "crash"
    config = desk / "careful.toml"
    run = onrecord("run", "--config", config, "--agent", "loans:crashing", "--out", out)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "ended with agent_error: RuntimeError: model server down" in run.stdout
    shown = onrecord("show", out, "--episode", "lend-B1#0")
    assert "RuntimeError: model server down" in shown.stdout


def test_a_hand_written_rule_without_count_says_what_to_write(desk: Path) -> None:
    tasks = desk / "tasks.toml"
    tasks.write_text(tasks.read_text().replace("count = 1\nto =", "to =", 1))
    run = onrecord("run", "--config", "careful.toml", cwd=desk)
    assert run.returncode == 3
    assert "lacks the fields ['count']" in run.stderr
    assert "in a task file, give it every field of ['table', 'where', 'count', 'to']" in (
        run.stderr
    )
    tasks.write_text('[[tasks]]\ncase_id = "x"\ninput = { member_id = "M1" }\n')
    run = onrecord("run", "--config", "careful.toml", cwd=desk)
    assert run.returncode == 3
    assert "in a --tasks-file: expected_output = { rules = ... }" in run.stderr


def test_regrade_after_editing_a_tool_blames_the_module_not_onrecord(desk: Path) -> None:
    assert onrecord("run", "--config", "careful.toml", cwd=desk).returncode == 0
    module = desk / "loans.py"
    module.write_text(module.read_text().replace("Correct the shelf", "Fix the shelf"))
    regrade = onrecord("regrade", "runs/careful", "--name", "edited", cwd=desk)
    assert regrade.returncode == 3
    assert "differ from those the episode was recorded with" in regrade.stderr
    assert "undo tools added, removed or edited since" in regrade.stderr
    assert "onrecord version" not in regrade.stderr


def test_the_docs_hand_written_rules_run_the_envkit_stockroom(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Step 7's [[tasks.expected_output.rules]] block, with envkit.md's stockroom module.
    docs = Path(__file__).resolve().parent.parent / "docs"
    envkit = (docs / "envkit.md").read_text()
    start = envkit.index('"""stockroom.py')
    (tmp_path / "stockroom.py").write_text(envkit[start : envkit.index("```", start)])
    tasks = re.findall(r"```toml\n(.*?)```", (docs / "writing-a-task.md").read_text(), re.S)
    (tmp_path / "tasks.toml").write_text(next(t for t in tasks if "pick-nut" in t))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    run = ["run", "stockroom:make", "--tasks-file", "tasks.toml", "--seeds", "0", "--agent"]
    careful = onrecord(*run, "careful", "--out", "runs/careful", cwd=tmp_path)
    assert careful.returncode == 0, careful.stdout + careful.stderr
    sloppy = onrecord(*run, "sloppy", "--out", "runs/sloppy", cwd=tmp_path)
    assert sloppy.returncode == 1, sloppy.stdout + sloppy.stderr
