"""Runs in parallel processes that stop when told: no orphans, no queue drained first.

``python -m companion.ablation --jobs 2`` and the resolution experiment hand their runs to
:func:`run_all`. The parent alone reacts to Ctrl-C (and to SIGTERM, see
``companion.train.cli.sigterm_as_interrupt``): the workers ignore SIGINT, and on an interrupt or
an error the parent terminates them at once instead of waiting for the queued runs. A worker
whose parent dies (even by SIGKILL, which no handler sees) notices within half a second and
ends itself. Whatever finished is kept by the caller (the ablation's records, written as each run
ends), so the message says how many did and how to go on.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
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
    pool, pending = None, []
    try:
        with _ctrl_c_held():  # a Ctrl-C now reaches the parent once the workers have started
            pool = get_context("spawn").Pool(jobs, _worker_start, (os.getpid(),))
        pending = [pool.apply_async(task, (item,)) for item in items]
        return [result.get() for result in pending]
    except KeyboardInterrupt:
        finished = sum(r.ready() and r.successful() for r in pending)
        raise Interrupted(_stopped(finished, len(items), resume_hint)) from None
    finally:
        if pool is not None:
            pool.terminate()  # at once: running runs stop, queued ones never start
            pool.join()


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Hold SIGINT back (blocked, not lost) in this thread, and in every process and thread it
    starts meanwhile: a worker started now begins life with Ctrl-C blocked, so one pressed
    while it is still importing cannot kill it half-way (its traceback, a replacement worker);
    :func:`_worker_start` then ignores it for good. Where signals cannot be blocked (Windows),
    nothing is held."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    before = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)  # a held Ctrl-C arrives here


def _stopped(finished: int, total: int, hint: str) -> str:
    return f"interrupted: {finished} of {total} runs had finished; {hint}"


def _worker_start(parent: int) -> None:
    """In each worker: leave Ctrl-C to the parent, and end when the parent is gone."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if hasattr(signal, "pthread_sigmask"):  # born blocked (see _ctrl_c_held); now ignored
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the parent died (an orphan is re-parented): nobody would read our results
