"""Which domain a saved tool-world episode is from, and that domain's named checks.

A domain's checks are not in the environment kit's registry (``envkit.register_check``):
their names are plain words (``expected_changes``, ``allocations_sum_to_line``) that a
user's own ``@check`` may take too, and a registry shared by every episode would refuse
one of the two. They belong to the domain's episodes instead, and an episode says which
domain it is from: its snapshot's name starts with the domain's environment id
(``onrecord.domains.remittance/v3/full-01``), pinned by the manifest's digest.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from onrecord.episode import OutcomeCheck

__all__ = ["DOMAINS", "DomainChecks", "domains_of"]


@dataclass(frozen=True)
class DomainChecks:
    """A domain whose saved episodes its own named checks grade."""

    name: str
    """What the domain is called (``onrecord run NAME``)."""
    module: str
    """The module that defines the checks, as ``--import`` names it."""
    attribute: str
    """The module's sequence of ``OutcomeCheck``s: every check the domain grades with."""
    snapshot_prefix: str
    """How the snapshot name of each of its episodes begins."""
    names: tuple[str, ...]
    """Its checks' names, for ``onrecord check --help``: listed from ``checks()`` the help
    imported the whole domain (~20 ms, more than the help's own parse). A test fails when
    they drift from the checks'."""

    def checks(self) -> tuple[OutcomeCheck, ...]:
        """The domain's checks (imported on first use: the CLI loads only what it runs)."""
        return tuple(getattr(importlib.import_module(self.module), self.attribute))

    def holds(self, manifest: Mapping[str, Any]) -> bool:
        """Whether an episode with this manifest is one of the domain's."""
        snapshot = manifest.get("snapshot")
        name = snapshot.get("name") if isinstance(snapshot, Mapping) else None
        return isinstance(name, str) and name.startswith(self.snapshot_prefix)

    def imported_by(self, modules: Iterable[str]) -> bool:
        """Whether one of ``modules`` is the domain's package or a module in it."""
        return any(m == self.module or m.startswith(f"{self.module}.") for m in modules)


DOMAINS = (
    DomainChecks(
        "remittance",
        "onrecord.domains.remittance",
        "REMITTANCE_CHECKS",
        # remittance's ENVIRONMENT_ID without its version: an episode of an earlier
        # version is graded by the current checks, as `onrecord regrade` grades it.
        "onrecord.domains.remittance/",
        (
            "allocations_sum_to_line",
            "answer_reports_done",
            "balances_reconcile",
            "expected_changes",
            "followup_before_deadline",
            "no_duplicate_allocation",
            "no_post_over_threshold",
            "only_expected_tables_changed",
            "read_notes_before_acting",
        ),
    ),
)
"""The domains built on the environment kit (the ledger domain's episodes are not
saved tool-world episodes)."""


def domains_of(manifest: Mapping[str, Any], modules: Iterable[str] = ()) -> list[DomainChecks]:
    """The domains an episode is from, by its manifest, or asked for by importing one of
    ``modules`` (an episode of a world built from the domain's tools and schema under a
    snapshot name of one's own)."""
    modules = tuple(modules)
    return [d for d in DOMAINS if d.holds(manifest) or d.imported_by(modules)]
