"""Show the source of a companion object in a notebook: highlighted in Jupyter, Colab and the book.

The notebooks never define code; they call ``show_source(obj)`` so the reader sees exactly the code
that runs. The object renders as inline-styled HTML (no stylesheet needed, so it looks the same in
Colab and in the built book) and as plain text everywhere else (terminals, nbval comparisons).
"""

from __future__ import annotations

import html
import inspect
import textwrap
from typing import Any

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import PythonLexer


class SourceCode:
    """The source of one Python object, displayable by IPython."""

    def __init__(self, source: str, title: str) -> None:
        self.source = source
        self.title = title

    def __repr__(self) -> str:
        return f"# {self.title}\n{self.source}"

    def _repr_html_(self) -> str:
        # pre-wrap: long lines wrap instead of scrolling sideways in the book's narrow column.
        formatter = HtmlFormatter(
            noclasses=True, style="default", prestyles="white-space: pre-wrap; font-size: 90%"
        )
        body = highlight(self.source, PythonLexer(), formatter)
        return (
            '<div class="companion-source" style="border-left:3px solid #4c72b0;padding-left:8px">'
            f'<div style="font-family:monospace;font-size:85%;color:#555">{html.escape(self.title)}'
            f"</div>{body}</div>"
        )


def show_source(obj: Any) -> SourceCode:
    """Return the source of a function, class, method or module of the companion package.

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
    return SourceCode(textwrap.dedent(source).rstrip() + "\n", title)
