"""The plain ViT's learned embedding (results/learned-vit): its run, its reader, the layout
statistics against their shuffle null, its predictions and its figures."""

import json
from types import SimpleNamespace

import pytest
import torch
from book_figures import assert_fits_the_page

from companion._io import file_sha256
from companion.absolute import sincos_2d_position_embedding
from companion.experiments.chapter1 import (
    SimilarityOutcome,
    check_similarity_predictions,
    load_vit_embedding,
    load_vit_seeds,
    prediction_held,
    similarity_outcomes_markdown,
    similarity_predictions,
    vit_seeds_markdown,
)
from companion.experiments.integrity import ResultsError, write_manifest
from companion.experiments.learned_embedding import (
    POSITION_STATISTICS,
    cosine_matrix,
    permutation_p_value,
    permutation_test,
    similarity_gap,
)
from companion.figures.absolute import plot_figure7, plot_permutation_tests

GEN = torch.Generator


def statistic(name: str):
    """A layout statistic of :data:`POSITION_STATISTICS` on a square grid: ``(sim, side)``."""
    return lambda sim, side: POSITION_STATISTICS[name](sim, (side, side))


axis_gap = statistic("axis_gap")
cell_gap = statistic("cell_gap")
distance_correlation = statistic("distance_correlation")
merge_slot_gap = statistic("merge_slot_gap")
nearest_neighbour_rate = statistic("nearest_neighbour_rate")
neighbour_gap = statistic("neighbour_gap")


def smooth_table() -> torch.Tensor:
    """(64, 32): sin-cos on an 8 x 8 grid, similarity falling with distance by construction."""
    return sincos_2d_position_embedding(8, 32)


def shuffled(table: torch.Tensor, seed: int = 0) -> torch.Tensor:
    return table[torch.randperm(table.shape[0], generator=GEN().manual_seed(seed))]


def block_table(noise: float = 0.3, seed: int = 0) -> torch.Tensor:
    """(64, 16): one random vector per 2 x 2 block of an 8 x 8 grid, plus a little noise."""
    gen = GEN().manual_seed(seed)
    blocks = torch.randn(16, 16, generator=gen)
    rows, cols = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    index = (rows // 2 * 4 + cols // 2).reshape(-1)
    return blocks[index] + noise * torch.randn(64, 16, generator=gen)


def row_column_table(seed: int = 0) -> torch.Tensor:
    """(64, 32): a random vector for the row plus one for the column (an additive code)."""
    gen = GEN().manual_seed(seed)
    row_vectors, col_vectors = torch.randn(8, 32, generator=gen), torch.randn(8, 32, generator=gen)
    rows, cols = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    return row_vectors[rows.reshape(-1)] + col_vectors[cols.reshape(-1)]


# --------------------------------------------------------------------------- the p-value


def test_the_p_value_counts_the_draws_at_least_as_extreme_plus_one():
    null = torch.tensor([-3.0, -2.0, -1.0, 0.0, 1.0, 2.0, 3.0])
    assert permutation_p_value(2.5, null, "greater") == pytest.approx(2 / 8)
    assert permutation_p_value(2.5, null, "less") == pytest.approx(7 / 8)
    assert permutation_p_value(2.5, null, "two-sided") == pytest.approx(3 / 8)  # |draw| >= 2.5
    assert permutation_p_value(2.5, null) == permutation_p_value(2.5, null, "two-sided")
    assert permutation_p_value(2.0, null, "greater") == pytest.approx(3 / 8)  # ties count


def test_a_value_below_every_draw_is_extreme_two_sided_not_one_sided():
    # The Swin's merge-slot gap: below all of its shuffles. Only the two-sided test says so.
    null = torch.linspace(-0.04, 0.04, 1000)
    assert permutation_p_value(-0.047, null, "greater") == 1.0
    assert permutation_p_value(-0.047, null) == pytest.approx(1 / 1001)


def test_the_two_sided_centre_is_the_null_s_mean():
    null = torch.tensor([9.0, 10.0, 11.0])
    assert permutation_p_value(10.5, null) == pytest.approx(3 / 4)  # |draw - 10| >= 0.5: 9, 11


def test_the_p_value_refuses_bad_arguments():
    with pytest.raises(ValueError, match="alternative must be one of"):
        permutation_p_value(1.0, torch.zeros(3), "above")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="null must be a non-empty 1-D tensor"):
        permutation_p_value(1.0, torch.zeros(0))


