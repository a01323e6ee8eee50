"""Chapter 6's references checked to be drawn as they are read."""

import numpy as np
import pytest
import torch

from companion.experiments.evaluation import labels_text, pack_bits
from companion.experiments.far_transfer import check_references

IMAGES = 200
#: Labels with a constant answer of 0.5 (label 0 on half the images).
LABELS = np.array([0] * 100 + [1] * 50 + [2] * 25 + [3] * 25)


def _bits(rate: float, seed: int) -> np.ndarray:
    """A fixed pattern of ``rate * IMAGES`` right answers (different images per seed)."""
    hits = np.zeros(IMAGES, dtype=bool)
    hits[: round(rate * IMAGES)] = True
    return np.roll(hits, 7 * seed)


def _reference(rates: dict[str, float], rendering: str = "world") -> dict:
    runs = [
        {"dataset": "d", "pos": pos, "seed": s, "variant": "swin",
         "settings": {"rendering": rendering, "img_size": 48},
         "final": {"test_acc": rate},
         "splits": {"test": {"n": IMAGES, "correct": pack_bits(torch.from_numpy(_bits(rate, s)))}}}
        for pos, rate in rates.items()
        for s in range(3)
    ]  # fmt: skip
    labels = labels_text(torch.from_numpy(LABELS))
    return {"runs": runs, "test_sets": {"d": {"test": {"labels": labels}}}}


def _rows(rates: dict[tuple[str, str, str], tuple[float, float]]) -> list[dict]:
    return [
        {"dataset": "d", "pos": pos, "rendering": rendering, "size": 48, "condition": cond,
         "seed": s, "acc": moved, "acc_finetuned": tuned,
         "correct": pack_bits(torch.from_numpy(_bits(moved, s))),
         "correct_finetuned": pack_bits(torch.from_numpy(_bits(tuned, s)))}
        for (pos, rendering, cond), (moved, tuned) in rates.items()
        for s in range(3)
    ]  # fmt: skip


def _cell(pos="rel", rendering="world", condition="window-kept", metric="acc"):
    return {"dataset": "d", "pos": pos, "rendering": rendering, "condition": condition,
            "metric": metric}  # fmt: skip


def test_a_reference_must_be_drawn_in_the_rendering_it_is_read_for():
    check_references({"world": _reference({"rel": 0.9})}, {"world": "w"})
    with pytest.raises(ValueError, match=r"w: its runs were drawn in \['world'\], not in 'scaled'"):
        check_references({"scaled": _reference({"rel": 0.9})}, {"scaled": "w"})
