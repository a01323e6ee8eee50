"""Running the experiments: training many models (``ablation``, its ``ablation_plan``), moving
them to larger images (``resolution_experiment``), the worker ``pool`` and atomic ``publish``, and
chapter 1's ``learned_embedding`` runs; and the commands around them: ``reproduction`` (did a
regenerated folder reproduce an earlier one), ``split_codes`` and ``blind_codes`` (which codes
``results/run_cpu_transfer_far.sh`` trains more seeds of). The chapters never import these: they
read what the runs wrote through their readers."""
