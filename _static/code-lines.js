// Code and printed output, one block per line with a hanging indent, as the companion listings
// (companion/figures/show.py) are drawn. A notebook cell's code wraps where the column is too
// narrow for it (a phone, a tablet: a 100-column line needs about 785 px) and its continuation
// starts four characters right of the line's own indent, so the code's shape still reads. Printed
// output keeps its columns on screen (a tensor wrapped at the edge of a phone would misalign
// them): it scrolls in its box, whose shadows say so (book.css); on paper it wraps like the code,
// indented. The text of the block is unchanged, newlines included, so copying a cell (the copy
// button takes the block's text) gives exactly its source. A printed output of more than LONG
// lines (chapter 6's provenance log) is folded, its summary saying how many lines it holds.
(function () {
  "use strict";
  /** How far a wrapped line's continuation starts right of the line's own indent. */
  const HANG = 4;
  const BLOCKS = ".bd-article div.highlight pre, .bd-article div.cell_output pre";

  /** The pre's children split at its newlines: one list of nodes per line. Pygments' token
   *  spans are flat (text only), so a span that holds a newline is split into copies of itself. */
  function lines(pre) {
    const found = [[]];
    const add = (node) => found[found.length - 1].push(node);
    for (const node of Array.from(pre.childNodes)) {
      const text = node.textContent;
      if (!text.includes("\n")) {
        add(node);
        continue;
      }
      text.split("\n").forEach((part, i) => {
        if (i > 0) found.push([]);
        if (!part) return;
        if (node.nodeType === Node.TEXT_NODE) {
          add(document.createTextNode(part));
        } else {
          const copy = node.cloneNode(false);
          copy.textContent = part;
          add(copy);
        }
      });
    }
    return found;
  }

  function wrap(pre) {
    if (pre.dataset.bookLines || pre.querySelector(".source-line, .book-line")) return;
    pre.dataset.bookLines = "1";
    const all = lines(pre);
    const last = all.length - 1; // after a final newline: an empty line that is not one
    const blocks = [];
    all.forEach((nodes, i) => {
      if (i === last && nodes.length === 0) return;
      const line = document.createElement("span");
      line.className = "book-line";
      for (const node of nodes) line.appendChild(node);
      const indent = line.textContent.length - line.textContent.replace(/^ +/, "").length;
      line.style.setProperty("--book-hang", `${indent + HANG}ch`);
      if (i < last) line.appendChild(document.createTextNode("\n"));
      blocks.push(line);
    });
    pre.replaceChildren(...blocks);
  }

  /** Printed output longer than this many lines (a run's provenance log) is folded. */
  const LONG = 40;

  /** A long printed output folded under a summary that says how long it is; print opens it
   *  (tools/pdf_layout.py opens every fold). */
  function fold(pre) {
    const output = pre.closest("div.output");
    const lines = pre.querySelectorAll(":scope > .book-line").length;
    if (!output || lines <= LONG || output.closest("details")) return;
    const chinese = (document.documentElement.lang || "").toLowerCase().startsWith("zh");
    const details = document.createElement("details");
    details.className = "book-log";
    const summary = document.createElement("summary");
    summary.textContent = chinese ? `打印输出（${lines} 行）` : `Printed output (${lines} lines)`;
    output.replaceWith(details);
    details.append(summary, output);
  }

  function wrapAll() {
    for (const pre of document.querySelectorAll(BLOCKS)) {
      wrap(pre);
      if (pre.closest("div.cell_output")) fold(pre);
    }
  }

  window.bookCodeLines = { wrap: wrap, fold: fold, wrapAll: wrapAll }; // for the tests
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", wrapAll);
  } else {
    wrapAll();
  }
})();
