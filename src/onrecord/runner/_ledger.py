"""``onrecord run ledger``: the invoice-posting ledger as a run environment.

Each episode gets a fresh ledger file (``create_ledger`` with the episode's seed) that is
deleted once the episode is captured; the read-only observer's view is the evidence.
Config: ``handler`` (``idempotent``, the default, or ``unsafe``). Reference agents are the
single-attempt variants of the ledger experiment (``correct``, ``missing_write``,
``safe_retry``, ``duplicate_write``, ``forbidden_then_restored``).
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from onrecord._scratch import ScratchDirectory
from onrecord.case import EvalCase
from onrecord.domains.ledger import (
    LEDGER_CHECKS,
    VARIANTS,
    LedgerEnv,
    LedgerObserver,
    create_ledger,
    full_policy,
    scripted_interact,
)
from onrecord.domains.ledger._experiment import ENVIRONMENT_ID, OBSERVER_ID
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError
from onrecord.integrations.gymnasium import capture_episode
from onrecord.policy import AcceptancePolicy
from onrecord.runner._gym import GymnasiumProvider, Interact, as_interact
from onrecord.runner._provider import (
    AgentContext,
    AgentFactory,
    EpisodeOutput,
    EpisodeSpec,
    agent_factory,
)
from onrecord.runner._sealed import CapturedEvidence

__all__ = ["LedgerProvider", "ledger"]

TASK = EvalCase(
    {"task": "Post invoice once for 12.34 USD"},
    case_id="ledger/post-invoice",
    source_id="onrecord.domains.ledger",
)


def _scripted(actions: Sequence[int]) -> AgentFactory:
    def factory(context: AgentContext) -> Interact:
        return scripted_interact(actions)

    return agent_factory(factory)


class LedgerProvider(GymnasiumProvider):
    """Ledger episodes, each on its own new database file."""

    default_max_steps = 20

    def __init__(self, *, handler: str = "idempotent") -> None:
        if handler not in ("idempotent", "unsafe"):
            raise InputError(f"ledger handler must be 'idempotent' or 'unsafe', got {handler!r}")
        agents = {v.name: _scripted(v.attempts[0]) for v in VARIANTS if len(v.attempts) == 1}
        super().__init__(
            _never_called,  # episodes build their own ledger in run_episode
            environment_id=f"{ENVIRONMENT_ID}/{handler}",
            tasks=(TASK,),
            checks=LEDGER_CHECKS,
            observer_id=OBSERVER_ID,
            agents=agents,
        )
        self.handler = handler
        self._workdir = ScratchDirectory("ledger")

    def default_policy(self, checks: Sequence[OutcomeCheck]) -> AcceptancePolicy:
        if tuple(checks) == tuple(LEDGER_CHECKS):
            return full_policy()
        return super().default_policy(checks)

    def reference_agents(self) -> Mapping[str, AgentFactory]:
        return self._agents

    def run_episode(self, spec: EpisodeSpec, agent: Any) -> EpisodeOutput:
        path = Path(self._workdir.name) / f"{uuid.uuid4().hex}.sqlite"
        create_ledger(path, seed=spec.seed)
        try:
            evidence = capture_episode(
                lambda: LedgerEnv(path, handler=self.handler),  # type: ignore[arg-type]
                as_interact(agent, spec),
                case=spec.case,
                environment_id=self.environment_id,
                observer_id=self.observer_id,
                observe=LedgerObserver(path),
                seed=spec.seed,
                max_steps=spec.max_steps,
                options=spec.options,
            )
        finally:
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return EpisodeOutput(CapturedEvidence(evidence), evidence)

    def close(self) -> None:
        self._workdir.cleanup()


def ledger(**config: Any) -> LedgerProvider:
    """Factory registered as ``ledger``."""
    return LedgerProvider(**config)


def _never_called() -> Any:
    raise AssertionError("the ledger provider builds its environment per episode")
