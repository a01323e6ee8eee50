// Formulas fit the column. MathJax draws a formula at one size whatever the width of the page, and
// breaks no line inside one, so on a 390 px phone chapter 3's attention formula was 65 px wider
// than the column, and inline formulas such as chapter 5's (⌊r/(2M−1)⌋ − (M−1), …) ran past the
// right edge of the screen. Here a formula wider than the room it has (a display formula: its
// box; an inline one: the width of its paragraph or list item) is drawn smaller, just enough to
// fit, down to MIN_SCALE of its size. A display formula that would need less still scrolls
// sideways inside its own box (book.css draws the shadow that says so), never the page.
//
// The scale is set once MathJax has typeset the page (before MathJax.startup.promise resolves, so
// whatever waits for the typeset sees the fitted page), and again when the window's width changes
// (a phone turned) or a fold opens (its formulas had no width while it was closed). All formulas
// are reset, then all measured, then all scaled: one layout of the page, not one per formula.
(function () {
  "use strict";
  const MIN_SCALE = 0.7;
  const FORMULAS = ".bd-article mjx-container";
  const BLOCK = "p, li, dd, dt, td, th, figcaption, blockquote, div";

  /** The width a formula may take: its own box (display), or its block's content box (inline). */
  function room(box) {
    if (box.getAttribute("display") === "true") return box.clientWidth;
    const block = box.parentElement && box.parentElement.closest(BLOCK);
    if (!block) return 0;
    const style = getComputedStyle(block);
    return block.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
  }

  function fit(root) {
    const scope = root && root.querySelectorAll ? root : document;
    const found = [];
    for (const box of scope.querySelectorAll(FORMULAS)) {
      const math = box.querySelector(":scope > mjx-math");
      if (!math) continue;
      if (math.style.fontSize) math.style.fontSize = "";
      found.push({ box, math });
    }
    const scaled = [];
    for (const { box, math } of found) {
      const width = room(box);
      const need = box.getAttribute("display") === "true"
        ? box.scrollWidth
        : box.getBoundingClientRect().width;
      if (width <= 0 || need <= width + 1) continue; // hidden (a closed fold), or it fits
      // Rounded down to a tenth of a percent, and 1 % to spare, so that the scaled formula is
      // never a pixel over.
      const scale = Math.max(MIN_SCALE, Math.floor((990 * width) / need) / 1000);
      scaled.push([math, `${(100 * scale).toFixed(1)}%`]);
    }
    for (const [math, size] of scaled) math.style.fontSize = size;
  }

  const config = (window.MathJax = window.MathJax || {});
  if (config.startup && config.startup.promise) {
    // MathJax is already running (loaded before this script): fit once it has typeset.
    config.startup.promise.then(() => fit());
  } else {
    config.startup = config.startup || {};
    const pageReady = config.startup.pageReady;
    config.startup.pageReady = () =>
      (pageReady ? pageReady() : window.MathJax.startup.defaultPageReady()).then(() => fit());
  }

  let width = window.innerWidth;
  let queued = false;
  window.addEventListener("resize", () => {
    if (queued || window.innerWidth === width) return; // a phone's toolbar hiding: no refit
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      width = window.innerWidth;
      fit();
    });
  });
  // "toggle" does not bubble; a listener on the capture path still hears every <details>.
  document.addEventListener("toggle", (event) => fit(event.target), true);
})();
