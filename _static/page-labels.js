// The header's and the explorers' labels in the page's language, and the link to the PDF.
//
// Sphinx's and the themes' Chinese catalogues leave some of the header's tooltips and labels in
// English ("Color mode", "System Settings", "Launch on Colab", "Link to this heading", the sidebar
// toggles) and write the print button's "Print to PDF" in a traditional form (列印); in the Chinese
// edition they are set here in its words, and so are the explorers' (their titles, controls,
// captions and panels come from the code, in English, and are redrawn as the reader moves a
// control: each redraw is translated as it happens). Every page's download menu also links the whole book
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

  // The explorers' words (companion/figures/widgets.py and assets/explorer.js write them in
  // English, as the code's names are), whole texts: titles, control labels, captions, panel
  // titles, colour bar labels and hover hints, whose numbers change as the reader moves them.
  const CELL = "\\((\\d+), (\\d+)\\)";
  const EXPLORER = [
    ["Relative position index for one query", "单个 query 的相对位置索引"],
    ["Relative position bias B for one head and one query", "单个头、单个 query 的相对位置偏置 B"],
    ["Position embedding similarity for one patch", "单个图块的位置编码相似度"],
    ["Resizing a bias table: where do the values go\\?", "缩放偏置表：各个值去了哪里？"],
    ["Static figure for the starting values: the controls need JavaScript\\.",
      "初始值下的静态图：交互控件需要 JavaScript。"],
    ["window rows Wh", "窗口行数 Wh"],
    ["window columns Ww", "窗口列数 Ww"],
    ["query row", "query 所在行"],
    ["query column", "query 所在列"],
    ["patch row", "图块所在行"],
    ["patch column", "图块所在列"],
    ["head", "头"],
    ["old window", "原窗口"],
    ["new window", "新窗口"],
    ["method", "方法"],
    [`Query cell ${CELL} \\(token (\\d+)\\) of a (\\d+)×(\\d+) window: each key cell's value`,
      "$4×$5 窗口中的 query 单元格 ($1, $2)（token $3）：每个 key 单元格的值"],
    ["step 3\\. offset = query − key", "第 3 步：偏移 = query − key"],
    [`step 4\\. shift: \\+ ${CELL}`, "第 4 步：平移 + ($1, $2)"],
    ["step 5\\. row part × \\(2·Ww − 1\\) = (\\d+)", "第 5 步：行分量 × (2·Ww − 1) = $1"],
    ["\\(row part, column part\\)", "（行分量，列分量）"],
    ["step 6\\. index = row part \\+ column part", "第 6 步：索引 = 行分量 + 列分量"],
    ["\\(row of the bias table\\)", "（偏置表的行号）"],
    [`Relative position bias of head (\\d+) for query cell ${CELL}`,
      "头 $1 对 query 单元格 ($2, $3) 的相对位置偏置"],
    ["B\\[head (\\d+)\\]: (\\d+)×(\\d+)", "B[头 $1]：$2×$3"],
    ["query row outlined", "已框出 query 所在行"],
    ["row (\\d+) on the (\\d+)×(\\d+) window", "B 的第 $1 行，排成 $2×$3 窗口"],
    [`\\(query cell ${CELL} outlined\\)`, "（已框出 query 单元格 ($1, $2)）"],
    ["bias added to the logit", "加到 logit 上的偏置"],
    [`Patch ${CELL} \\(token (\\d+)\\) of the (\\d+)×(\\d+) grid`,
      "$4×$5 网格中的图块 ($1, $2)（token $3）"],
    [`Cosine similarity of patch ${CELL}'s`, "图块 ($1, $2) 的位置编码"],
    ["position embedding to every patch", "与每个图块的余弦相似度"],
    ["cosine similarity", "余弦相似度"],
    [`patch ${CELL}: (.+)`, "图块 ($1, $2)：$3"],
    [`offset \\((-?\\d+), (-?\\d+)\\): (.+)`, "偏移 ($1, $2)：$3"],
    ["head (\\d+): (.+)", "头 $1：$2"],
    ["offsets (-?\\d+) … (-?\\d+)", "偏移 $1 … $2"],
    ["Head (\\d+) of the (\\d+)×(\\d+) table resized to (\\d+)×(\\d+) \\((.+)\\)",
      "头 $1 的 $2×$3 表缩放到 $4×$5（$6）"],
    ["bias", "偏置"],
  ].map(([english, chinese]) => [new RegExp(`^${english}$`), chinese]);

  /** `text` in the page's words, or null when no rule matches it. */
  function explorerWords(text) {
    const trimmed = text.trim();
    for (const [pattern, chinese] of EXPLORER) {
      if (pattern.test(trimmed)) return text.replace(trimmed, trimmed.replace(pattern, chinese));
    }
    return null;
  }

  /** Every text and label of one explorer in Chinese; again after each redraw. */
  function translateExplorer(root) {
    const apply = () => {
      const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let node = walker.nextNode(); node; node = walker.nextNode()) {
        if (node.parentElement.closest("script, style")) continue;
        const words = explorerWords(node.textContent);
        if (words !== null) node.textContent = words;
      }
      for (const el of root.querySelectorAll("[aria-label]")) {
        const label = el.getAttribute("aria-label");
        if (el.tagName.toLowerCase() === "svg") {
          // A panel is labelled by its title's lines (explorer.js: the svg's first texts, at the
          // title's size), joined: the lines, translated above, label it again.
          const lines = Array.from(el.children).filter((c) => c.tagName.toLowerCase() === "text"
            && c.getAttribute("font-size") === "13");
          const joined = lines.map((line) => line.textContent).join(" ");
          if (lines.length && joined !== label) el.setAttribute("aria-label", joined);
          continue;
        }
        const [name, choice] = label.split(/: (?=[^:]*$)/);
        const words = explorerWords(label) ?? (choice && explorerWords(name));
        if (words !== null && words !== undefined) {
          el.setAttribute("aria-label", explorerWords(label) ?? `${words}: ${choice}`);
        }
      }
    };
    apply();
    // A rule never matches its own translation, so the observer's changes end here.
    new MutationObserver(apply).observe(root, { childList: true, subtree: true, characterData: true });
  }
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
    if (chinese()) document.querySelectorAll(".cx-explorer").forEach(translateExplorer);
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", run);
  } else {
    run();
  }
})();