# --------------------------------------------------------------------------- the statistics


def test_a_smooth_embedding_has_every_layout_statistic_far_from_its_null():
    table = smooth_table()
    for name, alternative in [
        ("neighbour_gap", "greater"),
        ("distance_correlation", "less"),
        ("nearest_neighbour_rate", "greater"),
    ]:
        test = permutation_test(table, 8, name, draws=200, alternative=alternative)
        assert test.p_value == pytest.approx(1 / 201), name
    assert distance_correlation(cosine_matrix(table), 8) < -0.5
    assert nearest_neighbour_rate(cosine_matrix(table), 8) == 1.0


def test_the_same_vectors_shuffled_sit_inside_their_null():
    table = shuffled(smooth_table())
    for name in ("neighbour_gap", "distance_correlation", "nearest_neighbour_rate", "axis_gap"):
        assert permutation_test(table, 8, name, draws=200).p_value > 0.05, name


def test_the_null_of_a_gap_is_centred_on_zero():
    test = permutation_test(torch.randn(64, 8, generator=GEN().manual_seed(0)), 8, "cell_gap")
    assert abs(float(test.null.mean())) < 0.01


def test_neighbour_gap_is_similarity_gap_over_neighbours():
    from companion.experiments.learned_embedding import neighbour_pairs

    table = torch.randn(64, 8, generator=GEN().manual_seed(5))
    assert neighbour_gap(cosine_matrix(table), 8) == pytest.approx(
        similarity_gap(table, neighbour_pairs(8))
    )


def test_a_block_code_shows_as_cell_gap_not_as_row_and_column_structure():
    table = block_table()
    sim = cosine_matrix(table)
    assert cell_gap(sim, 8) > 0.5
    assert permutation_test(table, 8, "cell_gap", draws=200, alternative="greater").p_value < 0.01
    assert permutation_test(table, 8, "axis_gap", draws=200).p_value > 0.05  # blocks only


def test_an_additive_row_and_column_code_shows_as_axis_gap():
    table = row_column_table()
    assert axis_gap(cosine_matrix(table), 8) > 0.2
    assert permutation_test(table, 8, "axis_gap", draws=200).p_value < 0.01


def test_a_similarity_that_falls_with_euclidean_distance_gives_a_negative_axis_gap():
    # At the same |dr| + |dc|, a pair in one row is farther apart than a diagonal pair.
    rows, cols = torch.meshgrid(torch.arange(8.0), torch.arange(8.0), indexing="ij")
    r, c = rows.reshape(-1), cols.reshape(-1)
    sim = torch.exp(-torch.hypot(r[:, None] - r[None], c[:, None] - c[None]))
    assert axis_gap(sim, 8) < 0


