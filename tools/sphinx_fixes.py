"""A Sphinx extension with the book's fixes for bugs in the pinned Sphinx stack.

Loaded by ``_config.yml`` (``sphinx.local_extensions``). Each fix says what upstream does wrong; the
browser test (``tests/browser``) checks the result on every page, so a fix that stops working, or
an upstream release that makes one unnecessary, shows up there.

Sphinx 7.4 writes inline ``<script>`` bodies twice when an extension adds them after the builder
is set up (``app.add_js_file(None, body=...)`` in ``builder-inited`` or ``env-before-read-docs``):
``Sphinx.add_js_file`` puts ``_JavaScript(None, body=...)`` into the builder's list at once, and
``StandaloneHTMLBuilder.prepare_writing`` adds every registry entry again as
``_JavaScript('', body=...)``; ``None != ''``, so its de-duplication misses it. sphinx-thebe 0.3.1
adds ``const THEBE_JS_URL = ...`` this way, and the second copy throws "Identifier 'THEBE_JS_URL'
has already been declared" on every page (sphinx-togglebutton's ``var togglebuttonSelector`` is
doubled too, harmlessly). Fixed upstream by sphinx-doc/sphinx#13402 (Sphinx 8.x), which
jupyter-book 1.x cannot use; until then the early copies are dropped here, so that the
registry's copy is the only one.

The other theme bug, the dead sidebar toggles (executablebooks/sphinx-book-theme#999), is fixed
in configuration: see ``navbar_persistent`` in ``_config.yml``.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def _drop_early_inline_scripts(app: Sphinx, env: Any) -> None:
    """Remove the inline scripts added before ``prepare_writing`` (it re-adds them once)."""
    js_files = getattr(app.builder, "_js_files", None)
    if js_files is None:  # not an HTML builder
        return
    registered = {attrs.get("body") for filename, attrs in app.registry.js_files if not filename}
    js_files[:] = [
        js
        for js in js_files
        if not (js.filename is None and js.attributes.get("body") in registered)
    ]


def _no_header_navbar(app: Sphinx, config: Any) -> None:
    """Keep pydata-sphinx-theme's header row (and its duplicate toggles and search box) out."""
    config.html_theme_options.setdefault("navbar_persistent", [])


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("config-inited", _no_header_navbar)
    # env-updated: after every extension has added its assets, before prepare_writing.
    app.connect("env-updated", _drop_early_inline_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
