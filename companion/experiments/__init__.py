"""What the experiments measured, read back: each chapter imports its own reader (``chapter1``,
``chapter5``, ``chapter6``) over the record table (``records``) and the shared readers (``paper``,
``paper_reading``, ``learned_embedding``, ``stats``); ``runs/`` writes the records."""
