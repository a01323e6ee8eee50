"""What the experiments measured, read back: a chapter imports its own reader (``chapter1``,
``chapter5``, ``chapter6``), and the papers' tables (``paper``, ``paper_reading``) and chapter 4's
embedding statistics (``learned_embedding``, ``stats``) from the modules that define them.

Behind the readers, one module per kind of record: ``records`` (the record table every reading
filters), ``results`` (an ablation's folder), ``predictions`` (what was predicted before a run),
``evaluation`` (per-image results), ``split_reading`` and ``stats``/``bootstrap`` (how a cell or a
gap is read), ``resolution_transfer`` and ``transfer_results`` (chapter 6's resolution
experiment). The runs that write the records live in ``runs/``, which no chapter imports.
"""
