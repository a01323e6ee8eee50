"""The book's one folding mechanism: what is folded, and how each medium folds it.

A chapter folds two things, and marks them in the notebook itself:

- **A solution** is a section: a Markdown cell that starts with the heading ``### Solution N``
  (its text follows in the same cell), then the code cells that compute it, up to the next
  heading. The reader opens one fold and finds the text, the code and its output together.
- **A hidden input** is a code cell tagged ``hide-input``: the code is folded, its output shows.

Each medium folds them from these marks, so nothing is folded by hand in one medium only:

- the HTML book (this module is also a Sphinx extension, loaded by ``_config.yml``): each
  solution section becomes one ``<details class="book-fold solution">`` whose ``<summary>`` is
  "Solution N"; ``hide-input`` is Jupyter Book's own tag (sphinx-togglebutton);
- Colab (``tools/colab_sync.py`` writes it, ``--check`` keeps it written): each solution heading
  cell gets a stable ``metadata.id`` and the notebook's ``metadata.colab.collapsed_sections``
  lists them, so Colab opens the notebook with every solution section collapsed, code and
  outputs included; a ``hide-input`` cell gets ``metadata.cellView = "form"`` (code hidden,
  output shown);
- the PDF (``tools/book_pdf.py``): every fold is printed open, a solution under its
  "Solution N" title.
"""

from __future__ import annotations

import re
from typing import Any

#: "Solution N" in the English edition, "解答 N" in the Chinese one (tools/zh_edition.py).
SOLUTION_LABELS = ("Solution", "解答")
SOLUTION_HEADING = re.compile(rf"^### (?:{'|'.join(SOLUTION_LABELS)}) (\d+)\s*$")
HIDE_INPUT = "hide-input"
FOLD_CLASSES = ("book-fold", "solution")


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def solution_number(cell: dict[str, Any]) -> int | None:
    """N when ``cell`` opens solution N (a Markdown cell whose first line is ``### Solution N``)."""
    if cell.get("cell_type") != "markdown":
        return None
    first = _source(cell).split("\n", 1)[0]
    match = SOLUTION_HEADING.match(first)
    return int(match.group(1)) if match else None


def solution_id(number: int) -> str:
    """The Colab cell id of solution ``number``'s heading cell (stable across syncs)."""
    return f"solution-{number}"


def colab_folds(nb: dict[str, Any]) -> dict[str, Any]:
    """Write Colab's fold metadata into ``nb`` (in place) and return it.

    Solution headings get ``metadata.id`` (a stale ``solution-*`` id elsewhere is removed);
    ``metadata.colab.collapsed_sections`` lists them in order; ``hide-input`` code cells get
    ``cellView: form``. A stale ``cellView`` on other cells is removed by ``colab_sync``, which
    alone knows the install cell (it keeps its own form).
    """
    collapsed = []
    for cell in nb["cells"]:
        meta = cell.setdefault("metadata", {})
        number = solution_number(cell)
        if number is not None:
            meta["id"] = solution_id(number)
            collapsed.append(meta["id"])
        elif str(meta.get("id", "")).startswith("solution-"):  # no longer a solution heading
            del meta["id"]
        if cell.get("cell_type") == "code" and HIDE_INPUT in meta.get("tags", []):
            meta["cellView"] = "form"
    colab = nb.setdefault("metadata", {}).setdefault("colab", {})
    colab["collapsed_sections"] = collapsed
    return nb


# --- The HTML book: a Sphinx extension -----------------------------------------------------------

try:  # tools/colab_sync.py imports this module without Sphinx's stack at hand
    from docutils import nodes
    from docutils.transforms import Transform
except ImportError:  # pragma: no cover - Sphinx always brings docutils
    nodes = None  # type: ignore[assignment]


if nodes is not None:

    class fold(nodes.General, nodes.Element):  # noqa: N801 - docutils names nodes in lower case
        """A folded block: ``<details>`` with a ``<summary>`` (the ``summary`` attribute)."""

    class FoldSolutions(Transform):
        """Turn each section titled "Solution N" into one fold holding its text, code and output.

        Runs while a page is read, before Sphinx collects its contents list, so the page's
        table of contents lists the Exercises section and not one entry per solution.
        """

        default_priority = 700

        def apply(self, **kwargs: Any) -> None:
            for section in list(self.document.findall(nodes.section)):
                title = section.next_node(nodes.title)
                if title is None or title.parent is not section:
                    continue
                text = title.astext().strip()
                match = re.fullmatch(rf"(?:{'|'.join(SOLUTION_LABELS)}) (\d+)", text)
                if not match:
                    continue
                folded = fold(
                    summary=text,
                    ids=list(section["ids"]),
                    classes=list(FOLD_CLASSES),
                )
                folded.extend(child for child in section.children if child is not title)
                section.replace_self(folded)

    def _visit_fold_html(self: Any, node: fold) -> None:
        # An element has one id: the first names the fold, any further ones (a section can
        # carry several) become empty anchors inside it, so that every link still lands.
        first, *more = node["ids"] or [""]
        classes = " ".join(node["classes"])
        summary = self.encode(node["summary"])
        anchors = "".join(f'<span id="{extra}"></span>' for extra in more)
        id_attr = f' id="{first}"' if first else ""
        self.body.append(
            f'<details class="{classes}"{id_attr}><summary>{summary}</summary>{anchors}\n'
            '<div class="book-fold-body">\n'
        )

    def _depart_fold_html(self: Any, node: fold) -> None:
        self.body.append("</div></details>\n")

    def _visit_fold_other(self: Any, node: fold) -> None:
        """Builders without <details> (text, linkcheck, ...) show the fold's contents open."""

    def _depart_fold_other(self: Any, node: fold) -> None:
        pass

    def setup(app: Any) -> dict[str, Any]:
        app.add_node(
            fold,
            html=(_visit_fold_html, _depart_fold_html),
            latex=(_visit_fold_other, _depart_fold_other),
            text=(_visit_fold_other, _depart_fold_other),
            man=(_visit_fold_other, _depart_fold_other),
            texinfo=(_visit_fold_other, _depart_fold_other),
        )
        app.add_transform(FoldSolutions)
        return {"parallel_read_safe": True, "parallel_write_safe": True}
