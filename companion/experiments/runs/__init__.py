"""Running the experiments: the ablation (``ablation``, with its plan in ``ablation_plan`` and
its publish in ``ablation_publish``) and the resolution experiment (``resolution_experiment``)
with their worker pool (``pool``) and atomic publishing (``publish``); checking a published
folder against a fresh one (``reproduction``); and the runs behind chapter 1's learned embeddings
(``learned_embedding``: the Swin's; ``learned_vit``: the ViT's). The chapters never import these:
they read what the runs wrote through their readers (``companion.experiments.chapter<N>``)."""
