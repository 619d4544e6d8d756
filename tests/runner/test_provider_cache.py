"""``ProviderCache``: which providers a process keeps, releases and closes. Providers here
record what is done to them (``test_open_files`` runs the real thing), but for the last
test: real runs, where releasing another run's provider is not charged to an episode."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from onrecord.runner import EnvironmentProvider, plan_run, start_run
from onrecord.runner._provider_cache import ProviderCache, Resolved


class Recorded(EnvironmentProvider):
    def __init__(self, key: str, log: list[tuple[str, str]]) -> None:
        self.key = key
        self.log = log

    def release(self) -> None:
        self.log.append(("release", self.key))

    def close(self) -> None:
        self.log.append(("close", self.key))


@contextlib.contextmanager
def episode(cache: ProviderCache, key: str, build: Any) -> Iterator[Resolved]:
    """What ``run_job`` does around an episode (the housekeeping outside its limit)."""
    with cache.tidied(key), cache.using(key, build) as entry:
        yield entry


def _builder(key: str, log: list[tuple[str, str]]) -> Any:
    def build() -> Resolved:
        log.append(("build", key))
        return (Recorded(key, log), None, [])

    return build


def test_a_provider_is_built_once_and_the_others_released_once_when_it_is_used() -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(4)
    for key in ["a", "a", "b", "b", "a"]:
        with episode(cache, key, _builder(key, log)) as (provider, _, _):
            assert provider.key == key  # type: ignore[attr-defined]
    assert log == [
        ("build", "a"),
        ("release", "a"),  # once, not before each of b's episodes
        ("build", "b"),
        ("release", "b"),
    ]


def test_a_provider_in_use_is_neither_released_nor_closed() -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(1)
    with episode(cache, "a", _builder("a", log)):
        with episode(cache, "b", _builder("b", log)):  # another thread's run, say
            assert ("release", "a") not in log
            assert ("close", "a") not in log
            assert len(cache) == 2
        assert ("close", "b") not in log  # the most recently used is kept
    # a's episode ended: one provider is kept, the most recently used (b).
    assert log[-1] == ("close", "a")
    assert len(cache) == 1


def test_forget_closes_and_the_next_use_builds_afresh() -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(4)
    with episode(cache, "a", _builder("a", log)):
        pass
    cache.forget("a")
    cache.forget("a")  # nothing kept: nothing to do
    with episode(cache, "a", _builder("a", log)):
        pass
    assert log == [("build", "a"), ("close", "a"), ("build", "a")]


def test_a_provider_that_fails_to_release_or_close_is_dropped_anyway() -> None:
    class Stuck(Recorded):
        def release(self) -> None:
            raise RuntimeError("a world left mid-call")

        def close(self) -> None:
            raise RuntimeError("a world left mid-call")

    cache = ProviderCache(1)
    with episode(cache, "a", lambda: (Stuck("a", []), None, [])):
        pass
    with episode(cache, "b", lambda: (Stuck("b", []), None, [])):
        pass
    assert len(cache) == 1


@given(st.lists(st.sampled_from("abcdef"), max_size=40), st.integers(1, 4))
def test_at_most_capacity_are_kept_each_closed_once_and_the_last_used_kept(
    keys: list[str], capacity: int
) -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(capacity)
    for key in keys:
        with episode(cache, key, _builder(key, log)):
            assert len(cache) <= capacity + 1
        assert len(cache) <= capacity
    built = [key for event, key in log if event == "build"]
    closed = [key for event, key in log if event == "close"]
    assert len(built) - len(closed) == len(cache)
    if keys:  # the last used is kept: using it again builds nothing
        before = len(log)
        with episode(cache, keys[-1], _builder(keys[-1], log)):
            pass
        assert ("build", keys[-1]) not in log[before:]
    for key in set(built):  # built again only after being closed
        events = [event for event, k in log if k == key and event != "release"]
        assert all(events[i] != events[i + 1] for i in range(len(events) - 1)), events


RELEASING = 2.0
"""Seconds ``slow_to_release`` takes to release (twice the limit below)."""
RELEASED: list[EnvironmentProvider] = []


def slow_to_release() -> EnvironmentProvider:
    """``module:factory`` environment: FrozenLake, whose release takes ``RELEASING`` s
    (as closing a big world's files may)."""
    from onrecord.runner._registry import build_provider, resolve_environment

    provider = build_provider(resolve_environment("frozenlake"))

    def release() -> None:
        time.sleep(RELEASING)
        RELEASED.append(provider)

    provider.release = release  # type: ignore[method-assign]
    return provider


def test_releasing_the_last_runs_provider_is_not_charged_to_the_next_runs_episode(
    tmp_path: Path,
) -> None:
    """Before: the next episode's time limit covered releasing the providers of earlier
    runs, so a quick episode timed out while another run's world closed."""
    first = plan_run(f"{__name__}:slow_to_release", "walks_to_goal", seeds=[0])
    assert start_run(tmp_path / "first", first).complete
    RELEASED.clear()
    second = plan_run("frozenlake", "walks_to_goal", seeds=[0, 1])
    result = start_run(tmp_path / "second", second, episode_timeout=RELEASING / 2)
    assert not result.errors, result.errors
    assert result.complete
    assert len(RELEASED) == 1  # released (once), outside the limit
