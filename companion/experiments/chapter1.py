"""Chapter 1's reader: the learned absolute embeddings trained on ``grid-cell`` (a plain ViT's in
``results/learned-vit`` and ``learned-vit-seeds``, the small Swin's in ``learned-abs``), verified,
and the predictions committed before the runs, checked by the rules fixed with them."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor

from companion._io import file_sha256
from companion.experiments.integrity import ResultsError, read_folder, verified
from companion.experiments.learned_embedding import PermutationTest, permutation_test
from companion.experiments.paper import markdown_table
from companion.experiments.predictions import PREDICTIONS, load_predictions, parse_predictions
from companion.experiments.records import TABLE, check_against_table
from companion.experiments.related import refuse_other_trees
from companion.experiments.results import result_places

#: The files the runs write: the Swin's embedding, the ViT's, and each run's record.
EMBEDDING_FILE = "absolute_pos_embed.pt"
VIT_EMBEDDING_FILE = "pos_embed.pt"
PROVENANCE_FILE = "provenance.json"
VIT_RESULT_NAME = "learned-vit"


def _find(name: str, folder: str | Path | None, *files: str) -> Path:
    """``folder``, or the first ``results/<name>`` of ``result_places`` holding all ``files``."""
    places = [Path(folder)] if folder is not None else [p / name for p in result_places()]
    for place in places:
        if all((place / f).is_file() for f in files):
            return place
        refuse_other_trees(place.parent, name)  # the first results tree is the only one searched
    raise FileNotFoundError(
        f"folder: no {' with '.join(files)} in any of {[str(p) for p in places]}"
    )


def _load_embedding(
    name: str, embedding_file: str, folder: str | Path | None
) -> tuple[Tensor, dict]:
    place = _find(name, folder, embedding_file, PROVENANCE_FILE)
    files = read_folder(place)  # one reading, checked against its SHA256SUMS
    record, embedding = (
        verified(place, PROVENANCE_FILE, files),
        verified(place, embedding_file, files),
    )
    recorded = record.get("embedding_sha256")  # a run from before recorded none
    if recorded is not None and recorded != hashlib.sha256(files[embedding_file]).hexdigest():
        raise ResultsError(f"{place / embedding_file} is not the one its run recorded")
    if any((p / TABLE).is_file() for p in place.resolve().parents):
        check_against_table(place, record)  # a fresh run's --out has no table above
    return embedding, record


def load_learned_embedding(folder: str | Path | None = None) -> tuple[Tensor, dict]:
    """The small Swin's ``(1, h, w, D)`` embedding and its record (``results/learned-abs``)."""
    return _load_embedding("learned-abs", EMBEDDING_FILE, folder)


def load_vit_embedding(folder: str | Path | None = None) -> tuple[Tensor, dict]:
    """The plain ViT's ``(1, N, D)`` embedding as ``(1, h, w, D)`` and its record (learned-vit)."""
    return _load_embedding(VIT_RESULT_NAME, VIT_EMBEDDING_FILE, folder)


@dataclass(frozen=True)
class SimilarityOutcome:
    """One prediction of ``predictions.md`` beside its test and whether it held."""

    prediction: dict[str, Any]
    test: PermutationTest
    held: bool


def similarity_predictions(folder: str | Path | None = None) -> dict[str, Any]:
    """The verified ``json`` block of ``learned-vit/predictions.md``."""
    return load_predictions(_find(VIT_RESULT_NAME, folder, PREDICTIONS), kinds=("similarity",))


#: What a prediction's ``expect``, ``"<word> X"``, asks of a test (its observed value, ``X`` and
#: whether ``p <= alpha``), and how the outcomes' table prints it.
EXPECTATIONS: dict[str, tuple[Callable[[float, float, bool], bool], str]] = {
    "above": (lambda seen, x, sig: seen >= x and sig, "≥ {x}, p ≤ {a}"),
    "below": (lambda seen, x, sig: seen <= x and sig, "≤ {x}, p ≤ {a}"),
    "within": (lambda seen, x, sig: abs(seen) < x and not sig, "within ±{x}, p > {a}"),
    "not above": (lambda seen, x, sig: not (seen >= x and sig), "not (≥ {x} with p ≤ {a})"),
}


_EXPECT = re.compile(rf"({'|'.join(EXPECTATIONS)}) (-?\d+(?:\.\d+)?)")


def _expectation(expect: str) -> tuple[str, str]:
    found = _EXPECT.fullmatch(expect)
    if found is None:
        allowed = "'above X', 'below X', 'within X' or 'not above X'"
        raise ValueError(f"expect must be {allowed}, got {expect!r}")
    return found[1], found[2]


