"""Shared test set-up: a headless matplotlib backend, closed figures after every test, and the
small models and configurations that several test files build."""

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from torch import nn

from companion.swin import SwinTransformer, swin_from_config
from companion.train.config import TrainConfig

#: A training run that takes seconds on a CPU: 2 epochs of 64 grid-cell images.
TINY_RUN = {
    "dataset": "grid-cell",
    "epochs": 2,
    "batch_size": 16,
    "train_size": 64,
    "test_size": 32,
    "progress": False,
    "device": "cpu",
    "warmup_epochs": 0.5,
}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """`make slow` collects only ``tests/*.py`` files that say ``pytest.mark.slow`` (its grep):
    a slow test marked any other way, or elsewhere, would silently never run there."""
    tests = Path(__file__).parent
    for item in items:
        if not item.get_closest_marker("slow") or item.get_closest_marker("browser"):
            continue
        path = item.path
        if path.parent != tests or "pytest.mark.slow" not in path.read_text(encoding="utf-8"):
            raise pytest.UsageError(
                f"{item.nodeid} is marked slow, but `make slow` collects only tests/*.py files "
                f"whose text says pytest.mark.slow: mark it so, in such a file"
            )


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def tiny_swin() -> Callable[..., SwinTransformer]:
    """``tiny_swin(**overrides)``: the ``"tiny-cpu"`` Swin (seed 0, eval mode), any ``SwinConfig``
    field overridden."""

    def make(**overrides) -> SwinTransformer:
        torch.manual_seed(0)
        return swin_from_config("tiny-cpu", **overrides).eval()

    return make


@pytest.fixture(scope="session")
def tiny_run() -> Callable[..., TrainConfig]:
    """``tiny_run(folder, **settings)``: a ``TrainConfig`` of ``TINY_RUN`` that writes to
    ``folder / "run"``."""

    def make(folder: Path, **settings) -> TrainConfig:
        return TrainConfig(**{**TINY_RUN, "out": str(Path(folder) / "run"), **settings})

    return make


@pytest.fixture
def perturbed_timm_swin() -> Callable[[dict], nn.Module]:
    """``perturbed_timm_swin(cfg)``: timm's Swin for ``cfg`` (seed 0, eval mode) with every
    parameter moved away from its tidy initial value (LayerNorm ones, zero biases, tables near
    0), so that any misplaced weight changes the logits visibly."""
    timm_swin = pytest.importorskip("timm.models.swin_transformer")

    def make(cfg: dict) -> nn.Module:
        torch.manual_seed(0)
        model = timm_swin.SwinTransformer(**cfg).eval()
        with torch.no_grad():
            for name, p in model.named_parameters():
                scale = 1.0 if name.endswith("relative_position_bias_table") else 0.05
                p.add_(torch.randn_like(p) * scale)
        return model

    return make
