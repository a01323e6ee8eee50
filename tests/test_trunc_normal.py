"""companion.layers.trunc_normal_: version-independent draws, inside the bounds, checked
arguments."""

import pytest
import torch
from torch import nn

from companion.layers import trunc_normal_


def test_wide_bounds_give_exactly_the_seeded_normal_stream():
    # Tensor.normal_'s stream is the same in every torch release, so these values are too.
    torch.manual_seed(0)
    got = trunc_normal_(torch.empty(5, 7), std=0.02)
    torch.manual_seed(0)
    assert torch.equal(got, torch.empty(5, 7).normal_(0.0, 0.02))
    torch.manual_seed(0)
    assert torch.allclose(
        trunc_normal_(torch.empty(3))[:2], torch.tensor([0.0308, -0.0059]), atol=1e-4
    )


@pytest.mark.skipif(
    tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) < (2, 14),
    reason="torch's own trunc_normal_ redraws out-of-bound normals from 2.14 on",
)
def test_matches_torchs_own_function_where_it_redraws():
    for bounds in ((-2.0, 2.0), (-0.01, 0.03)):
        torch.manual_seed(3)
        ours = trunc_normal_(torch.empty(64, 8), std=0.02, a=bounds[0], b=bounds[1])
        torch.manual_seed(3)
        theirs = nn.init.trunc_normal_(torch.empty(64, 8), std=0.02, a=bounds[0], b=bounds[1])
        assert torch.equal(ours, theirs)


def test_values_outside_the_bounds_are_redrawn_and_the_parameter_filled_in_place():
    torch.manual_seed(0)
    param = nn.Parameter(torch.zeros(4000))
    assert trunc_normal_(param, std=1.0, a=-0.5, b=1.0) is param
    assert param.min() >= -0.5 and param.max() <= 1.0
    assert param.requires_grad and param.grad is None
    assert 0.1 < param.mean().item() < 0.4  # the cut is asymmetric, so the mean moves right


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"std": 0.0}, "std must be > 0, got 0.0"),
        ({"a": 1.0, "b": 1.0}, "a must be below b"),
        ({"std": 1.0, "a": 3.0, "b": 4.0}, r"must hold at least 30% of N\(mean=0.0, std=1.0\)"),
    ],
)
def test_bad_arguments_are_named(kwargs, message):
    with pytest.raises(ValueError, match=message):
        trunc_normal_(torch.empty(3), **kwargs)