def prediction_held(prediction: dict[str, Any], test: PermutationTest, alpha: float) -> bool:
    """Whether ``test`` meets ``prediction["expect"]`` (:data:`EXPECTATIONS`) at ``alpha``."""
    word, number = _expectation(str(prediction["expect"]))
    return EXPECTATIONS[word][0](test.observed, float(number), test.p_value <= alpha)


def check_similarity_predictions(
    table: Tensor, grid_size: int | tuple[int, int], predictions: dict[str, Any]
) -> list[SimilarityOutcome]:
    """Each prediction tested on ``table`` ``(N, D)`` with the draws, seed and alpha they fixed."""
    draws, seed, alpha = predictions["draws"], predictions["seed"], predictions["alpha"]
    outcomes = []
    for p in predictions["predictions"]:
        test = permutation_test(table, grid_size, p["statistic"], draws, seed, p["alternative"])
        outcomes.append(SimilarityOutcome(p, test, prediction_held(p, test, alpha)))
    return outcomes


def similarity_outcomes_markdown(outcomes: Sequence[SimilarityOutcome], alpha: float) -> str:
    """A Markdown table: each prediction, expected, observed, the null's 95 % range, p, held."""
    side = {"two-sided": "two-sided", "greater": "one-sided, >", "less": "one-sided, <"}
    rows = []
    for o in outcomes:
        q, (word, number) = o.test.quantiles, _expectation(o.prediction["expect"])
        expected = EXPECTATIONS[word][1].format(x=number, a=alpha)
        observed, null = f"{o.test.observed:+.3f}", f"{q[0.025]:+.3f} – {q[0.975]:+.3f}"
        expected += f" ({side[o.test.alternative]})"
        p, held = o.test.p_text(""), "yes" if o.held else "**no**"
        rows.append((o.prediction["id"], o.prediction["text"], expected, observed, null, p, held))
    head = ["id", "prediction", "expected", "observed", "null 2.5 % – 97.5 %", "p", "held"]
    return markdown_table(head, rows, align="l" * len(head))


def load_vit_seeds(folder: str | Path | None = None) -> tuple[dict[str, Any], dict[int, Any]]:
    """The over-seeds rule and ``{seed: (embedding, record)}``, each run under the rule's sha256."""
    place = _find("learned-vit-seeds", folder, PREDICTIONS)
    rule = parse_predictions((place / PREDICTIONS).read_text(encoding="utf-8"), place, ())
    digest = file_sha256(place / PREDICTIONS)
    runs = {}
    for seed in rule["seeds"]:
        embedding, record = _load_embedding("", VIT_EMBEDDING_FILE, place / f"seed-{seed}")
        if record.get("predictions_sha256") != digest or record["settings"]["seed"] != seed:
            raise ResultsError(
                f"{place / f'seed-{seed}'} was not run at seed {seed} under {place / PREDICTIONS}"
            )
        runs[seed] = (embedding, record)
    return rule, runs


def vit_seeds_markdown(
    outcomes: dict[int, Sequence[SimilarityOutcome]],
    accuracy: dict[int, float],
    rule: dict[str, Any],
    seed0: Sequence[SimilarityOutcome] | None = None,
) -> str:
    """A Markdown table, one row per prediction: each seed's observed value (``✓`` held), seed 0
    beside them (not counted), and the count over the seeds that learned (test accuracy at least
    the rule's ``min_test_acc``; ``outcomes`` holds theirs) with the verdict: ``"holds"`` on every
    one, ``"fails"`` on none, else ``"splits"``; ``"not readable"`` below ``min_learned`` seeds."""
    learned = [s for s in rule["seeds"] if accuracy[s] >= rule["min_test_acc"]]
    if sorted(outcomes) != learned:
        raise ValueError(
            f"outcomes must hold the seeds that learned, {learned}, got {sorted(outcomes)}"
        )
    rows = []
    for i, first in enumerate(next(iter(outcomes.values()))):
        row = [outcomes[s][i] for s in learned] + ([seed0[i]] if seed0 else [])
        held = [o.held for o in row[: len(learned)]]
        verdict = "holds" if all(held) else "fails" if not any(held) else "splits"
        if len(learned) < rule["min_learned"]:
            verdict = "not readable"
        cells = [f"{o.test.observed:+.3f} {'✓' if o.held else '✗'}" for o in row]
        rows.append((first.prediction["id"], *cells, f"{sum(held)} of {len(held)}", verdict))
    head = [f"seed {s}" for s in learned] + (["seed 0 (not counted)"] if seed0 else [])
    head = ["id", *head, "held", "over seeds"]
    return markdown_table(head, rows, align="l" + "r" * (len(head) - 3) + "ll")
