"""Batches for training: a DataLoader that reads a whole batch with one tensor indexing."""

from __future__ import annotations

import signal

from torch.utils.data import DataLoader, Sampler
from torch.utils.data.sampler import BatchSampler

from companion._checks import check_positive_int
from companion.data.dataset import ImageClassificationData


def batch_loader(
    dataset: ImageClassificationData,
    sampler: Sampler[int],
    batch_size: int,
    drop_last: bool = False,
    num_workers: int = 0,
) -> DataLoader:
    """A DataLoader that reads whole batches: ``sampler`` picks the order (a ``RandomSampler``
    with a seeded generator, or a ``DistributedSampler``), ``BatchSampler`` groups it, and each
    group is fetched with one tensor indexing (``dataset[list]``) instead of ``batch_size``
    Python calls. Yields ``(images (B, 3, H, W) uint8, labels (B,) int64)``.
    """
    check_positive_int("batch_size", batch_size)
    return DataLoader(
        dataset,
        batch_size=None,  # each "item" is already a batch
        sampler=BatchSampler(sampler, batch_size, drop_last),
        num_workers=num_workers,
        worker_init_fn=leave_stops_to_the_parent,
    )


def leave_stops_to_the_parent(worker_id: int) -> None:
    """In each worker process: ignore SIGINT and SIGTERM (and unblock them: the trainer forks its
    workers with both blocked, see ``companion.train.stop``). A terminal's Ctrl-C and a
    scheduler's SIGTERM reach every process of the group; the parent stops the run and shuts its
    workers down. A worker ended by the signal first makes the parent print a traceback
    (``BrokenPipeError``, or "DataLoader worker ... is killed by signal"); one whose parent is
    gone ends itself (torch's watchdog)."""
    stops = (signal.SIGINT, signal.SIGTERM)
    for signum in stops:
        signal.signal(signum, signal.SIG_IGN)  # a signal that came meanwhile is discarded
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
