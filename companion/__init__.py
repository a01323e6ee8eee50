"""Companion package of the book *Where is this patch? Position in Vision Transformers*.

Every piece of code the book shows lives here, once, with a unit test.

Layers, each importing only from those before it: support (``_checks``, ``_io``, ``_startup``);
the subject the book teaches (the top-level modules: patches and absolute embeddings, the
relative index, window attention and its position codes, Swin, a plain ViT); ``data/`` (the
images); ``train/`` (training, checkpoints, converted and pretrained weights, provenance);
``experiments/`` (reading what the experiments measured); ``figures/``; ``exercises/``; then
``experiments/runs/`` (running the experiments) and ``commands/``, the three commands
(``python -m companion.commands.ablation``, ``resolution_experiment``, ``learned_embedding``),
which nothing imports (``tests/test_layers.py``).
"""

__version__ = "0.2.0"

from companion._startup import quiet_interrupts_while_starting as _quiet

_quiet()  # only in a process that is one of the package's commands, while it starts
