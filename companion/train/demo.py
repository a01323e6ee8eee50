"""The run chapter 5 trains live, and the one a Colab reader trains on a GPU (appendix A)."""

from __future__ import annotations

import os
from dataclasses import replace

import torch

from companion.data.cifar import load_cifar10
from companion.position import Position
from companion.train.config import TrainConfig
from companion.train.loop import TrainResult, train
from companion.train.runtime import native_bf16, resolve_precision

#: What the GPU demo trains instead of CIFAR-10 when CIFAR-10 cannot be had (offline runtime).
FALLBACK_DATASET = "relation"


def demo_config(out: str | os.PathLike[str], cuda: bool | None = None) -> TrainConfig:
    """The run chapter 5 trains live.

    With a CUDA GPU (``cuda=None`` asks ``torch.cuda.is_available()``): the ``cifar`` Swin with
    relative position bias on CIFAR-10 (downloaded, MD5-checked) for 10 epochs, in bf16 or fp16
    as the GPU allows; the book reports no time for it. Without one: the ``tiny-cpu`` Swin with
    an absolute embedding on the ``grid-cell`` task, just long enough to leave the loss plateau.
    """
    if cuda is None:
        cuda = torch.cuda.is_available()
    # Only what differs from TrainConfig's defaults (10 epochs, AdamW at 1e-3 after one epoch of
    # warm-up, label smoothing 0.1, pos="rel"): the defaults are stated once, there.
    if cuda:
        return TrainConfig(
            model_config_name="cifar",
            dataset="cifar10",
            batch_size=128,
            download=True,
            out=str(out),
        )
    return TrainConfig(
        model_config_name="tiny-cpu",
        dataset="grid-cell",
        pos=Position.parse("abs"),
        batch_size=16,
        train_size=2000,
        test_size=500,
        out=str(out),
        device="cpu",
        # One thread, no bars: on a small or shared CPU, OpenMP threads that wait for each other
        # can slow a model this small down many times over; the epoch lines say enough.
        threads=1,
        progress=False,
    )


def with_available_data(cfg: TrainConfig) -> TrainConfig:
    """``cfg``, or, when it asks for CIFAR-10 and CIFAR-10 can be neither found nor downloaded
    (a GPU runtime without internet), the same run on the generated ``FALLBACK_DATASET`` task,
    announced in one line. The generated tasks need no download, so they are always available.
    """
    if cfg.dataset != "cifar10":
        return cfg
    try:
        load_cifar10("test", cfg.data_dir, download=cfg.download)  # fetches the archive if asked
    except RuntimeError as exc:
        reason = " ".join(str(exc).split(";")[0].split(". ")[0].split())  # one line
        print(f"CIFAR-10 is not available ({reason}): training on {FALLBACK_DATASET!r} instead.")
        return replace(cfg, dataset=FALLBACK_DATASET, download=False, label_smoothing=0.0)
    return cfg


def train_demo(out: str | os.PathLike[str], cuda: bool | None = None) -> TrainResult:
    """Train :func:`demo_config`'s run (GPU if there is one, else the short CPU run); on a GPU
    without CIFAR-10, the generated task instead (:func:`with_available_data`)."""
    return train(with_available_data(demo_config(out, cuda)))


def train_on_gpu(out: str | os.PathLike[str]) -> TrainResult | None:
    """The ``cifar`` Swin on CIFAR-10 on this runtime's GPU (:func:`demo_config` with a GPU:
    progress bars, checkpoints in ``out``, the precision ``native_bf16`` picks), after one line
    naming the GPU and the precision and one saying that the book's own results are CPU runs.
    Without a GPU: one line saying so, and nothing else
    (returns ``None``)."""
    if not torch.cuda.is_available():
        print("No GPU in this runtime: nothing trained (Colab: Runtime > Change runtime type).")
        return None
    device = torch.device("cuda")
    major, minor = torch.cuda.get_device_capability(device)
    precision = resolve_precision("auto", "cuda", native_bf16(device))
    print(f"{torch.cuda.get_device_name(device)}, compute capability {major}.{minor}: {precision}")
    print("(This run is yours: the book's own results are CPU runs.)")
    return train(with_available_data(demo_config(out, cuda=True)))
