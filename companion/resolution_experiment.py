"""``python -m companion.resolution_experiment``: the command the results headers record. The
experiment itself lives in :mod:`companion.experiments.runs.resolution_experiment`."""

if __name__ == "__main__":
    import sys

    from companion.experiments.runs.resolution_experiment import main

    sys.exit(main())
