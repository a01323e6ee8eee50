"""How many torch threads each worker of ``companion.experiments.runs.pool`` gets."""

import pytest

from companion.experiments.runs.pool import threads_per_worker


@pytest.mark.parametrize("jobs", [2, 3, 16])
def test_several_workers_get_one_thread_each_by_default(jobs):
    assert threads_per_worker(jobs, None) == 1


def test_one_process_keeps_torchs_default():
    assert threads_per_worker(1, None) is None


@pytest.mark.parametrize(("jobs", "threads"), [(1, 2), (2, 2), (4, 1)])
def test_threads_asked_for_are_kept(jobs, threads):
    assert threads_per_worker(jobs, threads) == threads
