"""What measures the models: the position-encoding ablation (``ablation``), the resolution
experiment (``resolution_transfer``: moving one model; ``resolution_experiment``: every run of an
ablation), reading results back (``results``), where they came from (``provenance``) and the
paired t interval (``stats``)."""
