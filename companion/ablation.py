"""``python -m companion.ablation``: the command the results headers record. The ablation itself
lives in :mod:`companion.experiments.runs.ablation`."""

if __name__ == "__main__":
    import sys

    from companion.experiments.runs.ablation import main

    sys.exit(main())
