// The header's labels in the page's language, and the link to the edition's PDF.
//
// Sphinx's and the themes' Chinese catalogues leave some of the header's tooltips and labels in
// English ("Color mode", "System Settings", "Launch on Colab", "Link to this heading", the sidebar
// toggles) and write the print button's "Print to PDF" in a traditional form (列印); in the Chinese
// edition they are set here in its words. Every page's download menu also links the whole book
// as one PDF, its edition's: the Pages workflow (.github/workflows/pages.yml) publishes book.pdf
// at each edition's root (`make pdf` writes them, tools/book_pdf.py).
(function () {
  "use strict";

  const CHINESE = {
    "Color mode": "颜色模式",
    "System Settings": "跟随系统",
    "Launch on Colab": "在 Colab 中打开",
    "Link to this heading": "链接到此标题",
    "Toggle primary sidebar": "显示或隐藏目录",
    "Toggle secondary sidebar": "显示或隐藏本页目录",
    "列印成 PDF": "打印成 PDF",
    "Back to top": "回到顶部",
  };
  const ATTRIBUTES = ["title", "aria-label", "data-bs-title", "data-bs-original-title"];
  const PDF = {
    en: { text: "Book (PDF)", title: "The whole book as one PDF" },
    zh: { text: "全书 PDF", title: "整本书的 PDF 版" },
  };

  const chinese = () => (document.documentElement.lang || "").toLowerCase().startsWith("zh");

  function translate() {
    if (!chinese()) return;
    for (const el of document.querySelectorAll(ATTRIBUTES.map((a) => `[${a}]`).join(","))) {
      for (const name of ATTRIBUTES) {
        const value = el.getAttribute(name);
        if (value && value.trim() in CHINESE) el.setAttribute(name, CHINESE[value.trim()]);
      }
    }
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      const text = node.textContent.trim();
      if (text in CHINESE && !node.parentElement.closest("article")) {
        node.textContent = node.textContent.replace(text, CHINESE[text]);
      }
    }
  }

  function addPdfLink() {
    const menu = document.querySelector(".dropdown-download-buttons ul.dropdown-menu");
    if (!menu || menu.querySelector(".book-pdf-link")) return;
    const root = new URL(document.documentElement.dataset.content_root || "./", window.location.href);
    const words = chinese() ? PDF.zh : PDF.en;
    const link = document.createElement("a");
    link.className = "btn btn-sm dropdown-item book-pdf-link";
    link.href = new URL("book.pdf", root).href;
    link.title = words.title;
    link.textContent = words.text;
    const item = document.createElement("li");
    item.appendChild(link);
    menu.appendChild(item);
  }

  function run() {
    addPdfLink();
    translate();
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", run);
  } else {
    run();
  }
})();
