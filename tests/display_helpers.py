"""Shared by the display tests: real FrozenLake and CartPole reports, and a parser that
reads the tables of an HTML fragment as a notebook would show them."""

from __future__ import annotations

from html.parser import HTMLParser

from onrecord.episode import EpisodeEvidence, OutcomeCheck, OutcomeVerdict, evaluate_episodes
from onrecord.examples import FROZENLAKE_AGENTS, frozenlake_task, run_gym_task
from onrecord.report import EvaluationReport

HOSTILE = "<img src=x onerror=\"document.body.dataset.pwned='yes'\">"
"""A check name and reason written to run script when inserted unescaped."""


def lake_episodes(agents: tuple[str, ...]) -> list[EpisodeEvidence]:
    """One FrozenLake episode per agent (seeds 1, 2, …): repeats of one case."""
    task = frozenlake_task()
    return [
        run_gym_task(task, FROZENLAKE_AGENTS[name](), seed=seed)
        for seed, name in enumerate(agents, start=1)
    ]


def lake_report(agents: tuple[str, ...]) -> EvaluationReport:
    return evaluate_episodes(lake_episodes(agents), list(frozenlake_task().checks))


def hostile_report() -> EvaluationReport:
    """A report whose check name, version and reason are markup."""

    def verdict(episode: EpisodeEvidence) -> OutcomeVerdict:
        return OutcomeVerdict(False, HOSTILE + "[bold]not bold[/]", {})

    check = OutcomeCheck(HOSTILE, "v1<script>", verdict)
    return evaluate_episodes(lake_episodes(("walks_to_goal",)), [check])


class Tables(HTMLParser):
    """Every start tag, and each table row's cell texts with the row's attributes."""

    def __init__(self, fragment: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.rows: list[tuple[dict[str, str | None], list[str]]] = []
        self.cell_data: list[dict[str, str | None]] = []
        self.items: list[str] = []
        self._cell: list[str] | None = None
        self._item: list[str] | None = None
        self.feed(fragment)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "tr":
            self.rows.append((dict(attrs), []))
        elif tag in ("td", "th"):
            self._cell = []
            self.cell_data.append(dict(attrs))
        elif tag == "li":
            self._item = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1][1].append("".join(self._cell))
            self._cell = None
        elif tag == "li" and self._item is not None:
            self.items.append("".join(self._item))
            self._item = None

    def handle_data(self, data: str) -> None:
        for target in (self._cell, self._item):
            if target is not None:
                target.append(data)

    def row(self, attribute: str, value: str) -> list[str]:
        """The cells of the first row whose ``attribute`` is ``value``."""
        found = [cells for attrs, cells in self.rows if attrs.get(attribute) == value]
        assert found, f"no row with {attribute}={value!r}"
        return found[0]
