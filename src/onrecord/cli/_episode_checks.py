"""The checks ``onrecord check NAME... --episode DIR`` can run on one saved episode: every
registered check (the environment kit's, and those an ``--import``ed module registers)
and, for an episode of a domain, the domain's own (``onrecord.domains._episode_checks``).

Before, only registered checks were found, and no domain registers its checks, so
``onrecord check expected_changes --episode DIR`` of a remittance episode said "not
registered", even with ``--import onrecord.domains.remittance``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from onrecord._close_names import closest
from onrecord.domains._episode_checks import DOMAINS, DomainChecks, domains_of
from onrecord.envkit import registered_checks
from onrecord.episode import OutcomeCheck
from onrecord.errors import InputError

__all__ = ["EpisodeChecks", "checks_help", "episode_checks"]


@dataclass(frozen=True)
class EpisodeChecks:
    """The checks available for one episode, by name."""

    registered: Mapping[str, OutcomeCheck]
    domains: Mapping[str, Mapping[str, OutcomeCheck]]
    """Per domain the episode is from (or that was imported), its checks by name."""

    def pick(self, name: str) -> OutcomeCheck:
        """The check called ``name``; bad input when there is none, or two."""
        owners = [domain for domain, checks in self.domains.items() if name in checks]
        found = [self.domains[domain][name] for domain in owners]
        if name in self.registered:
            found.append(self.registered[name])
        if not found:
            raise InputError(self._unknown(name))
        if any(item is not found[0] for item in found[1:]):
            # Either could be meant: grading with the other one would be a silent swap.
            raise InputError(
                f"two checks are named {name!r}: the {' and '.join(owners)} domain's "
                f"(version {found[0].version}) and a registered one (version "
                f"{found[-1].version}); rename the one you registered"
            )
        return found[0]

    def _unknown(self, name: str) -> str:
        listed = f"the registered {_names(self.registered)}"
        for domain, checks in self.domains.items():
            listed += f" and the {domain} domain's {_names(checks)}"
        known = [*self.registered, *(n for checks in self.domains.values() for n in checks)]
        match = closest(name, known)  # a misspelt name: the one meant, before the list
        return (
            f"no check named {name!r} for this episode"
            + (f" (did you mean {match!r}?)" if match else "")
            + f": its checks are {listed}; for a "
            "check of your own, import the module that registers it (--import MODULE)"
        )


def episode_checks(manifest: Mapping[str, Any], modules: Sequence[str]) -> EpisodeChecks:
    """The checks for the episode with this ``manifest``, after importing ``modules``."""
    domains = {domain.name: _by_name(domain) for domain in domains_of(manifest, modules)}
    return EpisodeChecks(registered_checks(), domains)


def checks_help() -> str:
    """The ``--help`` text naming the checks there are, per kind of episode."""
    per_domain = "; ".join(
        f"of a {domain.name} episode (or with --import {domain.module}), its domain's "
        f"{_names(domain.names)}"
        for domain in DOMAINS
    )
    return (
        f"Checks: of any episode, the registered ones ({_names(registered_checks())}, "
        f"and those an --import registers); {per_domain}. An unknown NAME is refused, "
        "listing the checks of that episode."
    )


def _by_name(domain: DomainChecks) -> dict[str, OutcomeCheck]:
    return {item.name: item for item in domain.checks()}


def _names(checks: Iterable[str]) -> str:
    return ", ".join(sorted(checks)) or "none"
