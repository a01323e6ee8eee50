"""Stopping a run on SIGINT (Ctrl-C) or SIGTERM (``kill``, a scheduler): at any moment, never lost.

Python's own Ctrl-C raises ``KeyboardInterrupt`` wherever the main thread happens to be. Where
that is inside a fork hook (``logging``'s lock release, which every fork of a DataLoader worker
runs) or a ``__del__``, Python cannot raise it: it prints "Exception ignored in ..." with a
traceback, drops the interrupt, and the run goes on to its end. So, within :func:`stop_signals`:

* the handler first *records* the signal, which :func:`check` raises again (the loop checks it
  every step and once more at the end), so an interrupt swallowed anywhere stops the run at the
  next check;
* then it raises ``KeyboardInterrupt`` at once, except within :func:`deferred` (where the
  DataLoader forks its workers and shuts them down), which raises it on leaving instead;
* a DataLoader worker (forked within :func:`deferred`, by :func:`batches`) starts with both
  signals blocked, and ignores them from its ``worker_init_fn`` on
  (``companion.data.loaders.leave_stops_to_the_parent``, which unblocks them): a terminal's
  Ctrl-C, or a scheduler's SIGTERM, reaches every process of the group, and the parent alone
  answers it and shuts its workers down. (Before, a worker ended by it first made the parent
  print a ``BrokenPipeError`` traceback, or torch's "DataLoader worker ... killed by signal".)
  Any other forked child inherits the handler, which does nothing there.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")
SIGNALS = (signal.SIGINT, signal.SIGTERM)
#: The handlers :func:`stop_signals` replaces: Python's own (SIGINT) and the default (SIGTERM).
_DEFAULTS: dict[signal.Signals, Any] = {
    signal.SIGINT: signal.default_int_handler,
    signal.SIGTERM: signal.SIG_DFL,
}


@dataclass
class _Stop:
    pid: int  # the process that installed the handler (a forked child has another)
    signum: int | None = None  # the first stop signal received
    deferring: int = 0  # depth of deferred() blocks
    held: bool = False  # a signal arrived within deferred() and is still to be raised


_state: _Stop | None = None


def _handle(signum: int, frame: Any) -> None:
    state = _state
    if state is None or os.getpid() != state.pid:  # a forked child: its parent stops it
        return
    first = state.signum is None
    if first:
        state.signum = signum
    if state.deferring:  # raised when the block ends (once: a later one finds a stop under way)
        state.held |= first
        return
    raise KeyboardInterrupt


def _block_in_worker() -> None:
    if _state is not None and _state.deferring:  # a DataLoader worker forked by batches()
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_block_in_worker)


@contextmanager
def stop_signals() -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM stop the process as described above: a
    ``KeyboardInterrupt`` at once, or at the next :func:`check`, and on leaving the block if
    nothing raised it yet. Only in the main thread (where Python runs handlers), where Ctrl-C
    still has Python's default handler (a process that ignores it, such as a worker of
    ``companion.experiments.runs.pool``, is stopped by its parent: SIGTERM keeps its default
    there), and for SIGTERM only where it has its default action; nested blocks share the
    outermost one."""
    global _state
    if _state is not None and _state.pid == os.getpid():
        yield
        return
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    mine = [s for s in SIGNALS if signal.getsignal(s) is _DEFAULTS[s]]
    if signal.SIGINT not in mine:
        yield
        return
    _state = state = _Stop(os.getpid())
    for signum in mine:
        signal.signal(signum, _handle)
    completed = False
    try:
        yield
        completed = True
    finally:
        for signum in mine:
            signal.signal(signum, _DEFAULTS[signum])
        _state = None
        if completed and state.signum is not None:
            raise KeyboardInterrupt  # received, then lost on the way (see the module docstring)


def requested() -> bool:
    """Whether a stop signal has arrived within the current :func:`stop_signals` block."""
    return _state is not None and _state.signum is not None


def check() -> None:
    """Raise ``KeyboardInterrupt`` if a stop signal has arrived (even one raised and lost)."""
    if requested():
        raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """Within the block a stop signal is only recorded; it is raised when the block ends. For
    code where Python would lose an exception (forks, which run fork hooks; ``__del__``)."""
    state = _state
    if state is None:
        yield
        return
    state.deferring += 1
    try:
        yield
    finally:
        state.deferring -= 1
        if not state.deferring and state.held:
            state.held = False
            raise KeyboardInterrupt


def batches(loader: Iterable[T]) -> Iterator[T]:
    """Iterate ``loader`` (a DataLoader) checking for a stop before every batch, with its worker
    processes started and shut down within :func:`deferred`. However the iteration ends, the
    workers are shut down then, not whenever a traceback that holds the iterator is dropped
    (workers forked meanwhile inherit their pipes, and each join would then wait 5 s)."""
    it: Iterator[T] | None = None
    try:
        with deferred():
            it = iter(loader)
        while True:
            check()
            try:
                item = next(it)
            except StopIteration:
                return
            yield item
    finally:
        with deferred():
            it = None  # the iterator's last reference: its workers are joined here
