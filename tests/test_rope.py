"""companion.rope: 2-D rotary embeddings in window attention; the logit of two tokens with equal
content depends only on their offset, also inside shifted windows."""

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from companion.attention import WindowAttention
from companion.rope import (
    Rotary,
    WindowRoPE,
    axial_frequencies,
    equal_content_logits,
    frequency_ladder,
    rotate_pairs,
    window_positions,
)
from companion.swin import swin_from_config
from companion.window import cyclic_shift, shifted_window_regions, window_partition


@settings(max_examples=40, deadline=None)
@given(
    window=st.tuples(st.integers(1, 5), st.integers(1, 5)),
    head_dim=st.sampled_from([4, 8, 16]),
    heads=st.integers(1, 3),
    kind=st.sampled_from(["axial", "mixed"]),
    seed=st.integers(0, 1000),
)
def test_with_equal_content_the_logit_depends_only_on_the_offset(
    window, head_dim, heads, kind, seed
):
    torch.manual_seed(seed)
    rope = WindowRoPE(window, head_dim, heads, kind)
    logits = equal_content_logits(rope, seed)
    positions = window_positions(window).long()
    seen: dict[tuple[int, int], torch.Tensor] = {}
    for i in range(positions.shape[0]):
        for j in range(positions.shape[0]):
            offset = tuple((positions[i] - positions[j]).tolist())
            if offset in seen:
                torch.testing.assert_close(logits[:, i, j], seen[offset], atol=1e-5, rtol=1e-5)
            seen[offset] = logits[:, i, j]


def test_different_offsets_give_different_logits():
    torch.manual_seed(0)
    logits = equal_content_logits(WindowRoPE((3, 3), 16, 2, "mixed"), 0)
    # token 4 is the centre: its 9 keys have 9 different offsets and 9 different logits
    assert torch.unique(logits[0, 4].round(decimals=4)).numel() == 9


@settings(max_examples=30, deadline=None)
@given(
    windows=st.tuples(st.integers(1, 3), st.integers(1, 3)),
    window=st.tuples(st.integers(2, 4), st.integers(2, 4)),
    data=st.data(),
)
def test_in_shifted_windows_every_unmasked_pair_has_its_true_offset(windows, window, data):
    height, width = windows[0] * window[0], windows[1] * window[1]
    shift = (data.draw(st.integers(0, window[0] - 1)), data.draw(st.integers(0, window[1] - 1)))
    rows, cols = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    true = torch.stack((rows, cols), -1)[None]  # (1, H, W, 2): each token's place in the image
    n = window[0] * window[1]
    rolled = window_partition(cyclic_shift(true, shift), window).reshape(-1, n, 2)
    labels = shifted_window_regions(height, width, window, shift)[None, :, :, None]
    labels = window_partition(labels, window).reshape(rolled.shape[:2])  # already rolled
    local = window_positions(window).long()
    for w in range(rolled.shape[0]):
        allowed = labels[w][:, None] == labels[w][None, :]
        true_offset = rolled[w][:, None] - rolled[w][None, :]
        local_offset = (local[:, None] - local[None, :]).expand_as(true_offset)
        assert torch.equal(true_offset[allowed], local_offset[allowed])


def test_rotation_keeps_norms_and_position_zero_is_the_identity():
    x = torch.randn(2, 3, 4, 8)
    angles = torch.rand(3, 4, 4) * 6
    torch.testing.assert_close(rotate_pairs(x, angles).norm(dim=-1), x.norm(dim=-1))
    torch.testing.assert_close(rotate_pairs(x, torch.zeros(3, 4, 4)), x)


def test_axial_turns_half_the_pairs_with_the_row_and_half_with_the_column():
    freqs = axial_frequencies(16)
    assert freqs.shape == (2, 1, 8)
    torch.testing.assert_close(freqs[0, 0, :4], frequency_ladder(16))
    assert (freqs[0, 0, 4:] == 0).all() and (freqs[1, 0, :4] == 0).all()
    assert frequency_ladder(16)[0] == 1 and (frequency_ladder(16).diff() < 0).all()


def test_mixed_frequencies_are_learnable_per_head_and_axial_ones_are_not_saved():
    mixed = WindowRoPE(4, 8, 3, "mixed")
    assert isinstance(mixed.freqs, torch.nn.Parameter) and mixed.freqs.shape == (2, 3, 4)
    assert list(mixed.state_dict()) == ["freqs"]
    assert list(WindowRoPE(4, 8, 3, "axial").state_dict()) == []


def test_rope_attention_learns_the_mixed_frequencies_and_excludes_them_from_weight_decay():
    model = swin_from_config("tiny-cpu", pos="rope-mixed")
    model(torch.randn(2, 3, 32, 32)).sum().backward()
    freqs = model.layers[0].blocks[0].attn.code.freqs
    assert freqs.grad is not None and freqs.grad.abs().sum() > 0
    assert "layers.0.blocks.0.attn.code.freqs" in model.no_weight_decay()
    assert not any(n.endswith("relative_position_bias_table") for n, _ in model.named_parameters())


@pytest.mark.parametrize("kind", ["axial", "mixed"])
def test_sdpa_and_eager_attention_agree_with_rope(kind):
    torch.manual_seed(0)
    attn = WindowAttention(16, (3, 4), 2, position=Rotary(kind)).eval()
    eager = WindowAttention(16, (3, 4), 2, position=Rotary(kind), attn_impl="eager")
    eager.load_state_dict(attn.state_dict())
    if kind == "mixed":
        assert torch.equal(eager.code.freqs, attn.code.freqs)
    x = torch.randn(5, 12, 16)
    torch.testing.assert_close(attn(x), eager(x), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"head_dim": 6}, ValueError, "head_dim must be a multiple of 4"),
        ({"kind": "spiral"}, ValueError, "kind must be one of"),
        ({"window_size": (2, 0)}, ValueError, "window_size must be"),
        ({"num_heads": 1.5}, TypeError, "num_heads must be"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, error, match):
    args = {"window_size": 4, "head_dim": 8, "num_heads": 2, "kind": "axial"}
    with pytest.raises(error, match=match):
        WindowRoPE(**{**args, **kwargs})


def test_attention_takes_one_position_code_and_names_the_ones_it_knows():
    with pytest.raises(TypeError, match=r"position must be a window code \(BiasTable\(...\), Cont"):
        WindowAttention(16, 4, 2, position="rope-axial")
    with pytest.raises(ValueError, match=r"kind must be one of \['axial', 'mixed'\]"):
        Rotary("diagonal")
