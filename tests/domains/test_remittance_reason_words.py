"""``only_expected_tables_changed`` names tables as a sentence lists them, not as a
Python list (its reason read "outside the task's tables []"). Real remittance runs; the
tables expected in the reason are read from each episode's saved audit history."""

from __future__ import annotations

from pathlib import Path

from onrecord.runner import RunStore, plan_run, start_run

CHECK = "only_expected_tables_changed"


def _reasons(run: Path) -> list[tuple[str, str, list[str]]]:
    """Each episode's verdict of the check: status, reason, and the tables its audit
    history touched."""
    store = RunStore.open(run)
    found = []
    for record in store.records():
        (result,) = [r for r in record.data["trial"]["results"] if r["name"] == CHECK]
        events = store.saved_episode(record).evidence["audit"]["events"]
        found.append((result["status"], result["reason"], sorted({e["table"] for e in events})))
    return found


def test_the_tables_touched_are_listed_as_words(tmp_path: Path) -> None:
    seen = set()
    agents = (
        ("careful", ["full_payment"]),
        ("change_and_restore", ["denial"]),
        ("double_poster", ["duplicate"]),  # a task that allows no table to change
    )
    for agent, kinds in agents:
        run = tmp_path / agent
        plan = plan_run("remittance", agent, environment_config={"size": 20, "kinds": kinds})
        start_run(run, plan)
        reasons = _reasons(run)
        assert reasons
        for status, reason, touched in reasons:
            seen.add(status)
            assert "[" not in reason, reason  # before: ['allocations', 'claim_lines'], []
            if status == "pass":
                assert reason == f"the audit history touches only {', '.join(touched)}"
            elif agent == "double_poster":
                assert status == "fail"
                # Before: "…, outside the task's tables: (none)".
                wrote = ", ".join(touched)
                assert reason == f"wrote to {wrote}; the task allows no table to change"
                seen.add("none allowed")
            else:
                assert status == "fail"
                assert ", outside the task's tables: " in reason
                assert reason.startswith("wrote to claims")  # written off and put back
    assert seen == {"pass", "fail", "none allowed"}  # every wording was read
