"""Companion package of the book *Where is this patch? Position in Vision Transformers*.

Every piece of code the book shows lives here, once, with a unit test.

Layout, in one sentence: the top-level modules are the subject the book teaches (patches and
absolute embeddings, the relative index, window attention and its position codes, Swin), and the
subpackages hold what renders its data (``data/``), trains it (``train/``), measures it
(``experiments/``), shows it (``figures/``: figures, explorers, widgets, source listings) and
the chapters' exercises (``exercises/``). No module imports another that imports it back,
directly or in a circle (``tests/test_import_graph.py``).
"""

__version__ = "0.1.0"
