"""Episode evidence and the checks that grade it."""

from onrecord.episode._checks import NOT_MEASURED, OutcomeCheck, OutcomeVerdict, outcome_check
from onrecord.episode._coverage import ENDINGS
from onrecord.episode._evaluate import (
    episode_trial,
    evaluate_episode,
    evaluate_episodes,
    run_check,
)
from onrecord.episode._evidence import EPISODE_SCHEMA, EpisodeEvidence

__all__ = [
    "ENDINGS",
    "EPISODE_SCHEMA",
    "NOT_MEASURED",
    "EpisodeEvidence",
    "OutcomeCheck",
    "OutcomeVerdict",
    "episode_trial",
    "evaluate_episode",
    "evaluate_episodes",
    "outcome_check",
    "run_check",
]
