"""companion.experiments.resolution_transfer: a 32-px model moved to 48/64 px, per condition."""

import copy

import pytest
import torch
import torch.nn.functional as F

from companion.data import make_dataset
from companion.experiments.evaluation import hits
from companion.experiments.resolution_transfer import (
    RECORDED_NAMES,
    condition_name,
    moved_model,
    transfer_conditions,
)
from companion.experiments.runs.resolution_experiment import TransferPlan, finetune_config
from companion.swin import swin_from_config
from companion.swin_configs import POS_CHOICES
from companion.train import TrainConfig, param_groups, train_steps


def test_table_models_get_both_resize_methods_and_the_others_one_grown_window():
    assert [c.name for c in transfer_conditions("rel")] == [
        "window-kept",
        "window-grown-bicubic",
        "window-grown-geometric",
    ]
    assert [c.name for c in transfer_conditions("rope-mixed")] == ["window-kept", "window-grown"]


@pytest.mark.parametrize("pos", POS_CHOICES)
@pytest.mark.parametrize("size", [48, 64])
def test_every_pos_and_condition_runs_at_the_new_size_and_leaves_the_original(pos, size):
    torch.manual_seed(0)
    model = swin_from_config("tiny-cpu", pos=pos).eval()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for condition in transfer_conditions(pos):
        moved = moved_model(model, size, condition)
        grid = size // 4
        expected_window = 4 * size // 32 if condition.grow_window else 4
        assert moved.layers[0].blocks[0].window_size == (min(grid, expected_window),) * 2
        assert moved(torch.randn(1, 3, size, size)).shape == (1, 10)
    assert model.img_size == (32, 32)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_a_window_that_would_not_scale_to_whole_sides_is_refused():
    model = swin_from_config("tiny-cpu", window_size=3)
    with pytest.raises(ValueError, match="whole sides"):
        moved_model(model, 48, transfer_conditions("rel")[1])


def test_hits_are_one_bool_per_image_rendered_at_the_models_size():
    model = swin_from_config("tiny-cpu", num_classes=16)
    moved = moved_model(model, 64, transfer_conditions("rel")[0])
    found = hits(moved, make_dataset("grid-cell", "test", n=16, size=64))
    assert found.shape == (16,) and found.dtype == torch.bool


def test_images_of_another_size_are_refused_not_resized():
    model = swin_from_config("tiny-cpu", num_classes=16)
    moved = moved_model(model, 64, transfer_conditions("rel")[0])
    small = make_dataset("grid-cell", "test", n=4)
    with pytest.raises(
        ValueError, match=r"x must have shape \(B, 3, 64, 64\), got \(4, 3, 32, 32\)"
    ):
        hits(moved, small)


def test_a_short_fine_tune_lowers_the_training_loss():
    torch.manual_seed(0)
    data = make_dataset("grid-cell", "train", n=64, size=48)
    model = moved_model(
        swin_from_config("tiny-cpu", num_classes=16), 48, transfer_conditions("cpb")[1]
    )
    cfg = TrainConfig(lr=1e-3, batch_size=32, label_smoothing=0.0, clip_grad=0.0)
    losses = train_steps(model, data, cfg, steps=12)
    assert losses.shape == (12,) and losses[-3:].sum() < losses[:3].sum()


def _the_fine_tune_loop_it_replaced(model, data, steps, lr, batch_size, seed):
    """resolution_transfer.fine_tune as it was (its own loop), the reference for the numbers."""
    model.train()
    optimiser = torch.optim.AdamW(param_groups(model, weight_decay=0.05), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        index = torch.randint(len(data), (batch_size,), generator=generator)
        images, labels = data[index]
        loss = F.cross_entropy(model(data.normalize(images)), labels)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        optimiser.step()
    model.eval()


@pytest.mark.parametrize("batch_size", [32, 12])
def test_the_fine_tune_through_the_trainers_loop_gives_the_old_loops_weights(batch_size):
    data = make_dataset("grid-cell", "train", n=40, size=48)
    torch.manual_seed(0)
    moved = moved_model(
        swin_from_config("tiny-cpu", num_classes=16), 48, transfer_conditions("rel")[0]
    )
    a, b = moved, copy.deepcopy(moved)
    torch.manual_seed(1)  # stochastic depth draws from the global generator: the same for both
    _the_fine_tune_loop_it_replaced(a, data, 3, 1e-3, batch_size, seed=5)
    settings = TransferPlan(
        "mini", finetune_steps=3, finetune_lr=1e-3, finetune_batch_size=batch_size
    )
    torch.manual_seed(1)
    train_steps(b, data, finetune_config(TrainConfig(seed=5), settings), 3)
    assert all(
        torch.equal(x, y)
        for x, y in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


def test_recorded_condition_names_map_to_todays_and_todays_stay():
    assert condition_name("grid") == "window-kept"
    assert condition_name("window") == "window-grown"
    assert condition_name("window-bicubic") == "window-grown-bicubic"
    for pos in POS_CHOICES:
        for condition in transfer_conditions(pos):
            assert condition_name(condition.name) == condition.name
    assert condition_name("trained") == "trained"
    assert set(RECORDED_NAMES.values()) == {
        c.name for pos in ("rel", "cpb") for c in transfer_conditions(pos)
    }
