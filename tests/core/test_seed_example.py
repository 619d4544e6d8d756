"""The seed document's example, with ``multivon_eval`` renamed ``onrecord``, runs as
written; only the application-specific functions it leaves to the user are supplied
(a real SQLite invoice environment, its read-only observer and an agent)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.core.envs import FINISH, POST, InvoiceEnv, read_committed


def test_seed_environment_outcomes_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    database = tmp_path / "ledger.sqlite"
    plan = [POST, FINISH]

    def make_fresh_environment() -> InvoiceEnv:
        return InvoiceEnv(database)

    def your_agent(observation: Any, info: Any) -> int:
        return plan.pop(0)

    def read_committed_state() -> dict[str, Any]:
        return read_committed(database)

    # --- from the seed, renamed ---
    from onrecord import EvalCase
    from onrecord.integrations.gymnasium import capture_episode

    def interact(env, observation, info):  # type: ignore[no-untyped-def]
        while True:
            action = your_agent(observation, info)
            observation, reward, terminated, truncated, info = env.step(action)  # noqa: RUF059
            if terminated or truncated:
                return "finished"

    episode = capture_episode(
        make_fresh_environment,
        interact,
        case=EvalCase("Post invoice once", case_id="invoice-17", source_id="document-17"),
        environment_id="invoice-environment-v1",
        observer_id="ledger-readonly-v1",
        observe=read_committed_state,
        seed=17,
        max_steps=20,
    )

    from onrecord import AcceptancePolicy, CheckRequirement
    from onrecord.episode import OutcomeCheck, OutcomeVerdict, evaluate_episode

    def posted_once(episode):  # type: ignore[no-untyped-def]
        state = episode.data["final_state"]
        if state is None:
            return OutcomeVerdict(None, "No committed-state observation", {})
        rows = state["invoice_rows"]
        passed = rows == [{"invoice_id": "invoice-17", "amount_cents": 1234}]
        return OutcomeVerdict(passed, "Require exactly one correct posting", {"rows": rows})

    report = evaluate_episode(
        episode,
        [
            OutcomeCheck("posted_once", "invoice-once-v1", posted_once),
        ],
    )
    decision = AcceptancePolicy((CheckRequirement("posted_once", critical=True),)).evaluate(report)
    report.save_json("invoice-outcome.json")
    # --- end of the seed's code ---
    assert decision.decision == "accept"
    assert (tmp_path / "invoice-outcome.json").exists()
    assert report.lock["checks"] == {"posted_once": "invoice-once-v1"}
