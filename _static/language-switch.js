// The switch between the English book and the Chinese edition, on every page of both.
// The Chinese edition is served under zh/ of the English site, page for page (tools/zh_edition.py
// generates it from the same notebooks), so the other language's page is the same path with zh/
// added or removed. Sphinx writes the path from a page to its site's root in data-content_root.
// The glossary exists only in the Chinese edition: its switch opens the English book's start.
// The switch keeps the reader's place: it opens the other page at the same section.
(function () {
  "use strict";

  const CHINESE_ONLY = ["book/glossary.html"];

  function counterpart() {
    const html = document.documentElement;
    const root = new URL(html.dataset.content_root || "./", window.location.href);
    const page = window.location.href.slice(root.href.length).split("#")[0];
    const chinese = (html.lang || "").toLowerCase().startsWith("zh");
    const english = CHINESE_ONLY.includes(page) ? "index.html" : page;
    const target = chinese ? new URL("../" + english, root) : new URL("zh/" + page, root);
    return { href: target.href, chinese: chinese };
  }

  function addSwitch() {
    if (document.querySelector(".book-language-switch")) return;
    const where = document.querySelector(".article-header-buttons");
    if (!where) return;
    const other = counterpart();
    const link = document.createElement("a");
    link.className = "btn btn-sm book-language-switch";
    link.href = other.href;
    link.textContent = other.chinese ? "English" : "中文";
    link.lang = other.chinese ? "en" : "zh-CN";
    link.hreflang = link.lang;
    link.title = other.chinese ? "Read this page in English" : "阅读本页的中文版";
    link.addEventListener("click", (event) => {
      if (event.button !== 0 || event.ctrlKey || event.metaKey || event.shiftKey) return;
      event.preventDefault();
      withSection(link.href).then((href) => window.location.assign(href));
    });
    where.prepend(link);
  }

  /** The sections of a page's article, in order: the two editions have the same ones (one
   *  translated Markdown cell per English cell), under ids made from each edition's headings. */
  function sections(doc) {
    return Array.from(doc.querySelectorAll("article.bd-article section[id]"));
  }

  /** The section the reader is in: the one named in the address, else the last whose heading
   *  is above the top third of the window (as the contents highlight reads it). */
  function currentSection() {
    const all = sections(document);
    const named = decodeURIComponent(window.location.hash.slice(1));
    const target = named && document.getElementById(named);
    if (target) {
      const section = target.closest("section[id]");
      if (section && all.includes(section)) return all.indexOf(section);
    }
    const line = window.innerHeight * 0.3;
    let found = -1;
    all.forEach((section, i) => {
      const heading = section.querySelector(":scope > h1, :scope > h2, :scope > h3, :scope > h4");
      if ((heading || section).getBoundingClientRect().top <= line) found = i;
    });
    return found;
  }

  /** `href` with the other edition's id of the reader's section (the page is fetched to read
   *  it: the editions' ids differ); `href` alone at the page's top, or if that fails. */
  function withSection(href) {
    const index = currentSection();
    if (index <= 0) return Promise.resolve(href);
    return fetch(href)
      .then((response) => (response.ok ? response.text() : Promise.reject(response.status)))
      .then((text) => {
        const other = sections(new DOMParser().parseFromString(text, "text/html"));
        return other.length === sections(document).length
          ? `${href.split("#")[0]}#${encodeURIComponent(other[index].id)}`
          : href;
      })
      .catch(() => href);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", addSwitch);
  } else {
    addSwitch();
  }
})();
