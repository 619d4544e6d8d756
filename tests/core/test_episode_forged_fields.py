"""An episode record whose digest matches but whose fields have the wrong type (written by
another tool, or edited and re-hashed) is refused with a SchemaError naming the field, not
a TypeError from deep inside verification."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from onrecord._canonical import content_digest
from onrecord.episode import EpisodeEvidence
from onrecord.errors import SchemaError

Edit = Callable[[dict[str, Any]], None]


def _set(path: tuple[str, ...], value: Any) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return edit


def _stringify_rewards(data: dict[str, Any]) -> None:
    data["steps"]["reward"] = [str(value) for value in data["steps"]["reward"]]


def _list_as_status(data: dict[str, Any]) -> None:
    data["steps"]["status"][0] = ["ok"]


def _int_flag(data: dict[str, Any]) -> None:
    data["steps"]["terminated"][-1] = 1


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_set(("environment", "max_steps"), "20"), "environment.max_steps"),
        (_set(("environment", "max_steps"), None), "environment.max_steps"),
        (_set(("environment", "seed"), "seven"), "environment.seed"),
        (_set(("environment", "environment_id"), 3), "environment.environment_id"),
        (_stringify_rewards, "steps.reward"),
        (_list_as_status, "steps.status"),
        (_int_flag, "steps.terminated"),
        (_set(("steps", "reward"), None), "steps.reward"),
    ],
)
def test_a_rehashed_record_with_a_wrong_type_names_the_field(
    goal_episode: EpisodeEvidence, edit: Edit, field: str
) -> None:
    data = copy.deepcopy(goal_episode.data)
    data.pop("digest", None)
    edit(data)
    data["digest"] = content_digest(data)
    with pytest.raises(SchemaError, match=field.replace(".", r"\.")):
        EpisodeEvidence.from_dict(data)


def test_the_unedited_record_still_verifies(goal_episode: EpisodeEvidence) -> None:
    assert EpisodeEvidence.from_dict(goal_episode.data).digest == goal_episode.digest
