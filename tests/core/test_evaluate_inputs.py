"""evaluate_episodes takes the checks as any iterable (a generator used to be used up by
validation, leaving a report graded with no check) and names a lone episode."""

from __future__ import annotations

import pytest

from onrecord.episode import EpisodeEvidence, episode_trial, evaluate_episodes
from onrecord.errors import InputError
from onrecord.examples import frozenlake_task


def test_checks_given_as_a_generator_are_all_applied(goal_episode: EpisodeEvidence) -> None:
    checks = frozenlake_task().checks
    report = evaluate_episodes([goal_episode], (check for check in checks))
    assert report.check_names == tuple(sorted(check.name for check in checks))
    assert report.summary().outcomes == {"pass": 1, "fail": 0, "incomplete": 0}


def test_a_lone_episode_is_refused_naming_evaluate_episode(goal_episode: EpisodeEvidence) -> None:
    with pytest.raises(InputError, match=r"evaluate_episode\(episode, checks\)"):
        evaluate_episodes(goal_episode, list(frozenlake_task().checks))  # type: ignore[arg-type]


def test_episode_trial_refuses_what_is_not_a_check(goal_episode: EpisodeEvidence) -> None:
    with pytest.raises(InputError, match="checks must be a list of OutcomeCheck"):
        episode_trial(goal_episode, [print])  # type: ignore[list-item]
