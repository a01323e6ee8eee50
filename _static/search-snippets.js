// Search results (search.html): each result's snippet reads as the chapter's prose.
//
// Sphinx 7.4's searchtools.js makes a snippet when it shows a result: it fetches the page, takes
// the text of its [role="main"] element (Search.htmlToText) and cuts 240 characters around the
// first match. On this theme that element also holds the article's header, whose "Contents"
// list opens the text ("Contents 0.1 Self-attention treats its input as a set 0.2 ..."), and the
// page's formulas are still TeX source there (MathJax typesets them only in a window), so
// snippets showed "\(N \times N\)". Search.htmlToText is replaced here by one that reads the
// article only, leaves out code cells and their outputs, and writes each formula as plain text
// ("N × N"). searchtools.js looks Search.htmlToText up each time it makes a snippet, after the
// page has loaded, so setting it on DOMContentLoaded is in time.
(function () {
  "use strict";

  const SYMBOLS = {
    times: "×", cdot: "·", to: "→", rightarrow: "→", leftarrow: "←", mapsto: "↦",
    Rightarrow: "⇒", iff: "⇔", le: "≤", leq: "≤", ge: "≥", geq: "≥", ne: "≠", neq: "≠",
    approx: "≈", sim: "∼", equiv: "≡", in: "∈", notin: "∉", subset: "⊂", cup: "∪", cap: "∩",
    ldots: "…", cdots: "⋯", dots: "…", infty: "∞", pm: "±", top: "⊤", sum: "Σ", prod: "Π",
    partial: "∂", nabla: "∇", odot: "⊙", otimes: "⊗", oplus: "⊕", circ: "∘", lfloor: "⌊",
    rfloor: "⌋", lceil: "⌈", rceil: "⌉", langle: "⟨", rangle: "⟩", mid: "|", vert: "|",
    alpha: "α", beta: "β", gamma: "γ", delta: "δ", epsilon: "ε", varepsilon: "ε", zeta: "ζ",
    eta: "η", theta: "θ", kappa: "κ", lambda: "λ", mu: "μ", nu: "ν", xi: "ξ", pi: "π",
    rho: "ρ", sigma: "σ", tau: "τ", phi: "φ", varphi: "φ", chi: "χ", psi: "ψ", omega: "ω",
    Gamma: "Γ", Delta: "Δ", Theta: "Θ", Lambda: "Λ", Pi: "Π", Sigma: "Σ", Phi: "Φ", Omega: "Ω",
    bmod: " mod ", pmod: " mod ", quad: " ", qquad: " ", "{": "{", "}": "}", "%": "%", "&": "&",
    "_": "_", "#": "#", ",": " ", ";": " ", ":": " ", "!": "", " ": " ", "\\": " ",
  };
  const BLACKBOARD = { R: "ℝ", N: "ℕ", Z: "ℤ", Q: "ℚ", C: "ℂ", E: "𝔼" };

  /** A formula's TeX source -> plain text: "\\(X \\in \\mathbb{R}^{N \\times C}\\)" -> "X ∈ ℝ^(N × C)". */
  function texToText(tex) {
    const symbol = (name) => (name in SYMBOLS ? SYMBOLS[name] : null);
    let text = tex
      .replace(/^\s*(\\\(|\\\[|\$\$?)|(\\\)|\\\]|\$\$?)\s*$/g, "")
      .replace(/\\(begin|end)\{[^{}]*\}/g, " ")
      .replace(/\\(left|right|big|Big|bigg|Bigg)\b\\?/g, "")
      .replace(/\\mathbb\{(\w)\}/g, (_, letter) => BLACKBOARD[letter] || letter)
      .replace(/\\sqrt\s*(\w)/g, "√$1")
      // Symbols first (they take no argument), so that "^{\\top}" is one character: "^⊤".
      .replace(/\\([A-Za-z]+)(?![A-Za-z])/g, (match, name) =>
        symbol(name) === null ? match : ` ${symbol(name)} `)
      .replace(/\\([^A-Za-z])/g, (_, c) => (symbol(c) === null ? c : symbol(c)));
    // Then the commands with arguments, innermost braces first: \frac{a}{b} -> a/b,
    // \sqrt{d} -> √d, x^{ab} -> x^(ab), \text{a} / \mathrm{a} / \operatorname{a} -> a.
    const group = (a) => (a.trim().length > 1 ? `(${a.trim()})` : a.trim());
    for (let i = 0; i < 10; i++) {
      const before = text;
      text = text
        .replace(/\\[dt]?frac\s*\{([^{}]*)\}\s*\{([^{}]*)\}/g, (_, a, b) => `${group(a)}/${group(b)}`)
        .replace(/\\sqrt\s*\{([^{}]*)\}/g, (_, a) => `√${group(a)}`)
        .replace(/([_^])\s*\{([^{}]*)\}/g, (_, op, a) => op + group(a))
        .replace(/\\([A-Za-z]+)\s*\{([^{}]*)\}/g, (match, name, a) =>
          /^([dt]?frac|sqrt)$/.test(name) ? match : a);
      if (text === before) break;
    }
    return text
      .replace(/\\([A-Za-z]+)/g, "$1") // any other command: its name ("\\log" -> "log")
      .replace(/[{}&]/g, "")
      .replace(/([_^])\s+/g, "$1")
      .replace(/\s+/g, " ")
      .replace(/\s*([,.;:)\]])/g, "$1")
      .replace(/([(\[])\s*/g, "$1")
      .trim();
  }

  /** The text a result's snippet is cut from: the article (or its section `anchor`) as prose. */
  function htmlToText(htmlString, anchor) {
    const doc = new DOMParser().parseFromString(htmlString, "text/html");
    const article = doc.querySelector(".bd-article") || doc.querySelector('[role="main"]');
    if (!article) return "";
    for (const el of article.querySelectorAll(".headerlink, script, style, div.cell")) {
      el.remove();
    }
    for (const math of article.querySelectorAll(".math")) {
      math.replaceWith(doc.createTextNode(` ${texToText(math.textContent)} `));
    }
    const section = anchor && anchor.startsWith("#")
      ? doc.getElementById(decodeURIComponent(anchor.slice(1)))
      : null;
    const block = section && article.contains(section) ? section : article;
    return block.textContent.replace(/\s+/g, " ").replace(/ ([,.;:!?)])/g, "$1").trim();
  }

  function install() {
    // searchtools.js declares `const Search` at the top level: a global binding, not a property
    // of window.
    if (typeof Search !== "undefined") Search.htmlToText = htmlToText; // eslint-disable-line no-undef
  }
  install();
  document.addEventListener("DOMContentLoaded", install);
  window.bookSearchSnippets = { texToText: texToText, htmlToText: htmlToText }; // for the tests
})();
