// In-page contents ("Contents" in the right sidebar): highlight the section the reader is in.
// pydata-sphinx-theme 0.17 highlights a heading only when it enters the top 30% of the window,
// so after scrolling up the highlight stays on the later section until the earlier heading comes
// back into view. Here the current section is the last heading above that same line, recomputed
// on every scroll, which agrees with the theme when scrolling down and corrects it going up.
(function () {
  function sync() {
    const nav = document.querySelector("#pst-page-toc-nav");
    if (!nav) return;
    const links = Array.from(nav.querySelectorAll("a[href^='#']"));
    const line = window.innerHeight * 0.3;
    let current = null;
    for (const link of links) {
      const target = document.getElementById(decodeURIComponent(link.hash.slice(1)));
      if (target && target.getBoundingClientRect().top <= line) current = link;
    }
    if (!current) current = links[0];
    for (const link of links) {
      const active = link === current;
      link.classList.toggle("active", active);
      if (active) link.setAttribute("aria-current", "true");
      else link.removeAttribute("aria-current");
    }
    nav.querySelectorAll(".toc-entry").forEach((entry) => {
      entry.classList.toggle("active", !!current && entry.contains(current));
    });
  }
  let queued = false;
  function onScroll() {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => {
      queued = false;
      sync();
    });
  }
  document.addEventListener("DOMContentLoaded", () => {
    window.addEventListener("scroll", onScroll, { passive: true });
    // Content drawn after the page loads (saved widgets, typeset formulas) moves the headings
    // without a scroll: recompute whenever the page's height changes too.
    if ("ResizeObserver" in window) new ResizeObserver(onScroll).observe(document.body);
    sync();
  });
})();
