"""Chapter 1's reader: the learned absolute embeddings the book trained on ``grid-cell`` (``8 x 8``
patch grid, ``D = 32``), a plain ViT's (``results/learned-vit``, and at other seeds
``results/learned-vit-seeds``) and the small Swin's ``pos="abs"`` (``results/learned-abs``), each
verified against its folder's ``SHA256SUMS`` and, in a results tree with a record table, against
the table's row; and the predictions committed before the runs, checked by the rules fixed with
them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from torch import Tensor

from companion._io import file_sha256
from companion.experiments.integrity import (
    ResultsError,
    read_manifest,
    verified_json,
    verified_tensors,
    whole_folders,
)
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
    """``folder``, or ``results/<name>`` where the chapters find their results
    (``companion.experiments.results.result_places``): the first that holds all of ``files``."""
    places = [Path(folder)] if folder is not None else [p / name for p in result_places()]
    for place in places:
        if all((place / f).is_file() for f in files):
            return place
        refuse_other_trees(place.parent, name)  # the first results tree is the only one searched
    raise FileNotFoundError(
        f"folder: no {' with '.join(files)} in any of {[str(p) for p in places]}"
    )


@whole_folders
def _load_embedding(
    name: str, embedding_file: str, folder: str | Path | None
) -> tuple[Tensor, dict]:
    place = _find(name, folder, embedding_file, PROVENANCE_FILE)
    record = verified_json(place, PROVENANCE_FILE)
    embedding = verified_tensors(place, embedding_file)
    recorded = record.get("embedding_sha256")  # a run from before recorded none
    if recorded is not None and recorded != read_manifest(place)[embedding_file]:
        raise ResultsError(f"{place / embedding_file} is not the one its run recorded")
    if any((p / TABLE).is_file() for p in place.resolve().parents):
        check_against_table(place, record)  # a fresh run's --out has no table above
    return embedding, record


def load_learned_embedding(folder: str | Path | None = None) -> tuple[Tensor, dict]:
    """The small Swin's saved ``(1, h, w, D)`` embedding and its provenance record, verified;
    without ``folder``, ``results/learned-abs`` where the chapters find their results."""
    return _load_embedding("learned-abs", EMBEDDING_FILE, folder)


def load_vit_embedding(folder: str | Path | None = None) -> tuple[Tensor, dict]:
    """The plain ViT's saved embedding, ``(1, h, w, D)`` (its ``(1, N, D)`` parameter with the
    ``N = h * w`` rows laid out on the grid, row-major), and its provenance record, verified;
    without ``folder``, ``results/learned-vit``."""
    return _load_embedding(VIT_RESULT_NAME, VIT_EMBEDDING_FILE, folder)


# --------------------------------------------------------------------------- predictions


@dataclass(frozen=True)
class SimilarityOutcome:
    """One prediction of ``predictions.md`` beside its test and whether it held."""

    prediction: dict[str, Any]
    test: PermutationTest
    held: bool


def similarity_predictions(folder: str | Path | None = None) -> dict[str, Any]:
    """The ``json`` block of the ViT folder's ``predictions.md`` (checked against its
    ``SHA256SUMS``): ``{"draws", "seed", "alpha", "predictions": [...]}``, each prediction
    ``{"id", "text", "kind": "similarity", "statistic", "alternative", "expect"}``."""
    return load_predictions(_find(VIT_RESULT_NAME, folder, PREDICTIONS), kinds=("similarity",))


#: What a prediction's ``expect``, ``"<word> X"``, may say: whether a test meets it (from its
#: observed value, ``X`` and whether ``p <= alpha``), and how the outcomes' table prints it.
EXPECTATIONS: dict[str, tuple[Callable[[float, float, bool], bool], str]] = {
    # the pattern is there, at least (at most) X
    "above": (lambda observed, x, significant: observed >= x and significant, "≥ {x}, p ≤ {a}"),
    "below": (lambda observed, x, significant: observed <= x and significant, "≤ {x}, p ≤ {a}"),
    # a pattern predicted absent
    "within": (lambda observed, x, significant: abs(observed) < x and not significant,
               "within ±{x}, p > {a}"),
    # a pattern of one sign predicted absent: the "above X" of that pattern fails
    "not above": (lambda observed, x, significant: not (observed >= x and significant),
                  "not (≥ {x} with p ≤ {a})"),
}  # fmt: skip


def _expectation(expect: str) -> tuple[str, str]:
    """``"above 0.3"`` -> ``("above", "0.3")``, checked against :data:`EXPECTATIONS`."""
    word, _, number = expect.rpartition(" ")
    try:
        float(number)
    except ValueError:
        word = ""
    if word not in EXPECTATIONS:
        raise ValueError(
            f"expect must be 'above X', 'below X', 'within X' or 'not above X', got {expect!r}"
        )
    return word, number


def prediction_held(prediction: dict[str, Any], test: PermutationTest, alpha: float) -> bool:
    """Whether ``test`` meets ``prediction["expect"]`` (:data:`EXPECTATIONS`) at ``alpha``."""
    word, number = _expectation(str(prediction["expect"]))
    return EXPECTATIONS[word][0](test.observed, float(number), test.p_value <= alpha)


def check_similarity_predictions(
    table: Tensor, grid_size: int | tuple[int, int], predictions: dict[str, Any]
) -> list[SimilarityOutcome]:
    """Every prediction of ``predictions`` (:func:`similarity_predictions`) tested on ``table``
    ``(N, D)`` with the draws, seed and alpha the predictions fixed."""
    outcomes = []
    for p in predictions["predictions"]:
        test = permutation_test(
            table, grid_size, p["statistic"], predictions["draws"], predictions["seed"],
            p["alternative"],
        )  # fmt: skip
        outcomes.append(SimilarityOutcome(p, test, prediction_held(p, test, predictions["alpha"])))
    return outcomes


def similarity_outcomes_markdown(outcomes: Sequence[SimilarityOutcome], alpha: float) -> str:
    """A Markdown table: each prediction, what it expected, observed, the null's 2.5 % and
    97.5 % quantiles, p, and whether it held."""
    side = {"two-sided": "two-sided", "greater": "one-sided, >", "less": "one-sided, <"}
    rows = []
    for o in outcomes:
        q, (word, number) = o.test.quantiles, _expectation(o.prediction["expect"])
        expected = EXPECTATIONS[word][1].format(x=number, a=alpha)
        rows.append((
            o.prediction["id"], o.prediction["text"], f"{expected} ({side[o.test.alternative]})",
            f"{o.test.observed:+.3f}", f"{q[0.025]:+.3f} – {q[0.975]:+.3f}", o.test.p_text(""),
            "yes" if o.held else "**no**",
        ))  # fmt: skip
    head = ["id", "prediction", "expected", "observed", "null 2.5 % – 97.5 %", "p", "held"]
    return markdown_table(head, rows, align="l" * len(head))


# --------------------------------------------------------------------------- over seeds


def load_vit_seeds(folder: str | Path | None = None) -> tuple[dict[str, Any], dict[int, Any]]:
    """The over-seeds rule (the ``json`` block of ``learned-vit-seeds/predictions.md``) and
    ``{seed: (embedding (1, h, w, D), provenance record)}`` for each of its seeds, each checked
    against its folder's ``SHA256SUMS`` and against the rule's sha256 its run recorded."""
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
    """A Markdown table, one row per prediction: each seed's observed value (``✓`` held, ``✗``
    not), seed 0 beside them (not counted), and the count over the seeds that learned (final
    test accuracy at least the rule's ``min_test_acc``) with the rule's verdict: ``"holds"`` on
    every seed that learned, ``"fails"`` on none, else ``"splits"``; ``"not readable"`` when
    fewer than the rule's ``min_learned`` seeds learned.

    ``outcomes``: ``{seed: check_similarity_predictions(...)}`` for the rule's seeds that
    learned; ``accuracy``: ``{seed: final test accuracy}`` for all of them."""
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
