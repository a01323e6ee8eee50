"""How the book shows things: matplotlib figures, one module per topic (each function returns a
Figure), the interactive explorers (``explorers``, ``widgets``, ``live``, ``resize_explorer``) and
the source listings (``show``)."""
