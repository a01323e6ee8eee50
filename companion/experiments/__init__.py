"""What measures the models: the position-encoding ablation (``ablation``), the resolution
experiment (``resolution_transfer``: moving one model; ``resolution_experiment``: every run of an
ablation), reading results back (``results``; ``transfer_results``: the resolution experiment's),
where they came from (``provenance``), the paired t interval (``stats``) and what to read instead
where a mean misleads (``reading``: the constant-answer level, split cells counted, a null for
table patterns)."""
