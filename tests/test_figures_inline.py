"""How a chapter shows a figure (companion/figures/inline.py): a pixel-doubled PNG on a
transparent ground that records the size of its smallest drawn text."""

import io
import sys
import types

import matplotlib.pyplot as plt
from book_figures import png_smallest_text_px
from PIL import Image

from companion.figures.inline import book_png, smallest_text_pt
from companion.figures.text_size import SMALL, legible_ticks


def _figure():
    fig, (ax, hidden) = plt.subplots(1, 2, figsize=(4, 2))
    ax.plot([0, 1], [0, 1])
    ax.set_title("a title", fontsize=14)
    ax.tick_params(labelsize=12)
    hidden.set_title("never drawn", fontsize=5)
    hidden.set_visible(False)
    return fig


def test_the_png_records_the_smallest_drawn_text_in_its_own_pixels():
    fig = _figure()
    assert smallest_text_pt(fig) == 12  # the hidden panel's 5 pt title is not drawn
    png, size = book_png(fig)
    # drawn at twice the figure's 100 dpi; recorded to 0.01 px
    assert png_smallest_text_px(png) == round(12 * 200 / 72, 2)
    with Image.open(io.BytesIO(png)) as image:
        assert size == {"width": image.width // 2, "height": image.height // 2}
    plt.close(fig)


def test_the_pngs_ground_is_transparent():
    fig = _figure()
    png, _ = book_png(fig)
    with Image.open(io.BytesIO(png)) as image:
        assert image.mode == "RGBA" and image.getpixel((0, 0))[3] == 0
    plt.close(fig)


def test_in_colab_the_ground_stays_white(monkeypatch):
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    fig = _figure()
    png, _ = book_png(fig)
    with Image.open(io.BytesIO(png)) as image:
        assert image.convert("RGBA").getpixel((0, 0)) == (255, 255, 255, 255)
    plt.close(fig)


def test_an_empty_figure_shows_nothing():
    fig = plt.figure()
    assert book_png(fig) is None
    plt.close(fig)


def test_legible_ticks_raises_small_tick_labels_and_keeps_larger_ones():
    fig, (small, large) = plt.subplots(1, 2)
    large.tick_params(labelsize=SMALL + 3)
    legible_ticks(fig)
    fig.canvas.draw()
    assert {t.get_fontsize() for t in small.get_xticklabels()} == {SMALL}
    assert {t.get_fontsize() for t in large.get_yticklabels()} == {SMALL + 3}
    plt.close(fig)
