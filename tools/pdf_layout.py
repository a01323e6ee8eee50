"""The printed book's layout: what ``tools/book_pdf.py`` does to the single-page HTML book before
Chromium prints it, and the print style it adds.

The page is the same HTML as the online book; for paper it gets

- front matter: a title page (title, subtitle, edition, build date, where the online book and the
  code live), the contents (chapters and their numbered sections, with page numbers and links)
  and the root page's introduction as "About this book", each labelled in the edition's language
  (``tools/book_pdf.py``'s ``EDITIONS``: "目录", "关于本书", ... in the Chinese edition);
- every fold printed open: a solution (``details.book-fold.solution``) under a heading-like
  "Solution N" title, a hidden cell's code without its "Show code cell" prompt, nothing left
  that only a screen can use (summaries, toggle and copy buttons, heading anchors);
- links that work on paper: each element id once (chapters repeat "summary", "exercises",
  "solution-1", ...), so that a link inside the PDF lands in its own chapter; a relative link to a
  file of the site points at the published site; a figure is no link at all;
- a layout for pages (``print_css``): each chapter on a new page, headings kept with what follows
  them, small code cells, outputs, tables and figures never split across two pages, and a figure
  printed on the page where the code that draws it ends (``MARK_KEEPS`` measures them at the
  printed width; a taller cell breaks inside its code, never before its figure), figures no
  taller than ``FIGURE_HEIGHT`` of a page, code and tables at 9 pt, a word of code or output
  never broken after its hyphen ("--config"), page numbers at the foot; a Chinese page
  (``:lang(zh)``) sets its Chinese characters in ``CJK_FONTS`` (Latin letters, digits and code
  stay in the English book's DejaVu fonts), and its title page's subtitle is upright (no CJK font
  has an italic to set it in).
"""

from __future__ import annotations

from pdf_pages import CONTENT_HEIGHT_PX, MARGIN_BOTTOM_MM, MARGIN_SIDE_MM, MARGIN_TOP_MM

#: A block (a cell, its input or output, a table, a figure) at most this share of a page high is
#: kept on one page; a taller one may break, or it would leave most of a page empty before it.
#: (At 0.5, 20 mid-chapter pages of the English PDF were at least 40 % empty; at 0.4, 11.)
KEEP_HEIGHT = 0.4
#: The tallest a figure is printed, as a share of the page's text area.
FIGURE_HEIGHT = 0.6
#: The Chinese edition's fonts for Chinese characters, in order of preference: Debian's
#: fonts-wqy-microhei or fonts-noto-cjk (tools/system_deps.sh installs the first), then any
#: other font with Simplified Chinese glyphs that fontconfig knows.
CJK_FONTS = '"WenQuanYi Micro Hei", "Noto Sans CJK SC", "Source Han Sans SC", "Droid Sans Fallback"'
CJK_MONO_FONTS = '"WenQuanYi Micro Hei Mono", "Noto Sans Mono CJK SC", ' + CJK_FONTS


