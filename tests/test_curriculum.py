"""The curriculum: the first epochs train on the distance-1 images only, the schedule counts
their (fewer) steps, and a curriculum run resumes exactly."""

import pytest
import torch
from torch import nn

from companion.data import make_dataset
from companion.train import TrainConfig, train
from companion.train.build import build_optimizer, curriculum_loader
from companion.train.runtime import DistInfo

FAR = "far-relation-heldout"


class Recorder(nn.Module):
    """A linear classifier that keeps every training batch it sees (to check which images)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(3 * 32 * 32, num_classes)
        self.seen: list[torch.Tensor] = []

    def forward(self, x):
        if self.training:
            self.seen.append(x.detach().clone())
        return self.fc(x.flatten(1))


def lr_per_step(cfg: TrainConfig, epoch_steps: list[int]) -> list[float]:
    optimizer, scheduler = build_optimizer(cfg, nn.Linear(2, 2), epoch_steps)
    rates = []
    for _ in range(sum(epoch_steps)):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return rates


@pytest.mark.parametrize("warmup", [0.0, 0.5, 1.5, 2.0])
def test_equal_epochs_give_the_schedule_of_steps_times_epochs(warmup):
    cfg = TrainConfig(epochs=3, warmup_epochs=warmup, lr=1.0)
    rates = lr_per_step(cfg, [7, 7, 7])
    peak = round(warmup * 7)
    assert len(rates) == 21
    if peak:
        assert rates[peak - 1] == pytest.approx(1.0) and rates[0] == pytest.approx(1 / peak)
    assert rates[-1] < rates[peak] or not peak


def test_the_warm_up_counts_the_curriculum_epochs_own_steps():
    cfg = TrainConfig(epochs=3, warmup_epochs=1.5, lr=1.0)
    rates = lr_per_step(cfg, [4, 4, 10])  # 1.5 epochs = 4 + 2 steps
    assert rates[5] == pytest.approx(1.0) and rates[4] == pytest.approx(5 / 6)
    assert len(rates) == 18


def test_the_curriculum_loader_draws_every_distance_1_image_once_and_no_other():
    data = make_dataset(FAR, "train", 64)
    cfg = TrainConfig(dataset=FAR, curriculum_epochs=1, epochs=2, batch_size=4)
    loader = curriculum_loader(cfg, data, DistInfo(), torch.Generator().manual_seed(0))
    images = torch.cat([x for x, _ in loader])
    near = data.images[data.meta["distance"] == 1]
    assert len(images) == len(near) // 4 * 4  # whole batches only
    keys = {tuple(im.flatten().tolist()) for im in near}
    assert all(tuple(im.flatten().tolist()) in keys for im in images)
    assert curriculum_loader(TrainConfig(dataset=FAR), data, DistInfo(), torch.Generator()) is None


def test_a_curriculum_run_trains_on_distance_1_first_then_on_every_image(tmp_path, tiny_run):
    cfg = tiny_run(
        tmp_path, dataset=FAR, train_size=64, test_size=16, epochs=2, curriculum_epochs=1,
        batch_size=8, warmup_epochs=0.5,
    )  # fmt: skip
    models: list[Recorder] = []

    def factory(num_classes, pos):
        models.append(Recorder(num_classes))
        return models[-1]

    train(cfg, factory)
    data = make_dataset(FAR, "train", 64)
    near = int((data.meta["distance"] == 1).sum())
    batches = [len(x) for x in models[0].seen]
    assert sum(batches) == near // 8 * 8 + 64  # epoch 1: the near images; epoch 2: all 64
    means = {round(float(data.normalize(im[None]).mean()), 5): int(d) for im, d in
             zip(data.images, data.meta["distance"], strict=True)}  # fmt: skip
    first = torch.cat(models[0].seen[: near // 8])
    assert {means[round(float(x.mean()), 5)] for x in first} == {1}


def test_a_curriculum_run_resumes_exactly(tmp_path, tiny_run):
    kw = {"dataset": FAR, "train_size": 48, "test_size": 16, "epochs": 3,
          "curriculum_epochs": 1, "batch_size": 8, "warmup_epochs": 1.5}  # fmt: skip
    straight = train(tiny_run(tmp_path / "a", **kw))
    train(tiny_run(tmp_path / "b", stop_after_epochs=2, **kw))
    resumed = train(tiny_run(tmp_path / "b", resume=True, **kw))
    a, b = straight.model.state_dict(), resumed.model.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"dataset": "relation", "curriculum_epochs": 1}, "curriculum_epochs needs a dataset"),
        ({"dataset": FAR, "curriculum_epochs": 5, "epochs": 3}, "curriculum_epochs must be"),
        ({"dataset": FAR, "curriculum_epochs": -1}, "curriculum_epochs must be an int"),
    ],
)
def test_a_curriculum_that_cannot_work_is_refused_by_name(settings, message):
    with pytest.raises(ValueError, match=message):
        TrainConfig(**settings)
