"""Runs in parallel processes that stop when told: no orphans, no queue drained first.

``python -m companion.ablation --jobs 2`` and the resolution experiment hand their runs to
:func:`run_all`. The parent alone reacts to Ctrl-C (and to SIGTERM, see
``companion.train.cli.sigterm_as_interrupt``): the workers ignore SIGINT from their first
instruction (:func:`_start_ignoring_ctrl_c`), and on an interrupt or an error the parent
terminates them at once instead of waiting for the queued runs. A worker whose parent dies (even
by SIGKILL, which no handler sees) notices within half a second and ends itself. Whatever
finished is kept by the caller (the ablation's records, written as each run ends), so the message
says how many did and how to go on.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Sequence
from multiprocessing import get_context
from typing import Any, TypeVar

Item = TypeVar("Item")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM while runs were going; the message says what finished."""


def run_all(
    task: Callable[[Item], Any], items: Sequence[Item], jobs: int, resume_hint: str
) -> list[Any]:
    """``[task(item) for item in items]``, ``jobs`` processes at a time (``jobs=1``: in this
    process). ``task`` must be picklable for ``jobs > 1``. An interrupt raises
    :class:`Interrupted` saying how many items finished, then ``resume_hint``."""
    done: list[Any] = []
    if jobs == 1:
        try:
            for item in items:
                done.append(task(item))
        except KeyboardInterrupt:
            raise Interrupted(_stopped(len(done), len(items), resume_hint)) from None
        return done
    pool, mask = _start_ignoring_ctrl_c(jobs)
    pending: list[Any] = []
    try:
        try:
            _release_ctrl_c(mask)  # a Ctrl-C held while the workers started is raised here
            pending = [pool.apply_async(task, (item,)) for item in items]
            return [result.get() for result in pending]
        except KeyboardInterrupt:
            finished = sum(r.ready() and r.successful() for r in pending)
            raise Interrupted(_stopped(finished, len(items), resume_hint)) from None
    finally:
        pool.terminate()  # at once: running runs stop, queued ones never start
        pool.join()


def threads_per_worker(jobs: int, threads: int | None) -> int | None:
    """The torch threads each run gets: ``threads`` if given, else torch's default in this
    process (``jobs=1``) and 1 in each of several. Separate single-threaded processes get more
    images through a small CPU than multi-threaded ones, and torch's default (every core) in each
    of several processes oversubscribes it (on 2 cores, two 2-thread processes moved the
    resolution experiment's test runs 2.7 times slower than two 1-thread ones)."""
    return threads if threads is not None or jobs == 1 else 1


def _start_ignoring_ctrl_c(jobs: int) -> tuple[Any, set[int | signal.Signals] | None]:
    """A spawn pool of ``jobs`` workers that ignore SIGINT from their first instruction, and
    this thread's signal mask from before (``None`` where there is no ``pthread_sigmask``).

    On POSIX, ``SIG_IGN`` survives ``exec`` (a Python handler does not) and Python keeps an
    inherited ``SIG_IGN``, so a Ctrl-C while a worker still imports can neither kill it half-way
    nor raise in it. Meanwhile SIGINT is blocked in this thread: one that arrives stays pending
    (Linux does not discard a blocked signal, even an ignored one) until
    :func:`_release_ctrl_c`. Elsewhere the pool starts as it is."""
    posix = hasattr(signal, "pthread_sigmask")
    previous = signal.getsignal(signal.SIGINT)  # None: set outside Python, left alone
    main = threading.current_thread() is threading.main_thread()  # where signal.signal works
    swap = posix and main and previous is not None
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT}) if posix else None
    try:
        if swap:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            pool = get_context("spawn").Pool(
                jobs, initializer=_worker_start, initargs=(os.getpid(),)
            )
        finally:
            if swap:
                signal.signal(signal.SIGINT, previous)
    except BaseException:
        _release_ctrl_c(mask)
        raise
    return pool, mask


def _release_ctrl_c(mask: set[int | signal.Signals] | None) -> None:
    """Put back the signal mask :func:`_start_ignoring_ctrl_c` found."""
    if mask is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _stopped(finished: int, total: int, hint: str) -> str:
    return f"interrupted: {finished} of {total} runs had finished; {hint}"


def _worker_start(parent: int) -> None:
    """In each worker: leave Ctrl-C to the parent, and end when the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the parent died (an orphan is re-parented): nobody would read our results
