"""companion.swin.SwinTransformer(pos="rel") is weight-compatible with timm 1.0's SwinTransformer.

Same state_dict keys and shapes in both directions (strict loading) and the same logits, on the
small CPU config, on an odd-sized non-square-window config that pads and clamps windows, and on the
Swin-T architecture.
"""

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from companion.swin import SwinTransformer
from companion.swin_configs import CONFIGS, SwinConfig

swin_transformer = pytest.importorskip("timm.models.swin_transformer")


def pair(size):
    return size if isinstance(size, tuple) else (size, size)


def assert_same_logits(ours, theirs, cfg, batch=2):
    x = torch.randn(batch, 3, *pair(cfg["img_size"]), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected, got = theirs(x), ours(x)
    assert expected.abs().max() > 0.1  # the comparison is not between two near-zero tensors
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("attn_impl", ["sdpa", "eager"])
@pytest.mark.parametrize("name", ["tiny-cpu", "odd"])
def test_timm_weights_load_strictly_and_give_the_same_logits(
    name, attn_impl, perturbed_timm_swin, odd_swin_config
):
    cfg = odd_swin_config if name == "odd" else CONFIGS[name]
    theirs = perturbed_timm_swin(cfg)
    ours = SwinTransformer(SwinConfig(**cfg, attn_impl=attn_impl)).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert_same_logits(ours, theirs, cfg)


@pytest.mark.parametrize("name", ["tiny-cpu", "odd"])
def test_our_weights_load_strictly_into_timm(name, odd_swin_config):
    cfg = odd_swin_config if name == "odd" else CONFIGS[name]
    torch.manual_seed(0)
    ours = SwinTransformer(SwinConfig(**cfg)).eval()
    theirs = swin_transformer.SwinTransformer(**cfg).eval()
    theirs.load_state_dict(ours.state_dict(), strict=True)
    with torch.no_grad():
        x = torch.randn(2, 3, *pair(cfg["img_size"]))
        torch.testing.assert_close(ours(x), theirs(x), atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", ["tiny-cpu", "odd"])
def test_keys_shapes_and_buffers_match_timm(name, odd_swin_config):
    cfg = odd_swin_config if name == "odd" else CONFIGS[name]
    ours = SwinTransformer(SwinConfig(**cfg))
    theirs = swin_transformer.SwinTransformer(**cfg)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in theirs.state_dict().items()
    }
    # Our index lives in the attention's bias term (attn.code), timm's on the attention.
    our_buffers = {k.replace(".code.", "."): v for k, v in ours.named_buffers()}
    their_buffers = dict(theirs.named_buffers())
    assert our_buffers.keys() == their_buffers.keys()
    for name, buffer in our_buffers.items():  # attn_mask and relative_position_index
        assert torch.equal(buffer, their_buffers[name]), name


def test_swin_t_architecture_matches_with_random_weights(perturbed_timm_swin):
    cfg = {
        k: v for k, v in CONFIGS["swin_tiny_patch4_window7_224"].items() if k != "drop_path_rate"
    }
    theirs = perturbed_timm_swin(cfg)
    ours = SwinTransformer(SwinConfig(**cfg)).eval()
    ours.load_state_dict(theirs.state_dict(), strict=True)
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in theirs.parameters())
    assert_same_logits(ours, theirs, cfg, batch=1)


def test_abs_plus_rel_loads_timm_weights_and_keeps_its_own_embedding(perturbed_timm_swin):
    theirs = perturbed_timm_swin(CONFIGS["tiny-cpu"])
    ours = SwinTransformer(SwinConfig(**CONFIGS["tiny-cpu"], pos="abs+rel"))
    result = ours.load_state_dict(theirs.state_dict(), strict=False)
    assert result.missing_keys == ["absolute_pos_embed"] and result.unexpected_keys == []


def test_benchmark_script_runs_and_writes_its_json(tmp_path, capsys):
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_swin.py"
    spec = importlib.util.spec_from_file_location("bench_swin", path)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    out = tmp_path / "bench.json"
    args = ["--config", "tiny-cpu", "--batch-size", "2", "--iters", "1", "--warmup", "0"]
    report = bench.main([*args, "--device", "cpu", "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert set(report["results"]) == {"companion", "timm"}
    assert report["hardware"]["device"] == "cpu" and "torch" in report["hardware"]
    assert "(companion / timm)" in capsys.readouterr().out
