"""What the ablation keeps for an honest reading: every test split image by image, the test
sets' labels once, fewer seeds for the controlled variants, and the predictions untouched."""

import json

import numpy as np
import pytest
import torch

from companion.experiments.evaluation import (
    labels_from_text,
    labels_record,
    labels_text,
    load_split,
    pack_bits,
    unpack_bits,
)
from companion.experiments.runs.ablation import AblationPlan, main, run_ablation
from companion.train import TrainConfig

FAR = "far-relation-heldout"


def plan(tmp_path, **kw) -> AblationPlan:
    base = TrainConfig(
        dataset=FAR, epochs=2, curriculum_epochs=1, batch_size=8, train_size=32, test_size=24,
        device="cpu", progress=False, warmup_epochs=0.5,
    )  # fmt: skip
    settings = {
        "name": "far", "datasets": (FAR,), "pos": ("none",), "seeds": (0, 1), "base": base,
        "results_dir": str(tmp_path / "results"), "work_dir": str(tmp_path / "work"),
        "extra": ((FAR, "rel", "pool-merge"),), "extra_seeds": (1,),
    }  # fmt: skip
    return AblationPlan(**{**settings, **kw})


@pytest.fixture(scope="module")
def far(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("far")
    folder = tmp_path / "results" / "far"
    folder.mkdir(parents=True)
    (folder / "predictions.md").write_text("# made before the run\n")
    return run_ablation(plan(tmp_path)), folder


def test_bits_and_labels_survive_their_text_form():
    flags = torch.tensor([True, False, True, True, False, False, False, True, True])
    assert unpack_bits(pack_bits(flags), 9).tolist() == flags.tolist()
    labels = torch.tensor([0, 15, 3, 7])
    assert labels_from_text(labels_text(labels)).tolist() == [0, 15, 3, 7]
    with pytest.raises(ValueError, match="labels must be below 16"):
        labels_text(torch.tensor([16]))


def test_bits_are_read_on_their_first_images_never_on_more_than_they_hold():
    bits = pack_bits(torch.ones(9, dtype=torch.bool))  # two bytes: 16 bits at most
    assert unpack_bits(bits, 4).tolist() == [True] * 4
    with pytest.raises(ValueError, match="bits of 16 images at most cannot be read on 17"):
        unpack_bits(bits, 17)


def test_extra_cells_run_only_for_the_extra_seeds(far):
    results, _ = far
    keys = {(r["pos"], r["variant"], r["seed"]) for r in results["runs"]}
    assert keys == {("none", "swin", 0), ("none", "swin", 1), ("rel", "pool-merge", 1)}
    assert results["plan"]["extra_seeds"] == [1]


def test_every_run_keeps_each_test_split_image_by_image_and_the_labels_are_kept_once(far):
    results, _ = far
    sets = results["test_sets"][FAR]
    assert list(sets) == ["test", "seen", "unseen", "near"]
    for name, kept in sets.items():
        want = labels_record(load_split(FAR, name, 24, 0).labels)
        assert kept == want and len(kept["labels"]) == 24
        counts = np.bincount(labels_from_text(kept["labels"]))
        assert kept["constant_answer"] == counts.max() / 24
    for run in results["runs"]:
        for name, got in run["splits"].items():
            correct = unpack_bits(got["correct"], got["n"])
            assert correct.mean() == pytest.approx(got["accuracy"])
            assert got["labels_sha256"] == sets[name]["labels_sha256"]
        # the trainer's own test accuracy is the "test" split's
        assert run["splits"]["test"]["accuracy"] == pytest.approx(run["final"]["test_acc"])


def test_a_publish_keeps_the_predictions_written_before_the_run(far):
    _, folder = far
    assert (folder / "predictions.md").read_text() == "# made before the run\n"
    assert json.loads((folder / "results.json").read_text())["runs"]


@pytest.mark.parametrize("extra_seeds", [(2,), (1, 1), ()])
def test_extra_seeds_outside_the_seeds_are_refused_by_name(tmp_path, extra_seeds):
    with pytest.raises(ValueError, match="extra_seeds must be distinct values of seeds"):
        plan(tmp_path, extra_seeds=extra_seeds)


def test_the_command_line_takes_extra_seeds(tmp_path, capsys):
    argv = ["--name", "x", "--results-dir", str(tmp_path), "--datasets", "relation",
            "--extra", "relation:rel:pool-merge", "--seeds", "0", "--extra-seeds", "3"]  # fmt: skip
    with pytest.raises(SystemExit):
        main(argv)
    assert "extra_seeds must be distinct values of seeds [0]" in capsys.readouterr().err
