"""A seeded model's initial weights are pinned: every code and variant draws the same numbers.

``tests/data/initial_state_hashes.json`` holds, for each model below, a hash of its initial
``state_dict`` (every key, shape and value), written from the code that trained the published runs
(commit 5dba5e0). A refactor of how the position codes hold their parameters must draw them in
the same order, so every published run still reproduces.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import torch
from torch import nn

from companion.attention import WindowAttention
from companion.position import POS_CHOICES, Position
from companion.swin import swin_from_config
from companion.swin_configs import variant_overrides
from companion.vit import VisionTransformer, ViTConfig

HASHES = Path(__file__).parent / "data" / "initial_state_hashes.json"


def _swin(config: str, pos: str, variant: str) -> Callable[[], nn.Module]:
    return lambda: swin_from_config(config, pos=pos, **variant_overrides(variant))


def _attention(pos: str) -> Callable[[], nn.Module]:
    return lambda: WindowAttention(16, (3, 4), 2, position=Position.parse(pos).window)


def _models() -> dict[str, Callable[[], nn.Module]]:
    models: dict[str, Callable[[], nn.Module]] = {}
    for pos in POS_CHOICES:
        tables = Position.parse(pos).has_table
        wraps = Position.parse(pos).can_wrap
        variants = ["swin", "no-shift", "pool-merge"]
        variants += ["abs-offset-bias"] if tables else []
        variants += ["torus", "no-shift+torus"] if wraps else []
        variants += ["abs-offset-bias+torus"] if tables else []
        for variant in variants:
            models[f"tiny-cpu:{pos}:{variant}"] = _swin("tiny-cpu", pos, variant)
        models[f"cifar:{pos}:swin"] = _swin("cifar", pos, "swin")
        if pos != "abs" and pos != "abs+rel":
            models[f"attention:{pos}"] = _attention(pos)
    models["vit"] = lambda: VisionTransformer(ViTConfig())
    return models


def state_hash(model: nn.Module) -> str:
    """One sha256 over every ``(key, shape, dtype, bytes)`` of ``model.state_dict()``, by key."""
    digest = hashlib.sha256()
    for key, value in sorted(model.state_dict().items()):
        tensor = value.detach().contiguous().cpu()
        digest.update(str((key, tuple(tensor.shape), tensor.dtype)).encode())
        digest.update(tensor.numpy().tobytes())
    return digest.hexdigest()


def _hash(build: Callable[[], nn.Module], seed: int) -> str:
    torch.manual_seed(seed)
    return state_hash(build())


@pytest.mark.parametrize("name", sorted(_models()))
def test_a_seeded_model_draws_the_published_initial_weights(name):
    expected = json.loads(HASHES.read_text())[name]
    for seed, digest in expected.items():
        assert _hash(_models()[name], int(seed)) == digest, (name, seed)


if __name__ == "__main__":  # python tests/test_initial_state.py --write (at the reference commit)
    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python tests/test_initial_state.py --write")
    table = {name: {str(s): _hash(b, s) for s in (0, 1)} for name, b in _models().items()}
    HASHES.write_text(json.dumps(table, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(table)} models to {HASHES}")