def print_css() -> str:
    """The print style, on top of ``_static/book.css``'s ``@media print`` rules."""
    return f"""
@page {{
  size: A4;
  margin: {MARGIN_TOP_MM}mm {MARGIN_SIDE_MM}mm {MARGIN_BOTTOM_MM}mm;
  @bottom-center {{
    content: counter(page);
    font-family: "DejaVu Sans", sans-serif;
    font-size: 9pt;
    color: #555;
  }}
}}
@page front {{
  @bottom-center {{ content: none; }}
}}
@media print {{
  html {{ font-size: 14px !important; }}
  body {{ background: #fff !important; }}
  .headerlink, button, .toggle-button, .copybtn, summary, #jb-print-docs-body,
  .pst-js-only, .d-print-none {{
    display: none !important;
  }}
  .bd-article p, .bd-article li {{ orphans: 3; widows: 3; }}

  /* Front matter */
  .pdf-title-page {{
    page: front;
    break-after: page;
    display: flex;
    flex-direction: column;
    height: {CONTENT_HEIGHT_PX - 8:.0f}px;
    text-align: center;
  }}
  .pdf-title-page .pdf-title {{
    margin-top: 28%;
    font-size: 34pt;
    font-weight: 700;
    line-height: 1.2;
  }}
  .pdf-title-page .pdf-subtitle {{ margin: 1.2em 10% 0; font-size: 15pt; font-style: italic; }}
  .pdf-title-page .pdf-author {{ margin-top: 2.5em; font-size: 13pt; }}
  .pdf-title-page .pdf-imprint {{ margin-top: auto; font-size: 10.5pt; line-height: 1.7; }}
  .pdf-title-page .pdf-imprint a {{ color: inherit; }}
  .pdf-contents ol {{ list-style: none; margin: 0; padding: 0; font-size: 13px; line-height: 1.4; }}
  .pdf-contents li {{ margin: 0; padding: 0; break-inside: avoid; }}
  .pdf-contents li.pdf-toc-chapter {{ margin-top: 0.7em; font-weight: 600; }}
  .pdf-contents li.pdf-toc-section {{ margin: 0 0 0 1.8em; font-weight: 400; }}
  .pdf-contents a {{
    display: flex;
    align-items: last baseline;
    color: inherit !important;
    text-decoration: none !important;
  }}
  .pdf-contents .pdf-toc-leader {{
    flex: 1 1 auto;
    min-width: 1.5em;
    margin: 0 0.4em;
    border-bottom: 1px dotted #888;
  }}
  .pdf-contents .pdf-toc-page {{ min-width: 2.2em; text-align: right; }}

  /* Chapters, sections and what stays together */
  .bd-article h2 {{ break-before: page; margin-top: 0; }}
  .bd-article h2, .bd-article h3, .bd-article h4, .bd-article h5, .pdf-fold-title,
  .bd-article .admonition-title, .bd-article p.rubric {{
    break-after: avoid;
    break-inside: avoid;
  }}
  .bd-article img,
  .bd-article figure,
  .bd-article div.cell_output table {{
    break-inside: auto;
  }}
  .bd-article .pdf-keep {{ break-inside: avoid !important; }}
  .bd-article .pdf-with-next {{ break-after: avoid; }}
  .bd-article pre {{ orphans: 4; widows: 4; }}
  .bd-article pre .pdf-word {{ white-space: nowrap; }}
  .bd-article div.cell_output img {{ display: block; }}

  /* Solutions, printed open under their title */
  .pdf-fold.solution {{ margin: 1.4em 0 0; }}
  .pdf-fold-title {{
    margin: 0 0 0.5em;
    padding-bottom: 0.15em;
    border-bottom: 1px solid #bbb;
    font-size: 1.15rem;
    font-weight: 700;
  }}

  /* Code, outputs and tables: 9 pt */
  .bd-article pre,
  .bd-article div.highlight pre,
  .bd-article div.cell_output pre {{
    font-size: 12px !important;
    line-height: 1.35 !important;
  }}
  .bd-article table,
  .bd-article div.cell_output table {{
    font-size: 12px !important;
  }}
  .bd-article code, .pdf-contents code {{ font-size: max(0.875em, 12px) !important; }}

  /* The Chinese edition: Chinese characters in a CJK font */
  html:lang(zh) {{
    --pst-font-family-base: "DejaVu Sans", {CJK_FONTS}, sans-serif;
    --pst-font-family-heading: "DejaVu Sans", {CJK_FONTS}, sans-serif;
    --pst-font-family-monospace: "DejaVu Sans Mono", {CJK_MONO_FONTS}, monospace;
  }}
  :lang(zh) .pdf-title-page .pdf-subtitle {{ font-style: normal; }}
}}
"""


