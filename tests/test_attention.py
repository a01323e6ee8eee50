"""companion.attention.WindowAttention: the formula, both implementations, masks and bad input."""

import copy
import math

import pytest
import torch

from companion.attention import WindowAttention, biased_logits
from companion.bias_table import BiasTable
from companion.cpb import ContinuousBias
from companion.relative import relative_position_index
from companion.rope import Rotary


def reference_attention(module: WindowAttention, x: torch.Tensor, mask=None) -> torch.Tensor:
    """SoftMax(QK^T/sqrt(d) + B + mask) V written out per window and head, in float64."""
    module = module.double()
    x = x.double()
    b_, _, c = x.shape
    h, d = module.num_heads, c // module.num_heads
    q, k, v = module.qkv(x).split(c, dim=-1)
    out = torch.empty_like(x)
    index = relative_position_index(module.window_size)
    for w in range(b_):
        heads = []
        for head in range(h):
            sl = slice(head * d, (head + 1) * d)
            logits = q[w, :, sl] @ k[w, :, sl].T / math.sqrt(d)
            if isinstance(module.position, BiasTable):
                logits = logits + module.code.relative_position_bias_table[index, head]
            if mask is not None:
                logits = logits + mask[w % mask.shape[0]].double()
            heads.append(torch.softmax(logits, dim=-1) @ v[w, :, sl])
        out[w] = torch.cat(heads, dim=-1)
    return module.proj(out)


def make(window=(2, 3), dim=12, heads=3, **kwargs) -> WindowAttention:
    torch.manual_seed(0)
    module = WindowAttention(dim, window, heads, **kwargs)
    with torch.no_grad():  # a table far from zero makes a missing or misplaced bias visible
        if isinstance(module.position, BiasTable):
            module.code.relative_position_bias_table.normal_(0, 1)
    return module


def shift_like_mask(num_windows: int, n: int) -> torch.Tensor:
    torch.manual_seed(1)
    allowed = torch.rand(num_windows, n, n) > 0.3
    allowed |= torch.eye(n, dtype=torch.bool)  # every query keeps at least itself
    return torch.zeros(num_windows, n, n).masked_fill(~allowed, -100.0)


@pytest.mark.parametrize("attn_impl", ["eager", "sdpa"])
@pytest.mark.parametrize("position", [BiasTable(), None], ids=["table", "none"])
@pytest.mark.parametrize("with_mask", [False, True])
def test_matches_the_formula_written_out(attn_impl, position, with_mask):
    module = make(attn_impl=attn_impl, position=position)
    x = torch.randn(8, 6, 12)
    mask = shift_like_mask(4, 6) if with_mask else None
    expected = reference_attention(copy.deepcopy(module), x, mask)  # in float64, on a copy
    out = module(x, mask)
    assert out.shape == x.shape
    torch.testing.assert_close(out.double(), expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("with_mask", [False, True])
def test_eager_and_sdpa_agree_within_1e6_in_float32(with_mask):
    module = make(window=7, dim=32, heads=4)
    x = torch.randn(8, 49, 32)
    mask = shift_like_mask(4, 49) if with_mask else None
    module.attn_impl = "eager"
    eager = module(x, mask)
    module.attn_impl = "sdpa"
    sdpa = module(x, mask)
    assert (eager - sdpa).abs().max().item() < 1e-6


def test_masked_keys_get_no_attention():
    module = make()
    x = torch.randn(4, 6, 12)
    mask = torch.zeros(2, 6, 6)
    mask[1, :, 3:] = -1e9
    probs = module.attention_probs(x, mask)
    assert probs.shape == (4, 3, 6, 6)
    torch.testing.assert_close(probs.sum(-1), torch.ones(4, 3, 6))
    # window 1 of each image (rows 1 and 3 of the batch) never looks at keys 3..5
    assert probs[[1, 3]][..., 3:].max() < 1e-6
    assert probs[[0, 2]][..., 3:].min() > 0


def test_bias_is_the_relative_position_lookup():
    module = make(window=2, dim=4, heads=2)
    bias = module.relative_position_bias()
    index = relative_position_index(2)
    assert bias.shape == (2, 4, 4)
    assert torch.equal(bias[1], module.code.relative_position_bias_table[index, 1])


def test_no_bias_variant_has_no_table():
    module = WindowAttention(8, 3, 2, position=None)
    assert module.relative_position_bias() is None
    assert not any("relative_position" in key for key in module.state_dict())


def test_state_dict_names_follow_timm_and_index_is_not_saved():
    keys = set(WindowAttention(8, 3, 2).state_dict())
    assert keys == {
        "relative_position_bias_table",
        "qkv.weight",
        "qkv.bias",
        "proj.weight",
        "proj.bias",
    }


def test_qkv_bias_switch():
    assert WindowAttention(8, 2, 2, qkv_bias=False).qkv.bias is None


def test_gradients_reach_the_bias_table():
    module = make()
    module(torch.randn(2, 6, 12)).sum().backward()
    assert module.code.relative_position_bias_table.grad.abs().sum() > 0


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (
            {"dim": 10, "window_size": 2, "num_heads": 3},
            ValueError,
            "dim must be divisible by num_heads=3, got dim=10",
        ),
        (
            {"dim": 0, "window_size": 2, "num_heads": 1},
            ValueError,
            "dim must be an int >= 1, got 0",
        ),
        ({"dim": 8, "window_size": 0, "num_heads": 2}, ValueError, "window_size"),
        ({"dim": 8, "window_size": 2, "num_heads": 2.5}, TypeError, "num_heads"),
        (
            {"dim": 8, "window_size": 2, "num_heads": 2, "attn_impl": "flash"},
            ValueError,
            "attn_impl must be one of",
        ),
    ],
)
def test_bad_construction_arguments_name_the_parameter(kwargs, error, match):
    with pytest.raises(error, match=match):
        WindowAttention(**kwargs)


def test_token_count_must_equal_window_area():
    module = WindowAttention(8, (2, 3), 2)
    with pytest.raises(
        ValueError, match=r"x must have shape \(num_windows\*batch, N=6, dim=8\).*got \(4, 4, 8\)"
    ):
        module(torch.randn(4, 4, 8))


def test_biased_logits_is_the_scaled_dot_product_plus_the_bias():
    torch.manual_seed(0)
    q, k = torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4, 8)
    bias = torch.randn(3, 4, 4)
    plain = torch.einsum("whnd,whmd->whnm", q, k) * 8**-0.5
    assert torch.allclose(biased_logits(q, k, 8**-0.5, None), plain, atol=1e-6)
    assert torch.allclose(biased_logits(q, k, 8**-0.5, bias), plain + bias, atol=1e-6)


def test_a_position_code_holds_only_options_that_make_sense_for_it():
    assert BiasTable() == BiasTable("signed", (False, False)) and repr(BiasTable()) == "BiasTable()"
    with pytest.raises(ValueError, match=r"offsets must be one of \['signed', 'magnitude'\]"):
        BiasTable("abs")
    with pytest.raises(TypeError, match="wrap must be a pair"):
        BiasTable(wrap=True)
    with pytest.raises(TypeError, match="wrap must be True or False"):
        BiasTable(wrap=(1, 0))
    for code in (ContinuousBias(), Rotary("axial"), None):  # no table: nothing to wrap or sign
        module = WindowAttention(8, 2, 2, position=code)
        assert (
            not hasattr(module.code, "relative_position_bias_table")
            and module.offset_table() is None
        )
