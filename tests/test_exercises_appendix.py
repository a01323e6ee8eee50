"""The solutions of the appendix's exercises (the training loop's engineering)."""

import pytest
import torch

from companion.exercises.appendix import (
    checkpoint_inventory,
    epochs_to_resume,
    lr_at_step,
    survives_fp16,
)
from companion.train import CHECKPOINT, TrainConfig, train, warmup_cosine


@pytest.mark.parametrize("step", [0, 3, 9, 10, 57, 99])
def test_lr_at_step_matches_the_trainers_schedule(step):
    factor = warmup_cosine(total_steps=100, warmup_steps=10)
    assert lr_at_step(step, 100, 10, 2e-3) == pytest.approx(2e-3 * factor(step))


def test_a_gradient_below_fp16s_smallest_subnormal_vanishes_unless_scaled():
    smallest = torch.finfo(torch.float16).smallest_normal * 2.0**-10  # the smallest subnormal
    assert survives_fp16(smallest) and not survives_fp16(smallest / 4)
    assert survives_fp16(smallest / 4, scale=2.0**16)
    assert not survives_fp16(1e-8) and survives_fp16(1e-8, 2.0**16)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    cfg = TrainConfig(
        model_config_name="tiny-cpu", dataset="grid-cell", pos="rel", epochs=3, stop_after_epochs=1,
        batch_size=16, train_size=32, test_size=16, device="cpu", progress=False, out=str(out),
    )  # fmt: skip
    model = train(cfg).model
    return out / CHECKPOINT, sum(p.numel() for p in model.parameters())


def test_checkpoint_inventory_counts_the_model_and_twice_it_for_adamw(checkpoint):
    path, parameters = checkpoint
    inventory = checkpoint_inventory(path)
    # The state dict also holds buffers (relative position indices, attention masks).
    assert inventory["model"] >= parameters
    # AdamW: two moments per parameter, plus one step counter per parameter tensor.
    assert 2 * parameters <= inventory["optimizer"] <= 2 * parameters + 1000
    assert inventory["epoch"] == 0 and inventory["rng"] > 0


def test_epochs_to_resume_is_what_the_checkpoint_has_not_done(checkpoint):
    path, _ = checkpoint
    assert epochs_to_resume(path, 3) == 2
    assert epochs_to_resume(path, 1) == 0
    with pytest.raises(ValueError, match="epochs"):
        epochs_to_resume(path, 0)


def test_float16_flushes_to_zero_only_below_half_the_smallest_subnormal():
    from companion.exercises.appendix import float16_value

    smallest = 2.0**-24  # float16's smallest subnormal, about 5.96e-8
    assert float16_value(smallest) == smallest
    assert float16_value(3e-8) == smallest  # above half: rounds up, not to zero
    assert float16_value(2.0**-25) == 0.0  # exactly half: a tie, rounded to the even 0
    assert float16_value(2.0**-25 * 1.001) == smallest
    assert float16_value(2.9e-8) == 0.0
    assert float16_value(9e-8) == 2 * smallest
