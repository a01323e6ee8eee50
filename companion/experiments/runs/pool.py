"""Runs in parallel processes that stop when told: no orphans, no queue drained first.

``python -m companion.commands.ablation --jobs 2`` and the resolution experiment hand their runs to
:func:`run_all`. The parent alone reacts to Ctrl-C (and to SIGTERM, see
``companion.train.stop``): the workers ignore SIGINT from their first
instruction (:func:`_launcher`), the parent holds a Ctrl-C that comes while the pool starts until
it can stop the pool (:func:`_held`), and on an interrupt or an error it terminates the workers at
once instead of waiting for the queued runs. A worker whose parent dies (even
by SIGKILL, which no handler sees) notices within half a second and ends itself. A worker that
dies (SIGKILL, SIGTERM, a crash) is noticed within about a second: ``multiprocessing.Pool`` would
quietly replace it and wait for ever for its run, so the parent raises :class:`WorkerDied`,
naming the run, and stops the others. Whatever finished is kept by the caller (the ablation's
records, written as each run ends), so each message says how many did and how to go on.
"""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from multiprocessing import active_children, get_context, spawn
from multiprocessing.process import BaseProcess
from multiprocessing.queues import SimpleQueue
from typing import Any, TypeVar

Item = TypeVar("Item")

#: How long the parent waits for a result before it looks for dead workers again.
_POLL_S = 0.2

#: ``(pid, index)``: a worker that starts run ``index``, or that is ready (``None``).
Started = SimpleQueue[tuple[int, int | None]]


class Interrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM while runs were going; the message says what finished."""


class WorkerDied(ChildProcessError):  # noqa: N818 (it says what happened, as Interrupted does)
    """A worker process ended while runs were going; the message names its run and how it
    ended, says what finished and how to go on. (An ``OSError``, so that the commands report it
    as the one line ``companion.train.cli.run_reporting_errors`` prints, with status 1.)"""


def run_all(
    task: Callable[[Item], Any],
    items: Sequence[Item],
    jobs: int,
    resume_hint: str,
    *,
    describe: Callable[[Item], str] = str,
) -> list[Any]:
    """``[task(item) for item in items]``, ``jobs`` processes at a time (``jobs=1``: in this
    process). ``task`` must be picklable for ``jobs > 1``. An interrupt raises
    :class:`Interrupted` saying how many items finished, then ``resume_hint``; a worker that dies
    raises :class:`WorkerDied`, which also names its item (``describe(item)``)."""
    done: list[Any] = []
    if jobs == 1:
        try:
            for item in items:
                done.append(task(item))
        except KeyboardInterrupt:
            raise Interrupted(_stopped(len(done), len(items), resume_hint)) from None
        return done
    pool: Any = None
    pending: list[Any] = []
    started: Started | None = None
    workers: _Workers | None = None
    try:
        try:
            with _held(signal.SIGINT, signal.SIGTERM):  # raised once the pool can be stopped
                started = get_context("spawn").SimpleQueue()
                workers = _Workers(started)
                pool = _start_pool(jobs, started)
            pending = [
                pool.apply_async(_announced, (task, index, item))
                for index, item in enumerate(items)
            ]
            for result in pending:  # in order, as before: a failed run's error is raised here
                while not result.ready():
                    result.wait(_POLL_S)  # short waits, so that a dead worker is seen
                    if not result.ready():
                        workers.check(pending, items, describe, resume_hint)
                done.append(result.get())
            return done
        except KeyboardInterrupt:
            raise Interrupted(_stopped(_finished(pending), len(items), resume_hint)) from None
    finally:
        if pool is not None:
            if workers is not None and workers.gone():
                _free_queues(pool)
            pool.terminate()  # at once: running runs stop, queued ones never start
            pool.join()
        if started is not None:
            started.close()


def threads_per_worker(jobs: int, threads: int | None) -> int | None:
    """The torch threads each run gets: ``threads`` if given, else torch's default in this
    process (``jobs=1``) and 1 in each of several. Separate single-threaded processes get more
    images through a small CPU than multi-threaded ones, and torch's default (every core) in each
    of several processes oversubscribes it (on 2 cores, two 2-thread processes moved the
    resolution experiment's test runs 2.7 times slower than two 1-thread ones)."""
    return threads if threads is not None or jobs == 1 else 1


@contextmanager
def _held(*signals: signal.Signals) -> Iterator[None]:
    """Within the block, ``signals`` whose handler is Python's are held, not acted on: the first
    one is handed to its handler (Ctrl-C: ``KeyboardInterrupt``) when the block ends. So a Ctrl-C
    while the pool starts can neither stop its start half-way (leaving workers that nobody stops)
    nor be lost. Ignored or default signals, and other threads than the main one (where Python
    runs handlers), are left as they are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for signum in signals:
        handler = signal.getsignal(signum)
        if callable(handler):
            previous[signum] = handler
            signal.signal(signum, lambda number, frame: caught.append(number))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            previous[signal.Signals(caught[0])](caught[0], None)


def _start_pool(jobs: int, started: Started) -> Any:
    """A spawn pool of ``jobs`` workers that say on ``started`` which run they start, launched
    (on POSIX) with Ctrl-C ignored from their first instruction (:func:`_launcher`)."""
    launcher = _launcher()
    previous = spawn.get_executable()
    if launcher is not None:
        spawn.set_executable(launcher)
    try:
        return get_context("spawn").Pool(
            jobs, initializer=_worker_start, initargs=(os.getpid(), started)
        )
    finally:
        spawn.set_executable(previous)


_LAUNCHER: list[str] = []  # the launcher this process wrote, once


def _launcher() -> str | None:
    """A launcher that starts this Python with SIGINT ignored (``trap '' INT``), or ``None``
    where there is no POSIX shell. An ignored signal stays ignored across ``exec`` and Python
    keeps an inherited ``SIG_IGN``, so a terminal's Ctrl-C (sent to the whole process group)
    cannot stop a worker half-way through its start and print its traceback; the parent alone
    answers it. (The parent never ignores SIGINT itself for this, even for a moment: a signal
    ignored then is lost if another of its threads, such as one torch starts, takes it.)"""
    if os.name != "posix" or not os.path.exists("/bin/sh"):
        return None
    if not _LAUNCHER:
        folder = tempfile.mkdtemp(prefix="companion-pool-")
        atexit.register(shutil.rmtree, folder, True)
        path = os.path.join(folder, "python")
        with open(path, "w") as f:
            f.write(f"#!/bin/sh\ntrap '' INT\nexec {shlex.quote(sys.executable)} \"$@\"\n")
        os.chmod(path, 0o700)
        _LAUNCHER.append(path)
    return _LAUNCHER[0]


def _finished(pending: Sequence[Any]) -> int:
    return sum(r.ready() and r.successful() for r in pending)


def _stopped(finished: int, total: int, hint: str) -> str:
    return f"interrupted: {finished} of {total} runs had finished; {hint}"


class _Workers:
    """The parent's view of the pool's workers: the run each one started last (from their
    messages on ``started``), and which are gone. A pid whose process is gone while its run has
    no result died running it (``Pool`` would wait for that result for ever)."""

    def __init__(self, started: Started) -> None:
        self.started = started
        self.runs: dict[int, int | None] = {}  # pid -> its latest run (None: none yet)
        self.seen: dict[int, BaseProcess] = {}  # pid -> process, kept for its exit code

    def check(
        self,
        pending: Sequence[Any],
        items: Sequence[Item],
        describe: Callable[[Item], str],
        hint: str,
    ) -> None:
        """Raise :class:`WorkerDied` if a worker is gone."""
        self._read()
        gone = self.gone()
        if not gone:
            return
        self._read()  # what a worker wrote before it died is in the pipe by now
        lost = {p: i for p in gone if (i := self.runs[p]) is not None and not pending[i].ready()}
        pid = next(iter(lost), gone[0])
        how = _how(self.seen[pid].exitcode if pid in self.seen else None)
        finished, total = _finished(pending), len(items)
        if pid in lost:
            what = f"the worker running {describe(items[lost[pid]])} died ({how}, pid {pid})"
            counts = f"{finished} of {total} runs had finished"
        else:  # killed before its start message, or while it waited for a run
            what = f"a worker process died before reporting its run ({how}, pid {pid})"
            counts = f"{finished} of {total} runs had finished, {total - finished} had not"
        raise WorkerDied(f"{what}; {counts}; {hint}")

    def gone(self) -> list[int]:
        """The workers that said they started and whose process has ended."""
        alive = active_children()  # also reaps children that ended
        self.seen.update((p.pid, p) for p in alive if p.pid is not None)
        live = {p.pid for p in alive}
        return [pid for pid in self.runs if pid not in live]

    def _read(self) -> None:
        while not self.started.empty():  # each message is one atomic write: never half there
            pid, index = self.started.get()
            self.runs[pid] = index  # a worker's latest message is its current run


def _how(exitcode: int | None) -> str:
    """How a process ended, from its ``exitcode``."""
    if exitcode is None:
        return "exit code unknown"
    if exitcode >= 0:
        return f"exit code {exitcode}"
    try:
        return f"killed by {signal.Signals(-exitcode).name}"
    except ValueError:
        return f"killed by signal {-exitcode}"


def _free_queues(pool: Any) -> None:
    """Let ``pool.terminate()`` through after a worker died. A worker waiting for a run holds
    the task queue's read lock (one killed while it sent a result, the result queue's write
    lock), and ``terminate()`` takes both: a dead holder would make it wait for ever. So stop
    the workers, then no live one holds a lock, and free both. ``Pool`` has no public way: this
    uses its attributes (CPython 3.8 to 3.13), and leaves it be where they are missing."""
    inqueue, outqueue = getattr(pool, "_inqueue", None), getattr(pool, "_outqueue", None)
    workers = list(getattr(pool, "_pool", None) or [])
    locks: list[Any] = [getattr(inqueue, "_rlock", None), getattr(outqueue, "_wlock", None)]
    if not workers or None in locks:
        return
    for worker in workers:
        worker.kill()
    for worker in workers:
        worker.join()
    for lock in locks:
        lock.acquire(False)  # held by a dead worker, or else now by us: free either way
        lock.release()


_started: Started | None = None  # in a worker: where it says which run it starts


def _worker_start(parent: int, started: Started) -> None:
    """In each worker: leave Ctrl-C to the parent, end when the parent is gone, and say that
    this process is one of the pool's (so the parent watches it)."""
    global _started
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    _started = started
    started.put((os.getpid(), None))


def _announced(task: Callable[[Item], Any], index: int, item: Item) -> Any:
    """In a worker: say that this process starts run ``index``, then run it."""
    if _started is not None:
        _started.put((os.getpid(), index))
    return task(item)


def _watch_parent(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(1)  # the parent died (an orphan is re-parented): nobody would read our results
