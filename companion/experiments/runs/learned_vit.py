"""``python -m companion.experiments.runs.learned_vit``: the ViT's run of
:mod:`companion.experiments.runs.learned_embedding`, by the name its records give."""

import sys

from companion.experiments.runs.learned_embedding import main

if __name__ == "__main__":
    sys.exit(main(vit=True))
