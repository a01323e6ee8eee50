"""Shared test set-up: a headless matplotlib backend, closed figures after every test, and the
small models, configurations and files that several test files build.

Test modules share these through the fixtures below, never by importing one another (nor this
file)."""

import hashlib
import pickle
import signal
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

# A shell without job control starts a background command (`make test &` in a script, a nested
# subshell) with Ctrl-C ignored, and every xdist worker inherits that. The stop tests need the
# terminal's default, under which the trainer handles SIGINT and SIGTERM; without it their own
# SIGTERM ends the worker. Tests that want Ctrl-C ignored set it themselves.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from torch import nn

from companion.attention import WindowAttention
from companion.position import WindowPosition
from companion.swin import SwinTransformer, swin_from_config
from companion.train.config import TrainConfig

if TYPE_CHECKING:
    from companion.experiments.runs.ablation import AblationPlan

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

#: A minuscule ablation's settings: 1 epoch of 32 images for each run.
TINY_PLAN_BASE = {
    "epochs": 1,
    "batch_size": 16,
    "train_size": 32,
    "test_size": 16,
    "device": "cpu",
    "progress": False,
    "warmup_epochs": 0.5,
}

# 36 x 100 images in 4 x 4 patches: stage grids (9, 25) -> (5, 13) -> (3, 7) with (3, 5) windows.
# Stage 1 pads both axes; stage 2 clamps the window height to 3 (no vertical shift) while still
# shifting and padding horizontally; the odd grids make patch merging pad too.
ODD_SWIN = {
    "img_size": (36, 100),
    "patch_size": 4,
    "num_classes": 7,
    "embed_dim": 24,
    "depths": (2, 2, 2),
    "num_heads": (2, 2, 4),
    "window_size": (3, 5),
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


@pytest.fixture(scope="session")
def publish_file() -> Callable[[Path, str, str], Path]:
    """``publish_file(folder, name, text)``: write ``folder/name`` and hash the folder
    (``SHA256SUMS``), as a published results folder is."""
    from companion.experiments.integrity import write_manifest

    def write(folder: Path, name: str, text: str) -> Path:
        (folder / name).write_text(text)
        write_manifest(folder)
        return folder / name

    return write


@pytest.fixture(scope="session")
def window_attention() -> Callable[..., WindowAttention]:
    """``window_attention(position=None, window_size=(2, 3), attn_impl="sdpa")``: a small
    ``WindowAttention`` (8 channels, 2 heads, seed 0)."""

    def make(
        position: WindowPosition = None, window_size=(2, 3), attn_impl: str = "sdpa"
    ) -> WindowAttention:
        torch.manual_seed(0)
        return WindowAttention(8, window_size, 2, position=position, attn_impl=attn_impl)

    return make


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


@pytest.fixture
def odd_swin_config() -> dict[str, Any]:
    """A timm-style Swin config (a fresh dict) on 36 x 100 images with (3, 5) windows, whose odd
    stage grids make every stage pad, clamp or merge unevenly (see ``ODD_SWIN``)."""
    return dict(ODD_SWIN)


class StandIn(nn.Module):
    """A very small convnet with dropout (so that resuming must restore the torch RNG)."""

    def __init__(self, num_classes: int) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 4, stride=4)
        self.drop = nn.Dropout(0.3)
        self.fc = nn.Linear(8 * 8 * 8, num_classes)

    def forward(self, x):
        return self.fc(self.drop(torch.relu(self.conv(x))).flatten(1))


@pytest.fixture(scope="session")
def stand_in_class() -> type[nn.Module]:
    """The class of :func:`stand_in`'s models, ``StandIn(num_classes)``, for tests that
    subclass it."""
    return StandIn


@pytest.fixture(scope="session")
def stand_in() -> Callable[[int, str], nn.Module]:
    """``stand_in(num_classes, pos)``: a model factory for ``train``/``run_ablation`` that builds
    a very small convnet with dropout instead of a Swin (``pos`` is ignored)."""

    def make(num_classes: int, pos: str) -> nn.Module:
        return StandIn(num_classes)

    return make


@pytest.fixture(scope="session")
def same_weights() -> Callable[[nn.Module, nn.Module], bool]:
    """``same_weights(a, b)``: whether two models have the same state_dict keys and tensors."""

    def check(a: nn.Module, b: nn.Module) -> bool:
        sa, sb = a.state_dict(), b.state_dict()
        return sa.keys() == sb.keys() and all(torch.equal(sa[k], sb[k]) for k in sa)

    return check


@pytest.fixture(scope="session")
def without_timing() -> Callable[[list[dict]], list[dict]]:
    """``without_timing(history)``: a training history's records without their timings."""

    def strip(history: list[dict]) -> list[dict]:
        return [
            {k: v for k, v in r.items() if k not in ("epoch_time_s", "images_per_s")}
            for r in history
        ]

    return strip


@pytest.fixture(scope="session")
def tiny_plan() -> Callable[..., "AblationPlan"]:
    """``tiny_plan(folder, **fields)``: a minuscule ablation (relation; none and rel; seeds 0 and
    1; ``TINY_PLAN_BASE``) writing under ``folder``, any ``AblationPlan`` field overridden."""

    from companion.experiments.runs.ablation import AblationPlan

    def make(folder: Path, **kw) -> AblationPlan:
        defaults = {
            "name": "mini",
            "datasets": ("relation",),
            "pos": ("none", "rel"),
            "seeds": (0, 1),
            "base": TrainConfig(**TINY_PLAN_BASE),
            "results_dir": str(folder / "results"),
            "work_dir": str(folder / "work"),
        }
        return AblationPlan(**{**defaults, **kw})

    return make


@pytest.fixture(scope="session")
def write_fake_cifar() -> Callable[..., dict[str, str]]:
    """``write_fake_cifar(root, per_batch=4, seed=0)``: a small folder in the genuine
    ``cifar-10-batches-py`` format under ``root``; returns the files' MD5s."""

    from companion.data import cifar

    def write(root: Path, per_batch: int = 4, seed: int = 0) -> dict[str, str]:
        rng = np.random.default_rng(seed)
        folder = root / "cifar-10-batches-py"
        folder.mkdir(parents=True)
        names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
        for name in names:
            batch = {
                b"batch_label": name.encode(),
                b"labels": rng.integers(0, 10, per_batch).tolist(),
                b"data": rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8),
                b"filenames": [f"{i}.png".encode() for i in range(per_batch)],
            }
            (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
        meta = {b"label_names": [c.encode() for c in cifar.CIFAR10_CLASSES]}
        (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
        return {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in folder.iterdir()}

    return write
