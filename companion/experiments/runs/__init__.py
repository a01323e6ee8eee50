"""Running the experiments: training many models (``ablation``, its ``ablation_plan``), moving
them to larger images (``resolution_experiment``), the worker ``pool`` and atomic ``publish``, and
chapter 1's ``learned_embedding`` runs. The chapters never import these: they read what the runs
wrote through their readers."""
