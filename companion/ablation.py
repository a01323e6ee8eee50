"""``python -m companion.ablation``: the command the results headers record. The ablation itself
lives in :mod:`companion.experiments.ablation`."""

if __name__ == "__main__":
    import sys

    from companion.experiments.ablation import main

    sys.exit(main())