#: Runs in the page first: typeset math, loaded images, every fold opened; returns what it saw.
PREPARE = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
  }
  const images = Array.from(document.images);
  images.forEach((img) => { img.loading = "eager"; });
  await Promise.all(images.map((img) => img.complete ? null : new Promise((done) => {
    img.addEventListener("load", done);
    img.addEventListener("error", done);
  })));
  const article = document.querySelector("article.bd-article");

  // Folds. A solution keeps its box and its id, and shows its summary as a title.
  for (const fold of article.querySelectorAll("details.book-fold")) {
    const box = document.createElement("div");
    box.className = fold.className + " pdf-fold";
    if (fold.id) box.id = fold.id;
    const summary = fold.querySelector(":scope > summary");
    if (summary) {
      const title = document.createElement("p");
      title.className = "pdf-fold-title";
      title.textContent = summary.textContent.trim();
      box.append(title);
      summary.remove();
    }
    box.append(...fold.childNodes);
    fold.replaceWith(box);
  }
  // A hidden cell (Jupyter Book's hide-input, hide-output, hide-cell): its content, no prompt.
  for (const fold of article.querySelectorAll("details.hide")) {
    fold.querySelector(":scope > summary")?.remove();
    const box = document.createElement("div");
    box.className = "pdf-unfolded";
    box.append(...fold.childNodes);
    fold.replaceWith(box);
  }
  // A line break of the Markdown source between two Chinese characters is no space in Chinese
  // (CSS Text's segment break rule, which Chromium does not apply): the break goes.
  const wide = /[\u2e80-\u9fff\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/;
  const inside = new RegExp(String.raw`(${wide.source})[ \t]*\n\s*(?=${wide.source})`, "g");
  const texts = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
    acceptNode: (node) => node.parentElement.closest("pre, code, script, style, mjx-container")
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  while (walker.nextNode()) texts.push(walker.currentNode);
  const isWide = (char) => char !== undefined && wide.test(char);
  texts.forEach((node, i) => {
    node.data = node.data.replace(inside, "$1");
    const next = texts[i + 1]?.data.trimStart()[0];
    if (/\S[ \t]*\n\s*$/.test(node.data) && isWide(node.data.trimEnd().slice(-1))
        && isWide(next)) {
      node.data = node.data.trimEnd();
    }
    const previous = texts[i - 1]?.data.trimEnd().slice(-1);
    if (/^\s*\n\s*\S/.test(node.data) && isWide(node.data.trimStart()[0])
        && isWide(previous)) {
      node.data = node.data.trimStart();
    }
  });
  // A word of code or printed output that holds a hyphen ("--config", "add-then-concat",
  // "2e-06") is not broken after its hyphen where a line wraps: on paper the two halves read as
  // two words. (A word longer than LONG_WORD may still break: it might not fit a line.)
  const LONG_WORD = 40;
  const textsOf = (element) => {
    const found = [];
    const walker = document.createTreeWalker(element, NodeFilter.SHOW_TEXT);
    while (walker.nextNode()) found.push(walker.currentNode);
    return found;
  };
  for (const pre of article.querySelectorAll("pre")) {
    for (const node of textsOf(pre)) {
      const parts = node.data.split(/(\S*-\S+)/);
      if (parts.length === 1) continue;
      node.replaceWith(...parts.map((part, i) => {
        if (i % 2 === 0 || part.length > LONG_WORD) return part;
        const word = document.createElement("span");
        word.className = "pdf-word";
        word.textContent = part;
        return word;
      }));
    }
    // A hyphen highlighted as a token of its own ("{M-1}" is five): it and the next token.
    const texts = textsOf(pre);
    texts.forEach((node, i) => {
      const next = texts[i + 1];
      const before = (texts[i - 1]?.data ?? "") + node.data;
      if (!next || !/\S-$/.test(before) || !/^\S/.test(next.data)) return;
      const line = node.parentElement.closest(".book-line, pre");
      if (!line.contains(next)) return;
      const outer = (text) => {
        let element = text;
        while (element.parentNode !== line) element = element.parentNode;
        return element;
      };
      const [first, second] = [outer(node), outer(next)];
      if (first.nextSibling !== second) return;
      const word = document.createElement("span");
      word.className = "pdf-word";
      first.before(word);
      word.append(first, second);
    });
  }
  document.querySelectorAll("details").forEach((d) => { d.open = true; });
  document.querySelectorAll(".toggle-hidden").forEach((e) => e.classList.remove("toggle-hidden"));
  document.querySelectorAll(".dropdown").forEach((e) => e.classList.add("toggle-shown"));
  document.querySelectorAll("button.toggle-button, .copybtn").forEach((e) => e.remove());
  document.getElementById("jb-print-docs-body")?.remove();

  return {
    closed: document.querySelectorAll("details:not([open]), .toggle-hidden").length,
    math: document.querySelectorAll(".math").length,
    typeset: document.querySelectorAll(".math mjx-container").length,
    images: images.length,
    broken: images.filter((img) => img.naturalWidth === 0).map((img) => img.src),
  };
}
"""

#: Runs next, with the book's facts and the edition's labels (``front``, from
#: ``tools/book_pdf.py``): front matter, unique ids, links for paper.
#: Returns the entries of the contents and of the outline: each heading's id, level and title.
FRONT_MATTER = r"""
(front) => {
  const article = document.querySelector("article.bd-article");
  // Only the article is printed: the screen's header, sidebars and search before it go, so that
  // the title page is the first page (and takes its page style, without a number).
  for (let element = article; element !== document.body; element = element.parentElement) {
    let before = element.previousElementSibling;
    for (; before; before = before.previousElementSibling) {
      before.style.setProperty("display", "none", "important");
    }
  }
  const root = article.querySelector(":scope > section");
  const h1 = root.querySelector(":scope > h1");
  // A heading's title as plain text, each formula as its TeX (for the title page and outline).
  const items = window.MathJax && MathJax.startup && MathJax.startup.document
    ? MathJax.startup.document.getMathItemsWithin(article) : [];
  const tex = new Map(Array.from(items).map((item) => [item.typesetRoot, item.math]));
  const symbols = {
    times: "×", cdot: "·", le: "≤", ge: "≥", to: "→", ldots: "…", dots: "…",
    mathrm: "", mathbf: "", mathit: "", text: "", operatorname: "", left: "", right: "",
  };
  const readable = (formula) => formula
    .replace(/\\([A-Za-z]+)/g, (all, name) => symbols[name] ?? name)
    .replace(/[{}]/g, "");
  const plain = (heading) => {
    const copy = heading.cloneNode(true);
    copy.querySelectorAll(".headerlink").forEach((e) => e.remove());
    const originals = heading.querySelectorAll("mjx-container");
    copy.querySelectorAll("mjx-container").forEach((e, i) => {
      e.replaceWith(readable(tex.get(originals[i]) ?? e.textContent));
    });
    return copy.textContent.replace(/\s+/g, " ").trim();
  };
  const make = (tag, className, text) => {
    const element = document.createElement(tag);
    if (className) element.className = className;
    if (text !== undefined) element.textContent = text;
    return element;
  };

  // The root page: its title and its italic first line make the title page, the rest of its
  // text (all but the chapters) the introduction "About this book".
  const title = plain(h1);
  let subtitle = "";
  const first = h1.nextElementSibling;
  if (first && first.tagName === "P" && first.children.length === 1
      && first.firstElementChild.tagName === "EM"
      && first.textContent.trim() === first.firstElementChild.textContent.trim()) {
    subtitle = first.textContent.trim();
    first.remove();
  }
  h1.remove();
  const chapters = root.querySelector(":scope > .toctree-wrapper");
  const about = make("section", "pdf-about");
  about.id = "pdf-about";
  about.append(make("h2", "", front.about));
  for (const node of Array.from(root.childNodes)) {
    if (node !== chapters) about.append(node);
  }

  const page = make("section", "pdf-title-page");
  page.append(make("div", "pdf-title", title));
  if (subtitle) page.append(make("div", "pdf-subtitle", subtitle));
  if (front.author) page.append(make("div", "pdf-author", front.author));
  const imprint = make("div", "pdf-imprint");
  const line = (label, url) => {
    const row = make("div");
    row.append(label);
    if (url) {
      const link = make("a", "", url);
      link.href = url;
      row.append(link);
    }
    return row;
  };
  imprint.append(line(front.editionLine));
  imprint.append(line(front.onlineLabel, front.online));
  imprint.append(line(front.codeLabel, front.code));
  page.append(imprint);

  // Each id once: a chapter's repeat of an earlier id (summary, exercises, solution-1, ...)
  // gets the chapter's id in front, and the chapter's own links to it follow. A chapter may
  // repeat an earlier chapter's own id (the Chinese edition's headings have no Latin letters to
  // make an id of: Sphinx numbers them id1, id2, ... in each chapter), so a number follows where
  // the new id was taken too.
  const seen = new Set();
  const chapterOf = (element) => element.closest(".toctree-wrapper > section");
  const renamed = new Map();
  const unique = (id) => {
    let candidate = id;
    for (let n = 2; seen.has(candidate); n += 1) candidate = `${id}-${n}`;
    return candidate;
  };
  for (const element of article.querySelectorAll("[id]")) {
    const chapter = chapterOf(element);
    if (seen.has(element.id) && chapter) {
      if (!renamed.has(chapter)) renamed.set(chapter, new Map());
      const id = unique(`${chapter.id}--${element.id}`);
      renamed.get(chapter).set(element.id, id);
      element.id = id;
    }
    seen.add(element.id);
  }
  for (const [chapter, ids] of renamed) {
    for (const link of chapter.querySelectorAll('a[href^="#"]')) {
      const id = decodeURIComponent(link.getAttribute("href").slice(1));
      if (ids.has(id)) link.setAttribute("href", "#" + ids.get(id));
    }
  }

  // Links: a figure is no link; a file of the site is linked on the published site.
  for (const link of article.querySelectorAll("a[href]")) {
    if (link.querySelector("img") && !link.textContent.trim()) {
      link.replaceWith(...link.childNodes);
      continue;
    }
    const href = link.getAttribute("href");
    if (href.startsWith("#")) continue;
    const url = new URL(href, location.href);
    if (url.origin === location.origin) {
      link.href = new URL(url.pathname.slice(1) + url.search + url.hash, front.online).href;
    }
  }

  // The outline: the front matter, the chapters (h2) and their sections (h3), each with the id
  // of its section, to which its heading's anchor links. The contents: the same, but only the
  // numbered sections.
  const outline = [
    {id: "pdf-contents", level: 1, title: front.contents},
    {id: about.id, level: 1, title: front.about},
  ];
  const entries = [outline[1]];
  const numbered = new RegExp(front.numbered);
  for (const heading of chapters.querySelectorAll("section > h2, section > h3")) {
    const entry = {
      id: heading.parentElement.id,
      level: heading.tagName === "H2" ? 1 : 2,
      title: plain(heading),
    };
    outline.push(entry);
    if (entry.level === 1 || numbered.test(entry.title)) entries.push({...entry, heading});
  }
  const contents = make("section", "pdf-contents");
  contents.id = "pdf-contents";
  contents.append(make("h2", "", front.contents));
  const list = make("ol");
  for (const entry of entries) {
    const item = make("li", entry.level === 1 ? "pdf-toc-chapter" : "pdf-toc-section");
    const link = make("a");
    link.href = "#" + entry.id;
    const label = make("span", "pdf-toc-title");
    if (entry.heading) {
      const nodes = Array.from(entry.heading.childNodes);
      const text = nodes.filter((n) => !n.classList?.contains("headerlink"));
      label.append(...text.map((n) => n.cloneNode(true)));
    } else {
      label.textContent = entry.title;
    }
    const number = make("span", "pdf-toc-page", "000");
    number.dataset.target = entry.id;
    link.append(label, make("span", "pdf-toc-leader"), number);
    item.append(link);
    list.append(item);
  }
  contents.append(list);
  // Every heading of the outline is the target of a link (its own anchor, hidden on paper), so
  // that the PDF names it as a destination; the new front-matter headings get one too.
  for (const section of [contents, about]) {
    const anchor = make("a", "headerlink", "#");
    anchor.href = "#" + section.id;
    section.querySelector("h2").append(anchor);
  }
  root.prepend(page, contents, about);
  document.title = front.documentTitle || document.title;
  // The PDF's language (its /Lang, and the language of its structure tree) is the page's.
  if (front.lang) document.documentElement.lang = front.lang;
  const strip = ({id, level, title}) => ({id, level, title});
  return {contents: entries.map(strip), outline: outline.map(strip)};
}
"""

#: Runs in print layout at the printed width: marks the blocks small enough to keep on one page,
#: scales each figure to fit the page, and names each code cell's first and last line of code and
#: the figure it draws (``FIGURE_CELL_IDS``). Returns how many blocks it marked.
MARK_KEEPS = """
([pageHeight, keep, figure]) => {
  const article = document.querySelector("article.bd-article");
  const width = article.getBoundingClientRect().width;
  for (const img of article.querySelectorAll("img")) {
    const w = img.getBoundingClientRect().width || img.naturalWidth;
    const h = img.getBoundingClientRect().height || img.naturalHeight;
    if (!w || !h) continue;
    const scale = Math.min(1, width / w, (pageHeight * figure) / h);
    img.style.setProperty("width", `${w * scale}px`, "important");
    img.style.setProperty("height", `${h * scale}px`, "important");
    img.style.setProperty("max-width", "none", "important");
  }
  let marked = 0;
  const blocks = article.querySelectorAll(
    ".cell, .cell_input, .cell_output, .output, div.highlight, figure, table, .admonition, "
    + ".math, mjx-container[display='true'], blockquote, .pdf-fold-title + p"
  );
  for (const block of blocks) {
    if (block.getBoundingClientRect().height <= pageHeight * keep) {
      block.classList.add("pdf-keep");
      marked += 1;
    }
  }
  // Each code cell that draws a figure: its first line of code, its last and the figure are link
  // targets (hidden links: the PDF names them as destinations, so tests/pdf can tell on which
  // page each lies: FIGURE_CELL_IDS).
  const FULL = 0.9; // a page, less room for the last lines of code
  const BLOCKS = "div, pre, table";
  const targets = document.createElement("div");
  targets.style.setProperty("display", "none", "important");
  let figures = 0;
  for (const cell of article.querySelectorAll(".cell")) {
    const code = cell.querySelector(".cell_input pre");
    const img = cell.querySelector(".cell_output img");
    if (!code || !img) continue;
    figures += 1;
    // Nothing between the end of its code and its figure breaks, so the figure is printed on the
    // page where its code ends. A cell too tall to keep whole breaks inside its code instead (its
    // last lines move with the figure, rather than the whole cell leaving a page mostly empty),
    // and inside what it printed before the figure only where that and the figure are taller
    // than a page.
    const input = cell.querySelector(".cell_input");
    for (let element = img; element !== cell; element = element.parentElement) {
      for (let box = element; box && box !== input; box = box.previousElementSibling) {
        box.style.setProperty("break-before", "avoid", "important");
        box.previousElementSibling?.style.setProperty("break-after", "avoid", "important");
      }
    }
    if (!cell.classList.contains("pdf-keep")) {
      const output = cell.querySelector(".cell_output");
      const printed = img.getBoundingClientRect().bottom - output.getBoundingClientRect().top;
      const breakable = printed > pageHeight * FULL ? [input, output] : [input];
      for (const block of breakable.flatMap((box) => [box, ...box.querySelectorAll(BLOCKS)])) {
        block.classList.remove("pdf-keep");
        block.style.setProperty("break-inside", "auto", "important");
      }
    }
    const lines = code.querySelectorAll(":scope > .book-line");
    const named = [
      [lines[0] ?? code, "pdf-code-start-"],
      [lines[lines.length - 1] ?? code, "pdf-code-end-"],
      [img, "pdf-figure-"],
    ];
    for (const [element, prefix] of named) {
      element.id = prefix + figures;
      const link = document.createElement("a");
      link.href = "#" + element.id;
      targets.append(link);
    }
  }
  article.append(targets);
  // A paragraph that introduces what follows (it ends with a colon, or is a short bold or italic
  // label) stays with it.
  for (const para of article.querySelectorAll("p")) {
    const text = para.textContent.trim();
    const only = para.children.length === 1 ? para.firstElementChild : null;
    const label = only && ["STRONG", "EM"].includes(only.tagName)
      && only.textContent.trim() === text && text.length < 100;
    if (para.nextElementSibling && (text.endsWith(":") || text.endsWith("：") || label)) {
      para.classList.add("pdf-with-next");
    }
  }
  // A taller block that a style keeps whole (the theme keeps each code box whole) breaks: kept
  // whole, it would start on a new page and leave the page before it mostly empty.
  for (const block of article.querySelectorAll("div, pre, table, figure, section, ul, ol, p")) {
    if (!block.classList.contains("pdf-keep") && getComputedStyle(block).breakInside !== "auto"
        && block.getBoundingClientRect().height > pageHeight * keep) {
      block.style.setProperty("break-inside", "auto", "important");
    }
  }
  return marked;
}
"""

#: The destinations MARK_KEEPS names for the Nth code cell that draws a figure (from 1): its first
#: line of code, its last and its figure.
FIGURE_CELL_IDS = ("pdf-code-start-{}", "pdf-code-end-{}", "pdf-figure-{}")
