"""``python -m companion.commands.ablation``: chapter 5's command
(:mod:`companion.experiments.runs.ablation`)."""

if __name__ == "__main__":
    from companion.commands import start

    start("ablation")
