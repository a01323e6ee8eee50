"""Solutions to the exercises of the appendix, "The training loop's engineering"."""

from __future__ import annotations

import math
import os
from pathlib import Path

import torch

from companion._checks import check_positive_int
from companion.train.checkpoint import load_checkpoint

#: The values each exercise's solution prints as its answer, ``{exercise: (value, ...)}``: a
#: number (matched by value) or a literal. Nothing a reader meets before the exercise prints or
#: states them (tests/test_exercise_answers.py); an empty tuple is a question whose answer is no
#: value a reader could meet before (a yes or no, a picture, a quantity the exercise names).
ANSWERS: dict[int, tuple[str, ...]] = {
    1: ("0.000004",),  # the rate at step 0
    2: ("1e-13",),  # the first power of ten that vanishes even with the scaler
    3: ("274,487", "137,212"),  # the optimizer's and the model's numbers
    4: (),  # epochs still to train
    5: ("1.192e-07",),  # what 9e-8 becomes in float16
}


def lr_at_step(step: int, total_steps: int, warmup_steps: int, peak_lr: float) -> float:
    """Exercise 1: the learning rate of step ``step`` (0-based) under linear warm-up then cosine.

    Written out independently of ``companion.train.warmup_cosine`` so the test can compare them.
    """
    if step < warmup_steps:
        return peak_lr * (step + 1) / warmup_steps
    progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
    return peak_lr * 0.5 * (1.0 + math.cos(math.pi * min(progress, 1.0)))


def survives_fp16(gradient: float, scale: float = 1.0) -> bool:
    """Exercise 2: does ``gradient``, multiplied by the loss scale ``scale`` as ``GradScaler``
    does, still differ from zero once it is stored in float16?"""
    return torch.tensor(gradient * scale, dtype=torch.float32).to(torch.float16).item() != 0.0


def checkpoint_inventory(path: str | os.PathLike[str]) -> dict[str, int]:
    """Exercise 3: how many numbers each part of a checkpoint holds (the tensors inside it,
    however deeply nested), by top-level key; plain numbers and strings count as 0."""

    def count(value: object) -> int:
        if isinstance(value, torch.Tensor):
            return value.numel()
        if isinstance(value, dict):
            return sum(count(v) for v in value.values())
        if isinstance(value, list | tuple):
            return sum(count(v) for v in value)
        return 0

    return {key: count(value) for key, value in load_checkpoint(Path(path)).items()}


def epochs_to_resume(path: str | os.PathLike[str], epochs: int) -> int:
    """Exercise 4: how many epochs a ``--resume`` of the run whose checkpoint is ``path`` still
    trains, when the run was asked for ``epochs`` epochs in all."""
    check_positive_int("epochs", epochs)
    return max(0, epochs - load_checkpoint(Path(path))["epoch"])


def float16_value(value: float) -> float:
    """Exercise 5 (predict, then check): what a float32 ``value`` becomes when stored in float16.

    float16's smallest subnormal is ``2**-24`` (about 5.96e-8). Rounding to nearest sends a value
    to zero only below half of that, ``2**-25`` (about 2.98e-8); exactly half is a tie, which
    rounds to the even neighbour, 0.
    """
    return torch.tensor(value, dtype=torch.float32).to(torch.float16).item()
