"""What the experiments measured, read back: a chapter imports its own reader (``chapter1``,
``chapter5``, ``chapter6``) and :mod:`~.reading` (the papers' tables), nothing else from here.

Behind it, one module per kind of record: ``results`` (an ablation's folder), ``predictions``
(what was predicted before a run), ``evaluation`` (per-image results), ``split_reading`` and
``stats``/``bootstrap`` (how a cell or a gap is read), ``resolution_transfer``,
``transfer_reading`` and ``transfer_results`` (chapter 6's resolution experiment),
``learned_embedding`` (an embedding's layout against its null) and ``paper``/``paper_reading``
(the papers' published tables). The runs that write the records live in ``runs/``, which no
chapter imports.
"""
