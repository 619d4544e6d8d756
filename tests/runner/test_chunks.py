"""How jobs are cut into chunks for pool workers: every job once, in order, and a case's
jobs kept together so that a case's environment is built by one worker."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given
from hypothesis import strategies as st

from onrecord.runner._executors import _chunks
from onrecord.runner._job import EpisodeJob, RunContext
from onrecord.runner._registry import EnvironmentRef


def _jobs(sizes: list[int]) -> list[EpisodeJob]:
    where = EnvironmentRef("remittance", "provider", "onrecord.runner._remittance:remittance")
    context = RunContext("run", where, "careful", (), {}, 10)
    return [
        EpisodeJob(context, {"case_id": f"case-{case}"}, repeat, repeat)
        for case, count in enumerate(sizes)
        for repeat in range(count)
    ]


@given(st.lists(st.integers(1, 400), max_size=40), st.integers(1, 8))
def test_every_job_once_in_order_and_cases_whole_when_they_fit(
    sizes: list[int], workers: int
) -> None:
    jobs = _jobs(sizes)
    chunks = _chunks(jobs, workers, None)
    assert [job for chunk in chunks for job in chunk] == jobs
    assert all(chunks)
    limit = max(1, min(32, len(jobs) // (workers * 8) or 1), min(256, len(jobs) // (workers * 4)))
    split = {
        left[-1].key[0] for left, right in pairwise(chunks) if left[-1].key[0] == right[0].key[0]
    }
    assert all(count > limit for case, count in enumerate(sizes) if f"case-{case}" in split)


def test_a_benchmark_sized_run_builds_each_task_once() -> None:
    chunks = _chunks(_jobs([40] * 33), 2, None)
    assert len(chunks) == 33
    assert all(len({job.key[0] for job in chunk}) == 1 for chunk in chunks)


def test_an_explicit_chunk_size_is_exact() -> None:
    chunks = _chunks(_jobs([5, 5]), 2, 3)
    assert [len(chunk) for chunk in chunks] == [3, 3, 3, 1]
