// The switch between the English book and the Chinese edition, on every page of both.
// The Chinese edition is served under zh/ of the English site, page for page (tools/zh_edition.py
// generates it from the same notebooks), so the other language's page is the same path with zh/
// added or removed. Sphinx writes the path from a page to its site's root in data-content_root.
// The glossary exists only in the Chinese edition: its switch opens the English book's start.
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
    where.prepend(link);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", addSwitch);
  } else {
    addSwitch();
  }
})();
