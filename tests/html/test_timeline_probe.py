"""Which steps a long episode's detail view keeps, and the page's budget of steps: the
first and last steps and every step that did not succeed survive, every step left out
is counted in a gap, and many long episodes no longer make a page of tens of MB."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from onrecord.html import report_data
from onrecord.runner import plan_run, start_run


@given(
    st.lists(st.sampled_from(["ok", "ok", "ok", "rejected", "error"]), max_size=900),
    st.integers(1, 600),
)
def test_selection_keeps_order_failures_and_the_end(statuses: list[str], limit: int) -> None:
    from onrecord.html._timeline import select_timeline

    events = [{"step": index, "status": status} for index, status in enumerate(statuses)]
    kept, gaps = select_timeline(events, limit)
    steps = [e["step"] for e in kept]
    assert len(kept) == min(limit, len(events))
    assert steps == sorted(set(steps))
    assert len(kept) + sum(n for _, n in gaps) == len(events)
    if events and limit >= 4:
        assert steps[0] == 0
        assert steps[-1] == len(events) - 1
    failed = [e["step"] for e in events if e["status"] != "ok"]
    if len(failed) + 250 <= limit:
        assert set(failed) <= set(steps)
    position = 0  # the gaps sit exactly where steps are missing
    for index, event in enumerate(kept):
        position += sum(n for at, n in gaps if at == index)
        assert event["step"] == position
        position += 1


def test_many_long_episodes_share_a_page_budget(tmp_path: Path) -> None:
    from onrecord.html._selection import PAGE_STEPS as _PAGE_STEPS

    # 60 CartPole episodes of 500 steps: 30 000 steps (300 such made a 27 MB page).
    start_run(tmp_path / "run", plan_run("cartpole", "balances", seeds=list(range(60))))
    data = report_data(tmp_path / "run")
    assert len(data["episodes"]) == 60
    assert all(e["timeline_total"] == 500 for e in data["episodes"])
    assert sum(len(e["timeline"]) for e in data["episodes"]) <= _PAGE_STEPS
    assert all(e["timeline"][-1]["step"] == 499 for e in data["episodes"])
