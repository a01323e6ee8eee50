"""The explorers' front end: one HTML output that stays interactive with no kernel and no server.

An explorer is displayed as one output bundle:

- ``text/html``: a ``<div class="cx-explorer">`` holding the explorer's settings and data as JSON,
  the static PNG figure, and a small inline script (``assets/explorer.js``) that replaces the PNG
  by sliders and SVG figures and redraws them in the browser whenever a slider moves;
- ``image/png``: the same static figure, for front ends that do not render HTML (the PDF build,
  terminals);
- ``text/plain``: one line naming the explorer.

Why this mechanism. The same bundle works unchanged in the three places readers meet the book:

- the published HTML book: MyST-NB copies ``text/html`` outputs, scripts included, into the page,
  and everything the explorer needs (code, style, data) is inside that output: no kernel, no
  server, no request, nothing to vendor;
- Colab, whatever its ipywidgets (7.7.1 today): Colab runs the scripts of HTML outputs;
- Jupyter / JupyterLab / VS Code: the scripts of outputs run for a cell that was just executed
  (or a trusted notebook); an untrusted notebook shows the static figure.

The alternatives were weighed: ipywidgets (the previous design) need a kernel to redraw, so the
book could only show a frozen state; an anywidget front end would run in the browser too, but its
ES module and the widget manager that loads it must then be served by the book itself and be kept
in step with Colab's and JupyterLab's managers, a much larger surface for no gain, as the
computations are tiny (an index for at most a 16 x 16 window, a gather from a table of a few
hundred numbers, one row of a precomputed similarity matrix); precomputing every state would not
fit the relative index explorer (784 states of up to 49 cells x 4 steps).

Size: the script and style are ~18 kB per explorer, the PNG ~60-100 kB; the data are a bias table
(a few kB) or, for the similarity explorer, the ``N x N`` float32 similarity matrix: 205 kB of
base64 for ViT's 14 x 14 grid, growing as ``N^2``.

Determinism (nbval compares outputs): the HTML has no ids (the script finds the explorers that
are not live yet), and its JSON is written with sorted keys. The two parts that can change in their
last bits across machines, the embedded float32 data and the PNG, are blanked by two patterns of
``tests/nbval_sanitize.cfg``; the browser tests check those numbers instead.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Iterable, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.colors import to_hex
from torch import Tensor

ASSETS = Path(__file__).with_name("assets")
#: The class of the ``<script>`` holding an explorer's JSON (named by the nbval sanitizer too).
DATA_CLASS = "cx-data"


@cache
def asset(name: str) -> str:
    """The text of ``companion/figures/assets/<name>`` (the explorers' script and style)."""
    return (ASSETS / name).read_text(encoding="utf-8")


def colormap_table(name: str) -> list[str]:
    """matplotlib's colour map ``name`` as its 256 ``#rrggbb`` entries, for the browser.

    The browser picks entry ``floor(256 x)`` for a normalised value ``x``, as matplotlib does.
    """
    cmap = matplotlib.colormaps[name]
    return [to_hex(rgba) for rgba in cmap(np.arange(cmap.N))]


def float32_base64(values: Tensor) -> str:
    """``values`` as little-endian float32 bytes in base64: the browser reads them back exactly."""
    array = values.detach().cpu().float().contiguous().numpy().astype("<f4")
    return base64.b64encode(array.tobytes()).decode("ascii")


def colormaps(names: Iterable[str]) -> dict[str, list[str]]:
    """``{name: colormap_table(name)}`` for the colour maps a view uses."""
    return {name: colormap_table(name) for name in names}


def _json(value: Mapping[str, Any]) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    # Inside <script>, "</" could end the element early; "\u003c" is the same JSON string.
    return text.replace("<", "\\u003c")


def explorer_html(spec: Mapping[str, Any], png: bytes, width: int, alt: str) -> str:
    """The explorer's ``text/html`` output: settings, static figure, style and script.

    ``spec``: ``{"view", "title", "controls", "data"}``, read by ``assets/explorer.js``;
    ``png`` (shown ``width`` CSS pixels wide, described by ``alt``) is what readers without
    JavaScript, and print, see.
    """
    image = base64.b64encode(png).decode("ascii")
    return (
        '<div class="cx-explorer">'
        f"<style>{asset('explorer.css')}</style>"
        f'<script type="application/json" class="{DATA_CLASS}">{_json(spec)}</script>'
        f'<p class="cx-title">{html.escape(spec["title"])}</p>'
        '<div class="cx-live"></div>'
        '<div class="cx-static">'
        f'<img src="data:image/png;base64,{image}" width="{width}" alt="{html.escape(alt)}">'
        '<p class="cx-note">Static figure for the starting values: the controls need '
        "JavaScript.</p>"
        "</div>"
        "</div>"
        f"<script>{asset('explorer.js')}</script>"
    )