def test_merge_slot_gap_finds_the_swin_s_sign_coded_slots():
    slot_vectors = torch.randn(4, 16, generator=GEN().manual_seed(2))
    rows, cols = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    signs = torch.where((rows // 2 + cols // 2) % 2 == 0, 1.0, -1.0).reshape(-1, 1)
    table = signs * slot_vectors[(rows % 2 * 2 + cols % 2).reshape(-1)]
    assert merge_slot_gap(cosine_matrix(table), 8) > 0.5
    assert permutation_test(table, 8, "merge_slot_gap", draws=200).p_value < 0.01


def test_cell_gap_compares_neighbours_inside_a_2x2_block_with_those_across_its_border():
    rows, cols = torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij")
    block = (rows // 2 * 2 + cols // 2).reshape(-1)
    sim = (block[:, None] == block[None]).float()  # alike inside a block, unlike across
    assert cell_gap(sim, 4) == 1.0
    assert cell_gap(torch.ones(16, 16), 4) == 0.0


def test_the_permutation_test_reports_quantiles_and_is_fixed_by_its_seed():
    table = torch.randn(16, 4, generator=GEN().manual_seed(0))
    a = permutation_test(table, 4, "neighbour_gap", draws=50, seed=3)
    b = permutation_test(table, 4, "neighbour_gap", draws=50, seed=3)
    assert torch.equal(a.null, b.null) and a.null.shape == (50,)
    q = a.quantiles
    assert list(q) == [0.025, 0.5, 0.975] and q[0.025] <= q[0.5] <= q[0.975]
    assert f"p = {a.p_value:.2g} (two-sided, 50 shuffles)" in a.line()


def test_a_p_value_no_shuffle_reached_is_printed_as_a_bound():
    # A smooth code on the 4 x 4 grid: every neighbour pair is similar, so no shuffle comes close.
    rows, cols = torch.meshgrid(torch.arange(4.0), torch.arange(4.0), indexing="ij")
    table = torch.stack([rows.cos(), rows.sin(), cols.cos(), cols.sin()], -1).reshape(16, 4)
    test = permutation_test(table, 4, "neighbour_gap", draws=99, seed=0, alternative="greater")
    assert test.p_value == 1 / 100
    assert "p < 0.01 (greater, 99 shuffles)" in test.line() and test.p_text("") == "< 0.01"


def test_the_permutation_test_refuses_bad_arguments():
    table = torch.randn(16, 4)
    with pytest.raises(ValueError, match="statistic must be one of"):
        permutation_test(table, 4, "mean")
    with pytest.raises(ValueError, match="table must have h \\* w = 25 rows"):
        permutation_test(table, 5, "neighbour_gap")
    with pytest.raises(ValueError, match="table must be an \\(N, D\\) tensor"):
        permutation_test(table[None], 4, "neighbour_gap")
    assert set(POSITION_STATISTICS) >= {"neighbour_gap", "cell_gap", "axis_gap"}


# --------------------------------------------------------------------------- predictions


PREDICTIONS = {
    "draws": 200,
    "seed": 0,
    "alpha": 0.01,
    "predictions": [
        {"id": "A", "text": "cells", "kind": "similarity", "statistic": "cell_gap",
         "alternative": "greater", "expect": "above 0.3"},
        {"id": "B", "text": "no rows", "kind": "similarity", "statistic": "axis_gap",
         "alternative": "two-sided", "expect": "within 0.1"},
        {"id": "C", "text": "falls", "kind": "similarity", "statistic": "distance_correlation",
         "alternative": "less", "expect": "below -0.9"},
    ],
}  # fmt: skip


def test_predictions_are_checked_by_their_own_rules():
    outcomes = check_similarity_predictions(block_table(), 8, PREDICTIONS)
    assert [o.prediction["id"] for o in outcomes] == ["A", "B", "C"]
    assert [o.held for o in outcomes] == [True, True, False]  # C: r is not below -0.9
    assert outcomes[0].test.null.shape == (200,) and outcomes[0].test.alternative == "greater"
    table = similarity_outcomes_markdown(outcomes, 0.01)
    assert "| A | cells | ≥ 0.3, p ≤ 0.01 (one-sided, >) |" in table
    assert "| B | no rows | within ±0.1, p > 0.01 (two-sided) |" in table
    assert table.splitlines()[-1].endswith("| **no** |")


def test_a_prediction_of_absence_fails_when_the_pattern_is_found():
    found = permutation_test(row_column_table(), 8, "axis_gap", draws=100, alternative="greater")
    assert found.observed > 0.2 and found.p_value < 0.01
    assert not prediction_held({"expect": "within 10"}, found, alpha=0.01)  # p too small
    assert not prediction_held({"expect": "not above 0.1"}, found, alpha=0.01)
    assert prediction_held({"expect": "not above 0.9"}, found, alpha=0.01)  # too small for it
    assert prediction_held({"expect": "above 0.1"}, found, alpha=0.01)
    absent = permutation_test(block_table(), 8, "axis_gap", draws=100)
    assert prediction_held({"expect": "within 0.2"}, absent, alpha=0.01)
    assert prediction_held({"expect": "not above 0.0"}, absent, alpha=0.01)
    for bad in ("near 1", "above", "above x", "not below 1"):
        with pytest.raises(ValueError, match="expect must be 'above X', 'below X', 'within X'"):
            prediction_held({"expect": bad}, found, alpha=0.01)


def test_similarity_predictions_reads_the_json_block_verified(tmp_path):
    text = f"# Predictions\n\nprose\n\n```json\n{json.dumps(PREDICTIONS)}\n```\n"
    (tmp_path / "predictions.md").write_text(text)
    write_manifest(tmp_path)
    assert similarity_predictions(tmp_path) == PREDICTIONS
    (tmp_path / "predictions.md").write_text(text.replace("0.3", "0.2"))
    with pytest.raises(ResultsError, match="changed or damaged"):
        similarity_predictions(tmp_path)


# --------------------------------------------------------------------------- figures


def test_the_figure7_drawing_fits_the_page_with_one_scale():
    tables = {"ViT": smooth_table(), "shuffled": shuffled(smooth_table())}
    fig = plot_figure7(tables, 8)
    assert_fits_the_page(fig)
    assert fig.get_suptitle() == "Position embedding similarity"
    images = [ax.images[0] for ax in fig.axes if ax.images]
    assert len(images) == 2 and all(im.get_clim() == (-1, 1) for im in images)
    assert images[0].get_array().shape == (8 * 9 - 1, 8 * 9 - 1)  # 8 x 8 tiles, 1-px gaps


def test_the_figure7_drawing_refuses_no_embedding():
    with pytest.raises(ValueError, match="embeddings must name at least one"):
        plot_figure7({}, 8)


def test_the_null_histograms_fit_the_page_and_name_p():
    tests = [permutation_test(smooth_table(), 8, n, draws=50) for n in POSITION_STATISTICS]
    fig = plot_permutation_tests(tests)
    assert_fits_the_page(fig)
    titles = " | ".join(ax.get_title() for ax in fig.axes)
    assert "neighbour_gap\np = 0.020 (two-sided)" in titles
    with pytest.raises(ValueError, match="tests must hold at least one"):
        plot_permutation_tests([])


# --------------------------------------------------------------------------- the run


@pytest.fixture
def run_module(monkeypatch):
    """The run with a clean tree recorded and training that must not start."""
    from companion.experiments.runs import learned_embedding as run

    def train(*args, **kwargs):
        pytest.fail("training started before --out and the tree were checked")

    monkeypatch.setattr(run, "train", train)
    monkeypatch.setattr(
        run, "provenance", lambda command: {"command": command, "git": {"dirty": False}}
    )
    return run


def _fake_training(run, monkeypatch, grid=(2, 2), dim=3):
    model = run.VisionTransformer(run.ViTConfig(img_size=(4 * grid[0], 4 * grid[1]),
                                                embed_dim=dim, depth=1, num_heads=1))  # fmt: skip
    with torch.no_grad():
        model.pos_embed.copy_(torch.arange(grid[0] * grid[1] * dim, dtype=torch.float32).view(
            1, -1, dim))  # fmt: skip
    trained = SimpleNamespace(model=model, history=[{"test_acc": 0.5}, {"test_acc": 0.75}])
    monkeypatch.setattr(run, "train", lambda cfg, factory: trained)
    return model


def test_a_new_out_folder_receives_the_embedding_hashed_and_read_back_verified(
    run_module, tmp_path, capsys, monkeypatch
):
    model = _fake_training(run_module, monkeypatch)
    out = tmp_path / "new" / "learned-vit"
    out.mkdir(parents=True)
    (out / "predictions.md").write_text("# written before the run\n")
    assert run_module.main(vit=True, argv=["--out", str(out)]) == 0
    assert "final test acc 0.750" in capsys.readouterr().out
    embedding, record = load_vit_embedding(out)
    assert embedding.shape == (1, 2, 2, 3)  # (1, N, D) laid out on the grid
    assert torch.equal(embedding.reshape(1, 4, 3), model.pos_embed.detach())
    assert torch.equal(embedding[0, 1, 0], model.pos_embed.detach()[0, 2])  # row 1, column 0
    assert record["grid_size"] == [2, 2] and record["test_acc_by_epoch"] == [0.5, 0.75]
    assert record["model"]["class"] == "companion.vit.VisionTransformer"
    assert record["settings"]["dataset"] == "grid-cell" and "config" not in record["settings"]
    assert record["predictions_sha256"] is not None and record["hashed"] == "at publish"
    assert record["command"].endswith(f"--out {out}")
    listed = (out / "SHA256SUMS").read_text()
    assert "predictions.md" in listed and "pos_embed.pt" in listed
    # an edited file is refused
    torch.save(embedding + 1, out / "pos_embed.pt")
    with pytest.raises(ResultsError, match="changed or damaged"):
        load_vit_embedding(out)


def test_seed_and_predictions_flags_train_that_seed_and_record_those_predictions(
    run_module, tmp_path, monkeypatch
):
    _fake_training(run_module, monkeypatch)
    seen = {}
    trained = run_module.train

    def train(cfg, factory):
        seen["cfg"] = cfg
        return trained(cfg, factory)

    monkeypatch.setattr(run_module, "train", train)
    rule = tmp_path / "predictions.md"
    rule.write_text("# the reading over seeds, written before the runs\n")
    out = tmp_path / "seed-3"
    assert (
        run_module.main(
            vit=True, argv=["--seed", "3", "--predictions", str(rule), "--out", str(out)]
        )
        == 0
    )
    _, record = load_vit_embedding(out)
    assert seen["cfg"].seed == 3 and record["settings"]["seed"] == 3
    assert record["predictions_sha256"] == file_sha256(rule)
    assert record["predictions_file"] == str(rule)
    with pytest.raises(SystemExit):
        run_module.main(vit=True, argv=["--seed", "-1", "--out", str(tmp_path / "bad")])


def test_a_dirty_tree_is_refused_before_training(run_module, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(
        run_module, "provenance", lambda command: {"command": command, "git": {"dirty": True}}
    )
    assert run_module.main(vit=True, argv=["--out", str(tmp_path / "out")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "has uncommitted changes" in err[0]
    assert not (tmp_path / "out").exists()


def test_an_out_that_is_a_file_is_refused_before_training(run_module, tmp_path, capsys):
    (tmp_path / "f").write_text("mine")
    assert run_module.main(vit=True, argv=["--out", str(tmp_path / "f")]) == 1
    assert "exists and is a file" in capsys.readouterr().err


def test_an_interrupted_run_says_nothing_was_saved(run_module, tmp_path, capsys, monkeypatch):
    def interrupted(cfg, factory):
        raise KeyboardInterrupt("interrupted in epoch 3; continue with --resume")

    monkeypatch.setattr(run_module, "train", interrupted)
    assert run_module.main(vit=True, argv=["--out", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing was saved" in err[0] and "--resume" not in err[0]


def test_the_run_trains_the_swin_run_s_settings_with_the_vit():
    from companion.experiments.runs import learned_embedding

    swin = {k: v for k, v in learned_embedding.RUN_SETTINGS.items() if k not in ("config", "pos")}
    assert swin == learned_embedding.TRAIN_SETTINGS
    model = learned_embedding.vit_factory(16, "abs")
    assert model.pos_embed.shape == (1, 64, 32)


def test_a_short_real_training_writes_a_folder_that_reads_back(tmp_path, monkeypatch):
    from companion.experiments.runs import learned_embedding as run

    monkeypatch.setattr(
        run, "provenance", lambda command: {"command": command, "git": {"dirty": False}}
    )
    settings = {**run.TRAIN_SETTINGS, "epochs": 1, "train_size": 32, "test_size": 16}
    settings["warmup_epochs"] = 0.5
    record = run.train_and_save(tmp_path / "out", "test", vit=True, settings=settings)
    embedding, loaded = load_vit_embedding(tmp_path / "out")
    assert embedding.shape == (1, 8, 8, 32) and loaded == record
    assert len(record["test_acc_by_epoch"]) == 1 and record["num_params"] > 0


# --------------------------------------------------------------------------- the published folder


def test_the_committed_vit_embedding_loads_with_its_provenance():
    embedding, record = load_vit_embedding()
    assert embedding.shape == (1, 8, 8, 32) and record["grid_size"] == [8, 8]
    assert record["git"]["dirty"] is False and record["final_test_acc"] >= 0.9
    assert record["model"]["class"] == "companion.vit.VisionTransformer"


def test_the_committed_predictions_match_the_sha256_the_run_recorded():
    from companion.experiments.chapter1 import VIT_RESULT_NAME
    from companion.train.provenance import PACKAGE_DIR

    folder = PACKAGE_DIR.parent / "results" / VIT_RESULT_NAME
    _, record = load_vit_embedding(folder)
    assert record["predictions_sha256"] == file_sha256(folder / "predictions.md")
    predictions = similarity_predictions(folder)
    assert [p["id"] for p in predictions["predictions"]] == ["V1", "V2", "V3", "V4", "V5", "V6"]
    assert predictions["draws"] >= 1000


def _history_or_skip():
    """The repository root and a ``git`` runner in it; skips where there is no full history."""
    import subprocess

    from companion.train.provenance import PACKAGE_DIR

    root = PACKAGE_DIR.parent

    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)

    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git clone: no history to check the order in")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone: the history that shows the order is missing")
    return root, git


def test_the_predictions_were_committed_before_the_run_and_not_edited_after():
    root, git = _history_or_skip()
    path = "results/learned-vit/predictions.md"
    _, record = load_vit_embedding(root / "results" / "learned-vit")
    run = record["git"]["commit"]
    last = git("log", "-1", "--format=%H", "--", path).stdout.strip()
    assert last, f"{path} is not committed"
    # Committed before the commit the run checked out (as every results/*/predictions.md is).
    assert last != run, f"{path} was changed in the run's own commit {run}"
    assert git("merge-base", "--is-ancestor", last, run).returncode == 0
    assert git("show", f"{run}:{path}").stdout == (root / path).read_text()


# --------------------------------------------------------------------------- over seeds


def test_a_prediction_over_seeds_holds_fails_or_splits_by_count():
    rule = {"seeds": [2, 3, 4], "min_test_acc": 0.9, "min_learned": 2}
    test = permutation_test(torch.randn(64, 8, generator=GEN().manual_seed(0)), 8, "cell_gap", 20)
    accuracy = {2: 1.0, 3: 1.0, 4: 1.0}
    verdicts = {(True, True, True): "holds", (False, False, False): "fails"}
    verdicts[True, False, True] = "splits"
    for held, verdict in verdicts.items():
        outcomes = {
            seed: [SimilarityOutcome({"id": "V1"}, test, h)]
            for seed, h in zip(rule["seeds"], held, strict=True)
        }
        text = vit_seeds_markdown(outcomes, accuracy, rule)
        assert text.endswith(f"| {sum(held)} of 3 | {verdict} |")


def test_the_seed_table_counts_the_seeds_that_learned_and_shows_seed_0_apart():
    rule = {"seeds": [2, 3, 4], "min_test_acc": 0.9, "min_learned": 2}
    table = torch.randn(64, 8)
    predictions = {
        "draws": 20,
        "seed": 0,
        "alpha": 0.05,
        "predictions": [
            {"id": "V6", "kind": "similarity", "statistic": "merge_slot_gap",
             "alternative": "greater", "expect": "not above 0.05", "text": "no slot code"},
        ],
    }  # fmt: skip
    outcomes = check_similarity_predictions(table, 8, predictions)
    text = vit_seeds_markdown(
        {2: outcomes, 4: outcomes}, {2: 0.99, 3: 0.5, 4: 0.95}, rule, seed0=outcomes
    )
    header, _, row = text.splitlines()
    assert "seed 3" not in header and "seed 0 (not counted)" in header  # seed 3 did not learn
    assert row.endswith("| 2 of 2 | holds |")
    with pytest.raises(ValueError, match="seeds that learned"):
        vit_seeds_markdown({2: outcomes}, {2: 0.99, 3: 0.5, 4: 0.95}, rule)
    too_few = {**rule, "min_learned": 3}
    assert vit_seeds_markdown({2: outcomes, 4: outcomes}, {2: 1, 3: 0, 4: 1}, too_few).endswith(
        "| not readable |"
    )


def test_the_committed_seed_runs_load_under_the_rule_they_recorded():
    rule, runs = load_vit_seeds()
    assert rule["seeds"] == [2, 3, 4, 5, 6] and 0 not in runs and 1 not in runs
    assert set(rule["pilot_seeds"]) == {1} and rule["first_run_seed"] == 0
    for seed, (embedding, record) in runs.items():
        assert embedding.shape == (1, 8, 8, 32) and record["settings"]["seed"] == seed
        assert record["git"]["dirty"] is False
        other = {k: v for k, v in record["settings"].items() if k not in ("seed", "dataset")}
        assert other == {k: v for k, v in _vit_settings().items() if k not in ("seed", "dataset")}


def _vit_settings():
    from companion.experiments.runs.learned_embedding import TRAIN_SETTINGS

    return TRAIN_SETTINGS


def test_a_seed_run_that_recorded_another_rule_is_refused(tmp_path):
    import shutil

    from companion.train.provenance import PACKAGE_DIR

    folder = tmp_path / "learned-vit-seeds"
    shutil.copytree(PACKAGE_DIR.parent / "results" / "learned-vit-seeds", folder)
    (folder / "predictions.md").write_text(
        (folder / "predictions.md").read_text() + "\nEdited after the runs.\n"
    )
    with pytest.raises(ResultsError, match="was not run at seed 2 under"):
        load_vit_seeds(folder)


def test_the_seed_rule_was_committed_before_the_runs_and_not_edited_after():
    root, git = _history_or_skip()
    path = "results/learned-vit-seeds/predictions.md"
    last = git("log", "-1", "--format=%H", "--", path).stdout.strip()
    assert last, f"{path} is not committed"
    _, runs = load_vit_seeds()
    for seed, (_, record) in runs.items():
        run = record["git"]["commit"]
        assert last != run, f"{path} was changed in seed {seed}'s own commit {run}"
        assert git("merge-base", "--is-ancestor", last, run).returncode == 0
        assert git("show", f"{run}:{path}").stdout == (root / path).read_text()


def test_chapter1_refuses_an_embedding_whose_run_disagrees_with_the_record_table(tmp_path):
    import shutil

    from companion.experiments import records

    root = tmp_path / "results"
    shutil.copytree(records.results_root() / "learned-vit", root / "learned-vit")
    records.write_table(root)
    load_vit_embedding(root / "learned-vit")  # the table's row is the record's
    rows = records.load_table(root)
    rows[0]["correct"] -= 1  # a count the table holds that the record does not
    text = records.table_text(rows)
    (root / records.TABLE).write_text(text, encoding="utf-8")
    (root / records.TABLE_HASH).write_text(records._hash_line(text), encoding="utf-8")
    with pytest.raises(ResultsError, match=r"provenance\.json does not agree"):
        load_vit_embedding(root / "learned-vit")
