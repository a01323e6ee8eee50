"""The run chapter 5 trains live."""

from __future__ import annotations

import os

import torch

from companion.train.config import TrainConfig
from companion.train.loop import TrainResult, train


def demo_config(out: str | os.PathLike[str], cuda: bool | None = None) -> TrainConfig:
    """The run chapter 5 trains live.

    With a CUDA GPU (``cuda=None`` asks ``torch.cuda.is_available()``; on Colab pick a T4): the
    ``cifar`` Swin with relative position bias on CIFAR-10 (downloaded, MD5-checked) for 10
    epochs in float16 on a T4 (several minutes; not timed for this edition of the book).
    Without one: a CPU run of well under a minute,
    the ``tiny-cpu`` Swin with an absolute embedding on the ``grid-cell`` task, just long enough
    to leave the loss plateau.
    """
    if cuda is None:
        cuda = torch.cuda.is_available()
    if cuda:
        return TrainConfig(
            config="cifar",
            dataset="cifar10",
            pos="rel",
            epochs=10,
            batch_size=128,
            lr=1e-3,
            warmup_epochs=1.0,
            label_smoothing=0.1,
            download=True,
            out=str(out),
        )
    return TrainConfig(
        config="tiny-cpu",
        dataset="grid-cell",
        pos="abs",
        epochs=10,
        batch_size=16,
        lr=1e-3,
        warmup_epochs=1.0,
        train_size=2000,
        test_size=500,
        out=str(out),
        device="cpu",
        # One thread, no bars: on a small or shared CPU, OpenMP threads that wait for each other
        # can slow a model this small down many times over; the epoch lines say enough.
        threads=1,
        progress=False,
    )


def train_demo(out: str | os.PathLike[str]) -> TrainResult:
    """Train :func:`demo_config`'s run (GPU if there is one, else the short CPU run)."""
    return train(demo_config(out))
