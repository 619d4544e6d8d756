"""``ProviderCache``: which providers a process keeps, releases and closes. Providers here
record what is done to them; ``test_open_files`` runs the real thing."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from onrecord.runner import EnvironmentProvider
from onrecord.runner._provider_cache import ProviderCache, Resolved


class Recorded(EnvironmentProvider):
    def __init__(self, key: str, log: list[tuple[str, str]]) -> None:
        self.key = key
        self.log = log

    def release(self) -> None:
        self.log.append(("release", self.key))

    def close(self) -> None:
        self.log.append(("close", self.key))


def _builder(key: str, log: list[tuple[str, str]]) -> Any:
    def build() -> Resolved:
        log.append(("build", key))
        return (Recorded(key, log), None, [])

    return build


def test_a_provider_is_built_once_and_the_others_released_once_when_it_is_used() -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(4)
    for key in ["a", "a", "b", "b", "a"]:
        with cache.using(key, _builder(key, log)) as (provider, _, _):
            assert provider.key == key  # type: ignore[attr-defined]
    assert log == [
        ("build", "a"),
        ("build", "b"),
        ("release", "a"),  # once, not before each of b's episodes
        ("release", "b"),
    ]


def test_a_provider_in_use_is_neither_released_nor_closed() -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(1)
    with cache.using("a", _builder("a", log)):
        with cache.using("b", _builder("b", log)):  # another thread's run, say
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
    with cache.using("a", _builder("a", log)):
        pass
    cache.forget("a")
    cache.forget("a")  # nothing kept: nothing to do
    with cache.using("a", _builder("a", log)):
        pass
    assert log == [("build", "a"), ("close", "a"), ("build", "a")]


def test_a_provider_that_fails_to_release_or_close_is_dropped_anyway() -> None:
    class Stuck(Recorded):
        def release(self) -> None:
            raise RuntimeError("a world left mid-call")

        def close(self) -> None:
            raise RuntimeError("a world left mid-call")

    cache = ProviderCache(1)
    with cache.using("a", lambda: (Stuck("a", []), None, [])):
        pass
    with cache.using("b", lambda: (Stuck("b", []), None, [])):
        pass
    assert len(cache) == 1


@given(st.lists(st.sampled_from("abcdef"), max_size=40), st.integers(1, 4))
def test_at_most_capacity_are_kept_each_closed_once_and_the_last_used_kept(
    keys: list[str], capacity: int
) -> None:
    log: list[tuple[str, str]] = []
    cache = ProviderCache(capacity)
    for key in keys:
        with cache.using(key, _builder(key, log)):
            assert len(cache) <= capacity + 1
        assert len(cache) <= capacity
    built = [key for event, key in log if event == "build"]
    closed = [key for event, key in log if event == "close"]
    assert len(built) - len(closed) == len(cache)
    if keys:  # the last used is kept: using it again builds nothing
        before = len(log)
        with cache.using(keys[-1], _builder(keys[-1], log)):
            pass
        assert ("build", keys[-1]) not in log[before:]
    for key in set(built):  # built again only after being closed
        events = [event for event, k in log if k == key and event != "release"]
        assert all(events[i] != events[i + 1] for i in range(len(events) - 1)), events
