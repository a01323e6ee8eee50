"""``python -m companion.learned_embedding``: the command chapter 1's record names. The run itself
lives in :mod:`companion.experiments.runs.learned_embedding`."""

if __name__ == "__main__":
    from companion.experiments.runs.learned_embedding import main

    main()
