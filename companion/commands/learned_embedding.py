"""``python -m companion.commands.learned_embedding``: the command chapter 1's record names
(:mod:`companion.experiments.runs.learned_embedding`)."""

if __name__ == "__main__":
    from companion.commands import start

    start("learned_embedding")
