"""Show the source of a companion object in a notebook: highlighted in Jupyter, Colab and the book.

The notebooks never define code; they call ``show_source(obj)`` so the reader sees exactly the code
that runs. The object renders as HTML and as plain text everywhere else (terminals, nbval
comparisons).

The HTML uses Pygments' standard token classes inside ``div.highlight``, so in the built book the
theme's own code colours apply, light and dark (pydata-sphinx-theme's high-contrast styles, which
meet WCAG AA). Jupyter and Colab have no such stylesheet; for them the output carries its own,
scoped to pages without the book theme's ``data-theme`` attribute. Each source line is a block
with a hanging indent, so a long line that wraps continues indented under its own start instead
of at the left margin.
"""

from __future__ import annotations

import html
import inspect
import re
import textwrap
from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer

#: Continuation lines of a wrapped source line start this many characters right of its indent.
HANGING_INDENT = 4
_LINE = re.compile(r'<span id="srcline-(\d+)">(.*?)\n</span>', re.DOTALL)
# Jupyter and Colab only: the book sets html[data-theme] and styles div.highlight itself.
_FALLBACK_SCOPE = "html:not([data-theme]) .companion-source .highlight"
_FALLBACK_CSS = HtmlFormatter(style="default").get_style_defs(_FALLBACK_SCOPE)


def _hanging_line(source_line: str, body: str) -> str:
    """One highlighted line as a block whose wrapped continuation is indented past its start."""
    hang = len(source_line) - len(source_line.lstrip(" ")) + HANGING_INDENT
    return (
        f'<span class="source-line" style="display:block;min-height:1lh;'
        f'padding-left:{hang}ch;text-indent:-{hang}ch">{body}</span>'
    )


_TITLE_STYLE = 'style="font-family:monospace;font-size:85%"'
_BOX = '<div class="companion-source" style="border-left:3px solid #4c72b0;padding-left:8px">'


class SourceCode:
    """The source of one Python object, displayable by IPython."""

    def __init__(self, source: str, title: str, folded: bool = False) -> None:
        self.source = source
        self.title = title
        self.folded = folded

    def __repr__(self) -> str:
        return f"# {self.title}\n{self.source}"

    def _repr_html_(self) -> str:
        # linespans wraps every line in <span id="srcline-N">...\n</span>, tokens split per line.
        formatter = HtmlFormatter(linespans="srcline", prestyles="white-space:pre-wrap")
        body = highlight(self.source, PythonLexer(), formatter)
        lines = self.source.splitlines()
        body = _LINE.sub(lambda m: _hanging_line(lines[int(m[1]) - 1], m[2]), body)
        title = html.escape(self.title)
        if not self.folded:
            heading = f'<div class="companion-source-title" {_TITLE_STYLE}>{title}</div>'
            return f"<style>{_FALLBACK_CSS}</style>{_BOX}{heading}{body}</div>"
        # A plain <details> folds wherever the HTML is shown (the book, Jupyter, Colab), with no
        # script; the PDF prints every <details> open (tools/pdf_layout.py).
        summary = f"<summary {_TITLE_STYLE}>{title} (source)</summary>"
        return (
            f'<style>{_FALLBACK_CSS}</style><details class="companion-source-fold">{summary}'
            f"{_BOX}{body}</div></details>"
        )


def show_source(obj: Any, folded: bool = False) -> SourceCode:
    """Return the source of a function, class, method or module of the companion package.

    ``folded=True`` shows it folded under its name, for listings a reader may skip.

    Raises ``TypeError`` when ``obj`` has no Python source (a builtin, an instance, a number).
    """
    try:
        source = inspect.getsource(obj)
    except (TypeError, OSError) as exc:
        raise TypeError(
            f"obj must be a function, class, method or module with Python source, "
            f"got {obj!r} ({type(obj).__name__})"
        ) from exc
    module = inspect.getmodule(obj)
    name = getattr(obj, "__qualname__", getattr(obj, "__name__", ""))
    title = f"{module.__name__}.{name}" if module and module.__name__ != name else name
    return SourceCode(textwrap.dedent(source).rstrip() + "\n", title, folded)
