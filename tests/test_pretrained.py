"""The pretrained-weights section runs here on checkpoints the tests make, in timm's format."""

import matplotlib.pyplot as plt
import pytest
import timm
import torch
from book_figures import assert_fits_the_page

from companion.figures.pretrained import (
    plot_pretrained_swin_tables,
    plot_pretrained_vit_similarity,
)
from companion.train import pretrained
from companion.train.pretrained import (
    OPT_IN,
    SWIN_T,
    VIT_B16,
    downloads_allowed,
    fetch_pretrained,
    swin_bias_tables,
    vit_patch_position_embedding,
)


def load_saved(path):
    return torch.load(path, map_location="cpu", weights_only=True)


@pytest.fixture(scope="module")
def saved_checkpoints(tmp_path_factory):
    """Small random timm models with the same key names and layouts as Swin-T and ViT-B/16."""
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("checkpoints")
    swin = timm.create_model(
        "swin_tiny_patch4_window7_224", pretrained=False, embed_dim=24, depths=(2, 2),
        num_heads=(3, 6),
    )  # fmt: skip
    vit = timm.create_model("vit_tiny_patch16_224", pretrained=False)
    torch.save(swin.state_dict(), folder / "swin.pt")
    torch.save(vit.state_dict(), folder / "vit.pt")
    return folder / "swin.pt", folder / "vit.pt"


def test_downloads_are_allowed_only_in_colab_or_on_opt_in(monkeypatch):
    monkeypatch.delenv(OPT_IN, raising=False)
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    assert not downloads_allowed()
    monkeypatch.setenv(OPT_IN, "1")
    assert downloads_allowed()


def test_fetch_pretrained_says_in_one_line_why_it_gives_nothing_outside_colab(monkeypatch, capsys):
    monkeypatch.delenv(OPT_IN, raising=False)
    monkeypatch.delitem(__import__("sys").modules, "google.colab", raising=False)
    assert fetch_pretrained(SWIN_T) is None
    assert capsys.readouterr().out.count("\n") == 1


def test_fetch_pretrained_with_no_route_to_the_hub_gives_nothing_in_one_line(monkeypatch, capsys):
    def offline(name):
        raise FileNotFoundError(f"cannot reach the hub for {name}")

    monkeypatch.setenv(OPT_IN, "1")
    monkeypatch.setattr(pretrained, "pretrained_state_dict", offline)
    assert fetch_pretrained(SWIN_T, VIT_B16) is None
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "FileNotFoundError" in out


def test_swin_tables_are_read_per_block_with_their_window(saved_checkpoints):
    tables = swin_bias_tables(load_saved(saved_checkpoints[0]))
    assert list(tables) == [
        "layers.0.blocks.0", "layers.0.blocks.1", "layers.1.blocks.0", "layers.1.blocks.1"
    ]  # fmt: skip
    assert tables["layers.1.blocks.0"]["table"].shape == (169, 6)
    assert tables["layers.0.blocks.0"]["window_size"] == [7, 7]


def test_vit_embedding_drops_the_class_slot_and_finds_the_grid(saved_checkpoints):
    table, grid = vit_patch_position_embedding(load_saved(saved_checkpoints[1]))
    assert grid == (14, 14) and table.shape == (196, 192)


def test_both_pictures_draw_from_saved_checkpoints(saved_checkpoints):
    swin, vit = (load_saved(p) for p in saved_checkpoints)
    for fig in (
        plot_pretrained_swin_tables(swin),
        plot_pretrained_vit_similarity(vit, "ViT (random)"),
    ):
        assert_fits_the_page(fig)
        plt.close(fig)


def test_bad_inputs_name_what_is_wrong(saved_checkpoints, tmp_path):
    swin, vit = (load_saved(p) for p in saved_checkpoints)
    with pytest.raises(ValueError, match="no 'relative_position_bias_table'"):
        swin_bias_tables(vit)
    with pytest.raises(ValueError, match="no 'pos_embed'"):
        vit_patch_position_embedding(swin)
    with pytest.raises(ValueError, match="not a square grid"):
        vit_patch_position_embedding(vit, num_prefix_tokens=0)
    with pytest.raises(ValueError, match=r"blocks: \['layers.5.blocks.0'\]"):
        plot_pretrained_swin_tables(swin, blocks=["layers.5.blocks.0"])
