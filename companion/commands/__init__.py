"""The experiments' commands, ``python -m companion.commands.<name>``: ``ablation`` (chapter 5),
``resolution_experiment`` (chapter 6) and ``learned_embedding`` (chapter 1). Each is a few lines
that start the run in :mod:`companion.experiments.runs`; nothing imports them
(``tests/test_layers.py``). Results written before they moved here record them as
``python -m companion.<name>``: the same commands."""
