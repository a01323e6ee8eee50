"""Helpers of the explorers' browser tests: show an explorer's output in Chromium, drive, read it.

An explorer's ``text/html`` output is loaded as a page of its own (no book, no server); every
request is blocked, so the explorer must run from what its output holds.
"""

from __future__ import annotations

import json
from typing import Any

from companion.figures.widgets import Explorer

# Reads one explorer: its state, caption, panels ({panel: rows of {value, text, fill, hint}}) and
# their tick labels ({panel: [[axis, cell, label], ...]}), all panels or those named in `only`.
_READ = """
(root, only) => {
  const panels = {};
  const ticks = {};
  for (const svg of root.querySelectorAll("svg[data-panel]")) {
    if (only && !only.includes(svg.dataset.panel)) continue;
    ticks[svg.dataset.panel] = Array.from(svg.querySelectorAll("text.cx-tick"),
      (t) => [t.dataset.axis, Number(t.dataset.at), t.textContent]);
    const rows = [];
    for (const g of svg.querySelectorAll("g.cx-cell")) {
      const r = Number(g.dataset.row), c = Number(g.dataset.col);
      (rows[r] = rows[r] || [])[c] = {
        value: g.dataset.value,
        text: Array.from(g.querySelectorAll("text")).map((t) => t.textContent).join("\\n"),
        fill: g.querySelector("rect").getAttribute("fill"),
        hint: g.querySelector("title")?.textContent ?? null,
      };
    }
    panels[svg.dataset.panel] = rows;
  }
  return {
    state: JSON.parse(root.dataset.state),
    caption: root.querySelector(".cx-caption").textContent,
    panels: panels,
    ticks: ticks,
  };
}
"""

# Sets controls as a reader would (a slider's value, or a toggle button pressed, then an input
# event) and reads the explorer back, for a list of states at once: one round trip for hundreds of
# states. A control already at its value is left alone (a reader would not touch it; each input
# event redraws every panel), and the readings come back as one JSON string: for the resize
# explorer's 440 states, 16.8 s -> 3.4 s on 2 cores (playwright's transfer of the nested objects
# took 10 s, four redraws a state 3 s more).
_DRIVE = """
(root, [states, only]) => {
  const read = READ;
  return JSON.stringify(states.map((state) => {
    for (const [name, value] of Object.entries(state)) {
      const inputs = Array.from(root.querySelectorAll(`input[name="${name}"]`));
      if (inputs[0].type === "radio") {  // a control with choices: one toggle button per value
        const button = inputs.find((input) => input.value === String(value));
        if (button.checked) continue;
        button.checked = true;
        button.dispatchEvent(new Event("input", { bubbles: true }));
        continue;
      }
      const input = inputs[0];
      if (input.value === String(value)) continue;
      input.value = value;
      input.dispatchEvent(new Event("input", { bubbles: true }));
    }
    return read(root, only);
  }));
}
""".replace("READ", _READ.strip())


def page_html(*explorers: Explorer) -> str:
    """A page holding the outputs of ``explorers``, as the book or a notebook front end does."""
    outputs = "".join(
        f'<div class="output">{e._repr_mimebundle_()["text/html"]}</div>' for e in explorers
    )
    head = '<meta charset="utf-8"><meta name="viewport" content="width=device-width">'
    return f"<!doctype html><html><head>{head}</head><body>{outputs}</body></html>"


def show(page: Any, *explorers: Explorer) -> list[Any]:
    """Load ``explorers`` into ``page``; returns their root elements once they are live."""
    page.set_content(page_html(*explorers))
    page.wait_for_function(
        "(n) => document.querySelectorAll('.cx-explorer.cx-is-live').length === n",
        arg=len(explorers),
        timeout=10_000,
    )
    return page.query_selector_all(".cx-explorer")


def read(root: Any, panels: list[str] | None = None) -> dict[str, Any]:
    """``{"state", "caption", "panels", "ticks"}`` of one explorer.

    ``panels``: ``{name: rows of {value, text, fill, hint}}`` (``hint``: the hover text or None);
    ``ticks``: ``{name: [[axis ("row" or "col"), cell index, label], ...]}``.

    ``panels`` (the argument): the panels to read (default all).
    """
    return root.evaluate(_READ, panels)


def drive(
    root: Any, states: list[dict[str, int]], panels: list[str] | None = None
) -> list[dict[str, Any]]:
    """Set the controls to each of ``states`` in turn; what ``read`` returns after each."""
    return json.loads(root.evaluate(_DRIVE, [states, panels]))


def values(panel: list[list[dict[str, str]]]) -> list[list[Any]]:
    """The exact values (``data-value``, parsed as JSON) of a panel's cells."""
    return [[json.loads(cell["value"]) for cell in row] for row in panel]


def texts(panel: list[list[dict[str, str]]]) -> list[list[str]]:
    return [[cell["text"] for cell in row] for row in panel]


# Every text of an explorer's figures that reaches past its <svg>'s box (what the svg clips).
_CLIPPED = """
(root) => {
  const clipped = [];
  for (const svg of root.querySelectorAll(".cx-figure svg")) {
    const box = svg.getBoundingClientRect();
    for (const text of svg.querySelectorAll("text")) {
      const t = text.getBoundingClientRect();
      const over = Math.max(box.left - t.left, t.right - box.right, box.top - t.top,
        t.bottom - box.bottom);
      if (over > 0.5) clipped.push(`${svg.dataset.panel || svg.classList}: "${text.textContent}"`);
    }
  }
  return clipped;
}
"""


def clipped_texts(root: Any) -> list[str]:
    """``'panel: "text"'`` for each text of ``root``'s figures that its svg's box cuts off."""
    return root.evaluate(_CLIPPED)
