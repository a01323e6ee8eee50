/* The browser half of companion's explorers (see companion/live.py for the Python half).
 *
 * Every explorer output holds a root element of class cx-explorer, with its settings and data as
 * JSON in a child script element of class cx-data, then this script. The script turns every
 * root of the page that is not live yet into controls (sliders; toggle buttons for a control with
 * named choices) and SVG figures, and redraws the figures whenever a control changes: no kernel,
 * no server, no network. It needs no ids (so outputs stay
 * deterministic) and running it twice is harmless (a root is marked live once built).
 *
 * Numbers: the relative index is computed here with the formula of companion.relative (offset,
 * shift, multiply, sum); the bias is a lookup into the bias table companion embedded (float32,
 * base64); similarities are read from the matrix companion computed. Every drawn cell carries its
 * exact value in data-value, which the browser tests compare with companion's.
 */
(function () {
  "use strict";
  const SVG = "http://www.w3.org/2000/svg";
  const CELL = 44; // the side of a window cell, in SVG units (1 unit = 1 CSS px at full size)
  const FONT = 13; // text in cells and titles, SVG units
  const TICK = 11;

  function el(tag, attrs, children) {
    const node = tag.startsWith("svg:")
      ? document.createElementNS(SVG, tag.slice(4))
      : document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value !== null && value !== undefined) node.setAttribute(key, String(value));
    }
    for (const child of children || []) {
      node.append(child);
    }
    return node;
  }

  /** base64 of little-endian float32 values -> their exact values as numbers. */
  function float32s(base64) {
    const bytes = Uint8Array.from(atob(base64), (c) => c.charCodeAt(0));
    const view = new DataView(bytes.buffer);
    return Array.from({ length: bytes.length / 4 }, (_, i) => view.getFloat32(4 * i, true));
  }

  /** matplotlib's lookup: a 256-colour table, x in [0, 1] -> entry floor(256 x), clipped. */
  function colour(table, vmin, vmax, value) {
    const x = vmax > vmin ? (value - vmin) / (vmax - vmin) : 0;
    const i = Math.min(table.length - 1, Math.max(0, Math.floor(x * table.length)));
    return table[i];
  }

  /** Black text on light cells, white on dark ones (the rule of companion.explorers._draw_grid). */
  function ink(hex) {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255);
    return 0.299 * r + 0.587 * g + 0.114 * b > 0.5 ? "black" : "white";
  }

  /** Python's f"{value:.{decimals}f}", without a "-0.00". */
  function fixed(value, decimals) {
    const text = value.toFixed(decimals);
    return Number(text) === 0 ? text.replace("-", "") : text;
  }

  function titleLines(lines, x, y) {
    return lines.map((line, i) =>
      el("svg:text", {
        x: x,
        y: y + i * (FONT + 4),
        "text-anchor": "middle",
        "font-size": FONT,
        "font-weight": i === 0 ? "bold" : null,
        fill: "currentColor",
      }, [line]),
    );
  }

  /**
   * One grid of rows x cols cells as an <svg>: cell (r, c) coloured fill(r, c), written text(r, c)
   * (or nothing when text is null), described hint(r, c) on hover (when given), its exact value in
   * data-value; the marked cell outlined. Tick labels count cells from origin (default 0): a
   * label k sits on cell k + origin.
   */
  function grid(spec) {
    const { name, rows, cols, title, marked, fill, text, hint, value, onPick } = spec;
    const cell = spec.cell || CELL;
    const origin = spec.origin || 0;
    const lines = title.length;
    const top = 8 + lines * (FONT + 4) + TICK + 4;
    // Wide enough for the title (bold, ~7.4 units a character), the grid centred below it.
    const gridWidth = TICK * 2 + 6 + cols * cell + 8;
    const width = Math.max(gridWidth, 10 + 7.4 * Math.max(...title.map((t) => t.length)));
    const left = TICK * 2 + 6 + (width - gridWidth) / 2;
    const height = top + rows * cell + 6;
    const svg = el("svg:svg", {
      class: "cx-panel",
      "data-panel": name,
      viewBox: `0 0 ${width} ${height}`,
      width: width,
      role: "img",
      "aria-label": title.join(" "),
    });
    svg.style.maxWidth = `${width}px`;
    svg.append(...titleLines(title, width / 2, 8 + FONT));
    // Tick labels every 1, 2, 5, 10, ... cells: at least 24 units apart, on multiples of it.
    const tickEvery = [1, 2, 5, 10, 20, 50, 100].find((k) => k * cell >= 24) || 100;
    const ticked = (n) => Array.from({ length: n }, (_, i) => i)
      .filter((i) => (((i - origin) % tickEvery) + tickEvery) % tickEvery === 0);
    for (const c of ticked(cols)) {
      svg.append(el("svg:text", {
        x: left + (c + 0.5) * cell, y: top - 4, "text-anchor": "middle", "font-size": TICK,
        fill: "currentColor", class: "cx-tick", "data-axis": "col", "data-at": c,
      }, [String(c - origin)]));
    }
    for (const r of ticked(rows)) {
      svg.append(el("svg:text", {
        x: left - 4, y: top + (r + 0.5) * cell + TICK / 3, "text-anchor": "end", "font-size": TICK,
        fill: "currentColor", class: "cx-tick", "data-axis": "row", "data-at": r,
      }, [String(r - origin)]));
    }
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const background = fill(r, c);
        const g = el("svg:g", {
          class: "cx-cell",
          "data-row": r,
          "data-col": c,
          "data-value": value(r, c),
        });
        g.append(el("svg:rect", {
          x: left + c * cell, y: top + r * cell, width: cell, height: cell,
          fill: background, stroke: "#999", "stroke-width": cell > 8 ? 0.8 : 0,
        }));
        if (text) {
          g.append(el("svg:text", {
            x: left + (c + 0.5) * cell, y: top + (r + 0.5) * cell + FONT / 3,
            "text-anchor": "middle", "font-size": FONT, fill: ink(background),
          }, [text(r, c)]));
        }
        if (hint) g.append(el("svg:title", {}, [hint(r, c)])); // shown on hover
        if (onPick) g.addEventListener("click", () => onPick(r, c));
        svg.append(g);
      }
    }
    // Outlines cell (r, c) and the span - 1 cells right of it (replacing the previous outline).
    svg.cxMark = (r, c, span) => {
      svg.querySelectorAll(".cx-marked").forEach((m) => m.remove());
      const inset = Math.min(1.5, cell / 6); // the outline stays inside small cells
      svg.append(el("svg:rect", {
        class: "cx-marked", x: left + c * cell + inset, y: top + r * cell + inset,
        width: (span || 1) * cell - 2 * inset, height: cell - 2 * inset, fill: "none",
        stroke: "#d62728", "stroke-width": 2 * inset, "pointer-events": "none",
      }));
    };
    if (marked) svg.cxMark(...marked);
    return svg;
  }

  /** A horizontal colour bar from vmin to vmax, labelled. */
  function colourBar(table, vmin, vmax, label, format) {
    const width = 260;
    const svg = el("svg:svg", {
      class: "cx-panel cx-colourbar", viewBox: `0 0 ${width + 40} 52`, width: width + 40,
      "aria-hidden": "true",
    });
    svg.style.maxWidth = `${width + 40}px`;
    const steps = 64;
    for (let i = 0; i < steps; i++) {
      const v = vmin + ((i + 0.5) / steps) * (vmax - vmin);
      svg.append(el("svg:rect", {
        x: 20 + (i * width) / steps, y: 4, width: width / steps + 0.5, height: 12,
        fill: colour(table, vmin, vmax, v),
      }));
    }
    [[vmin, 20, "start"], [vmax, 20 + width, "end"]].forEach(([v, x, anchor]) => {
      svg.append(el("svg:text", {
        x: x, y: 30, "text-anchor": anchor, "font-size": TICK, fill: "currentColor",
      }, [format(v)]));
    });
    svg.append(el("svg:text", {
      x: 20 + width / 2, y: 46, "text-anchor": "middle", "font-size": TICK, fill: "currentColor",
    }, [label]));
    return svg;
  }

  // ----- the views: state (the controls' values) -> caption and panels --------------------------

  /** The query's row of every step of relative_position_index (companion.relative). */
  function relativeIndex(wh, ww, row, col) {
    const steps = { offset: [], shifted: [], multiplied: [], index: [] };
    for (let i = 0; i < wh; i++) {
      for (const key of Object.keys(steps)) steps[key].push([]);
      for (let j = 0; j < ww; j++) {
        const offset = [row - i, col - j];
        const shifted = [offset[0] + wh - 1, offset[1] + ww - 1];
        const multiplied = [shifted[0] * (2 * ww - 1), shifted[1]];
        steps.offset[i].push(offset);
        steps.shifted[i].push(shifted);
        steps.multiplied[i].push(multiplied);
        steps.index[i].push(multiplied[0] + multiplied[1]);
      }
    }
    return steps;
  }


  // ----- resizing a table (companion.resize) -----------------------------------------------

  /** (rows x cols) -> (side x side): the separable resize of companion.resize. */
  function resizeImage(image, side, method) {
    // resize_bias_table returns the table itself when the window is unchanged (the geometric
    // weights would not: their ratio q is at least 1.01, a slight stretch).
    if (image.length === side && image[0].length === side) return image;
    const weights = method === "bicubic" ? bicubicWeights : geometricWeights;
    const ay = weights(image.length, side);
    const ax = weights(image[0].length, side);
    const apply = (w, v) => w.reduce((sum, [i, wi]) => sum + wi * v[i], 0);
    const rows = image.map((row) => ax.map((w) => apply(w, row))); // along dx
    return ay.map((w) => rows[0].map((_, c) => apply(w, rows.map((r) => r[c])))); // along dy
  }

  /** PyTorch's bicubic (align_corners=False, A = -0.75): [[source index, weight], ...] per
   * target, the indices clamped to the border. */
  function bicubicWeights(from, to) {
    const A = -0.75;
    const near = (t) => ((A + 2) * t - (A + 3)) * t * t + 1; // |t| <= 1
    const far = (t) => ((A * t - 5 * A) * t + 8 * A) * t - 4 * A; // 1 < |t| < 2
    const clamp = (i) => Math.min(from - 1, Math.max(0, i));
    return Array.from({ length: to }, (_, i) => {
      const source = (i + 0.5) * (from / to) - 0.5;
      const x0 = Math.floor(source);
      const t = source - x0;
      return [[x0 - 1, far(t + 1)], [x0, near(t)], [x0 + 1, near(1 - t)], [x0 + 2, far(2 - t)]]
        .map(([k, w]) => [clamp(k), w]);
    });
  }

  /** BEiT's spacing (companion.resize.geometric_positions) and linear interpolation at the
   * new integer offsets, the ends held (linear_interpolation_matrix). */
  function geometricWeights(from, to) {
    const steps = Math.floor(from / 2);
    const target = Math.floor(to / 2);
    let low = 1.01;
    let high = 1.5;
    let q = (low + high) / 2;
    while (high - low > 1e-6) {
      q = (low + high) / 2;
      const reach = (1 - q ** steps) / (1 - q);
      if (reach > target) high = q; else low = q;
    }
    const outward = [];
    for (let k = 0, sum = 0; k < steps; k++) outward.push((sum += q ** k));
    const points = [...outward.map((v) => -v).reverse(), 0, ...outward];
    return Array.from({ length: to }, (_, i) => {
      const t = i - target;
      let right = points.findIndex((p) => p >= t);
      right = Math.min(points.length - 1, Math.max(1, right < 0 ? points.length - 1 : right));
      const left = right - 1;
      const w = Math.min(1, Math.max(0, (t - points[left]) / (points[right] - points[left])));
      return [[left, 1 - w], [right, w]];
    });
  }

  const VIEWS = {
    "relative-index": function (s, data, pick) {
      const { wh, ww, row, col } = s;
      const steps = relativeIndex(wh, ww, row, col);
      const pair = (p) => `(${p[0]},${p[1]})`;
      const widest = Math.max(
        ...["offset", "shifted", "multiplied"].flatMap((k) => steps[k].flat().map(pair))
          .map((t) => t.length),
      );
      const cell = Math.max(CELL, widest * 7.6 + 6);
      const white = data.colormaps.Greys[0];
      const pairs = (name, title) => grid({
        name, rows: wh, cols: ww, title, cell, marked: [row, col], onPick: pick,
        fill: () => white,
        text: (r, c) => pair(steps[name][r][c]),
        value: (r, c) => JSON.stringify(steps[name][r][c]),
      });
      const top = (2 * wh - 1) * (2 * ww - 1) - 1;
      return {
        caption: `Query cell (${row}, ${col}) (token ${row * ww + col}) of a ${wh}×${ww} window: `
          + "each key cell's value",
        panels: [
          pairs("offset", ["step 3. offset = query − key", "(dy, dx)"]),
          pairs("shifted", [`step 4. shift: + (${wh - 1}, ${ww - 1})`, "(Wh − 1, Ww − 1)"]),
          pairs("multiplied", [
            `step 5. row part × (2·Ww − 1) = ${2 * ww - 1}`, "(row part, column part)",
          ]),
          grid({
            name: "index", rows: wh, cols: ww, cell, marked: [row, col], onPick: pick,
            title: ["step 6. index = row part + column part", "(row of the bias table)"],
            fill: (r, c) => colour(data.colormaps.viridis, 0, top, steps.index[r][c]),
            text: (r, c) => String(steps.index[r][c]),
            value: (r, c) => String(steps.index[r][c]),
          }),
        ],
      };
    },

    bias: function (s, data, pick) {
      const { head, row, col } = s;
      const [wh, ww] = data.window;
      const n = wh * ww;
      const heads = data.bound.length;
      const table = data.tableValues || (data.tableValues = float32s(data.table));
      // B[head, q, k] = table[index[q, k], head] (companion.relative.lookup_bias), the table
      // (T, H) row-major and index[q] the query's row of relativeIndex.
      const rowOf = (r, c) => relativeIndex(wh, ww, r, c).index.flat();
      const lookup = (i) => table[i * heads + head];
      const token = row * ww + col;
      const keys = rowOf(row, col);
      const bound = data.bound[head];
      const map = data.colormaps.RdBu_r;
      const shade = (v) => colour(map, -bound, bound, v);
      const written = (v) => fixed(v, data.decimals[head]);
      // B[head] (N x N) is drawn once per head; moving the query only moves its outline. About
      // 350 units wide whatever N (22-unit cells for a 4x4 window's 16x16 matrix, 7 for a 7x7
      // window's 49x49), so that every cell and tick label can be read.
      if (!data.matrixPanel || data.matrixPanel.head !== head) {
        const cell = Math.max(2, Math.min(22, Math.floor(352 / n)));
        const rows = Array.from({ length: n }, (_, q) => rowOf(Math.floor(q / ww), q % ww));
        data.matrixPanel = {
          head: head,
          svg: grid({
            name: "matrix", rows: n, cols: n, cell: cell,
            title: [`B[head ${head}]: ${n}×${n}`, "query row outlined"],
            marked: null,
            onPick: (q) => pick(Math.floor(q / ww), q % ww),
            fill: (q, k) => shade(lookup(rows[q][k])),
            text: null,
            hint: (q, k) => `B[${head}, ${q}, ${k}] = ${written(lookup(rows[q][k]))}`,
            value: (q, k) => String(lookup(rows[q][k])),
          }),
        };
      }
      const matrix = data.matrixPanel.svg;
      matrix.cxMark(token, 0, n);
      return {
        caption: `Relative position bias of head ${head} for query cell (${row}, ${col})`,
        panels: [
          matrix,
          grid({
            name: "row", rows: wh, cols: ww, marked: [row, col], onPick: pick,
            title: [
              `row ${token} on the ${wh}×${ww} window`, `(query cell (${row}, ${col}) outlined)`,
            ],
            fill: (r, c) => shade(lookup(keys[r * ww + c])),
            text: (r, c) => written(lookup(keys[r * ww + c])),
            value: (r, c) => String(lookup(keys[r * ww + c])),
          }),
          colourBar(map, -bound, bound, "bias added to the logit", written),
        ],
      };
    },

    similarity: function (s, data, pick) {
      const { row, col } = s;
      const [gh, gw] = data.grid;
      const matrix = data.matrixValues || (data.matrixValues = float32s(data.matrix));
      const patch = row * gw + col;
      const at = (r, c) => matrix[patch * gh * gw + r * gw + c];
      let low = 0.999;
      for (let k = 0; k < gh * gw; k++) low = Math.min(low, matrix[patch * gh * gw + k]);
      const map = data.colormaps.viridis;
      const annotate = Math.max(gh, gw) <= data.annotate;
      return {
        caption: `Patch (${row}, ${col}) (token ${patch}) of the ${gh}×${gw} grid`,
        panels: [
          grid({
            name: "similarity", rows: gh, cols: gw, cell: annotate ? CELL : 26,
            marked: [row, col], onPick: pick,
            title: [`Cosine similarity of patch (${row}, ${col})'s`,
              "position embedding to every patch"],
            fill: (r, c) => colour(map, low, 1, at(r, c)),
            text: annotate ? (r, c) => fixed(at(r, c), 2) : null,
            hint: annotate ? null : (r, c) => `patch (${r}, ${c}): ${fixed(at(r, c), 2)}`,
            value: (r, c) => String(at(r, c)),
          }),
          colourBar(map, low, 1, "cosine similarity", (v) => fixed(v, 2)),
        ],
      };
    },

    // Chapter 6 (companion.resize_explorer): an illustrative table resized to another window,
    // computed here with the formulas of companion.resize.resize_bias_table.
    resize: function (s, data) {
      const { old, head } = s;
      const size = s.new;
      const method = data.methods[s.method];
      const tables = data.tableValues || (data.tableValues = {});
      const table = tables[old] || (tables[old] = float32s(data.tables[String(old)]));
      const side = 2 * old - 1;
      const image = Array.from({ length: side }, (_, r) =>
        Array.from({ length: side }, (_, c) => table[(r * side + c) * 2 + head]));
      const resized = resizeImage(image, 2 * size - 1, method);
      let low = Infinity;
      let high = -Infinity;
      image.flat().forEach((v) => { low = Math.min(low, v); high = Math.max(high, v); });
      const map = data.colormaps.viridis;
      const picture = (name, values, window, label) => {
        const n = values.length;
        return grid({
          name, rows: n, cols: n, cell: Math.max(4, Math.floor(260 / n)),
          origin: window - 1, // ticks in offsets, as the static figure's axes
          title: [`head ${head}: ${label}`, `offsets ${-(window - 1)} … ${window - 1}`],
          marked: null,
          fill: (r, c) => colour(map, low, high, values[r][c]),
          text: null,
          hint: (r, c) => `offset (${r - (window - 1)}, ${c - (window - 1)}): `
            + fixed(values[r][c], 3),
          value: (r, c) => String(values[r][c]),
        });
      };
      return {
        caption: `Head ${head} of the ${old}×${old} table resized to ${size}×${size} (${method})`,
        panels: [
          picture("old", image, old, `${old}×${old}`),
          picture("new", resized, size, `${size}×${size}, ${method}`),
          colourBar(map, low, high, "bias", (v) => fixed(v, 2)),
        ],
      };
    },
  };

  // ----- controls ------------------------------------------------------------------------------

  /**
   * One control: a slider over [low, high], or, for a control with named choices (a resize
   * method, a head described in words), one toggle button per choice (radio inputs: one is
   * pressed, arrow keys move between them). Its value is the number either way. Returns the
   * control's element and update(value, top), which shows a value (and a slider's new maximum).
   */
  function controlOf(c, value, top, onChange) {
    if (c.choices && c.choices.length) {
      const buttons = c.choices.map((choice, i) => {
        const input = el("input", {
          type: "radio", name: c.name, value: c.low + i, "aria-label": `${c.label}: ${choice}`,
        });
        input.checked = c.low + i === value;
        input.addEventListener("input", () => onChange(Number(input.value)));
        return { input, label: el("label", { class: "cx-choice" }, [input, el("span", {}, [choice])]) };
      });
      const group = el("span", { class: "cx-choices", role: "radiogroup", "aria-label": c.label },
        buttons.map((b) => b.label));
      return {
        element: el("div", { class: "cx-control cx-control-choice" }, [
          el("span", { class: "cx-label" }, [c.label]), group,
        ]),
        update: (v) => buttons.forEach((b) => { b.input.checked = Number(b.input.value) === v; }),
      };
    }
    const input = el("input", {
      type: "range", min: c.low, max: top, step: 1, value: value, name: c.name,
      "aria-label": c.label,
    });
    const shown = el("output", { "aria-hidden": "true" }, [String(value)]);
    input.addEventListener("input", () => onChange(Number(input.value)));
    return {
      element: el("label", { class: "cx-control" }, [
        el("span", { class: "cx-label" }, [c.label]), input, shown,
      ]),
      update: (v, max) => {
        input.max = max;
        input.value = v;
        shown.textContent = String(v);
      },
    };
  }

  function build(root) {
    const spec = JSON.parse(root.querySelector("script.cx-data").textContent);
    const view = VIEWS[spec.view];
    const state = {};
    const inputs = {};
    spec.controls.forEach((c) => { state[c.name] = c.value; });
    const high = (c) => (c.boundBy ? state[c.boundBy] - 1 : c.high);

    // A form of its own: radio buttons group by name within their form, so two explorers on one
    // page (or two front ends' copies of one) never share a group.
    const controls = el("form", { class: "cx-controls" });
    controls.addEventListener("submit", (event) => event.preventDefault());
    spec.controls.forEach((c) => {
      const control = controlOf(c, state[c.name], high(c), (v) => set({ [c.name]: v }));
      controls.append(control.element);
      inputs[c.name] = { update: control.update, control: c };
    });
    const caption = el("p", { class: "cx-caption", "aria-live": "polite" });
    const figure = el("div", { class: "cx-figure" });

    function pick(r, c) {
      const names = Object.keys(inputs);
      if (names.includes("row") && names.includes("col")) set({ row: r, col: c });
    }

    function set(changes) {
      Object.assign(state, changes);
      // A bound control follows its bound back in (a query row when the window shrinks).
      for (const { update, control } of Object.values(inputs)) {
        const top = high(control);
        state[control.name] = Math.max(control.low, Math.min(state[control.name], top));
        update(state[control.name], top);
      }
      const drawn = view(state, spec.data, pick);
      caption.textContent = drawn.caption;
      figure.replaceChildren(...drawn.panels);
      root.dataset.state = JSON.stringify(state);
    }

    const live = root.querySelector(".cx-live");
    live.replaceChildren(controls, caption, figure);
    set({});
    root.classList.add("cx-is-live");
  }

  document.querySelectorAll(".cx-explorer:not(.cx-is-live)").forEach((root) => {
    try {
      build(root);
    } catch (error) {
      // The static figure stays visible; the console says why the live one is missing.
      console.error("companion explorer:", error);
    }
  });
})();
