"""The ablation runner on a minuscule budget: files, provenance, table, resumability."""

import json

import pytest
import torch

from companion.experiments.results import (
    find_results,
    load_bias_tables,
    load_curves,
    load_results,
    run_key,
    summarize,
)
from companion.experiments.runs import ablation
from companion.experiments.runs.ablation import bias_tables, main, results_table, run_ablation
from companion.figures.training import (
    bias_grid,
    plot_ablation_curves,
    plot_bias_tables,
    plot_seed_dots,
)
from companion.position import Position
from companion.relative import relative_position_index
from companion.swin import swin_from_config
from companion.swin_configs import canonical_variant
from companion.train import TrainConfig


@pytest.fixture(scope="module")
def mini(tmp_path_factory, tiny_plan):
    """One minuscule ablation (relation; none and rel; seeds 0 and 1), shared by the tests."""
    tmp_path = tmp_path_factory.mktemp("ablation")
    results = run_ablation(
        tiny_plan(tmp_path), command="python -m companion.commands.ablation --name mini"
    )
    return results, tmp_path / "results" / "mini"


def test_runner_writes_results_curves_table_and_bias_tables(mini):
    results, folder = mini
    saved = json.loads((folder / "results.json").read_text())
    assert saved == json.loads(json.dumps(results))
    assert len(saved["runs"]) == 4
    assert {(r["pos"], r["seed"]) for r in saved["runs"]} == {
        ("none", 0),
        ("none", 1),
        ("rel", 0),
        ("rel", 1),
    }
    header = saved["header"]
    for key in ("cpu", "gpu", "torch", "git", "command", "date_utc", "wall_s"):
        assert key in header
    assert header["command"] == "python -m companion.commands.ablation --name mini"
    assert set(header["git"]) == {"commit", "dirty"}
    assert len(list((folder / "curves").glob("*.json"))) == 4
    table = (folder / "results.md").read_text()
    assert "| none |" in table and "| rel |" in table and "±" in table
    bias = torch.load(folder / "bias" / "relation__rel.pt", weights_only=True)
    assert len(bias) == 4  # tiny-cpu: 2 stages x 2 blocks
    assert not (folder / "bias" / "relation__none.pt").exists()


def test_a_second_call_reuses_finished_runs(tmp_path, monkeypatch, tiny_plan):
    plan = tiny_plan(tmp_path, pos=("rel",), seeds=(0,))
    first = run_ablation(plan)
    monkeypatch.setattr(ablation, "train", lambda *a, **k: pytest.fail("should not train"))
    second = run_ablation(plan)
    assert second["runs"] == first["runs"]


def test_summary_is_mean_and_sample_std_over_seeds():
    runs = [
        {"dataset": "d", "pos": "rel", "seed": s, "final": {"test_acc": a}}
        for s, a in enumerate([0.5, 0.6, 0.7])
    ]
    (row,) = summarize(runs)
    assert row["mean"] == pytest.approx(0.6) and row["std"] == pytest.approx(0.1)
    assert row["n"] == 3


def test_table_shows_percent_mean_plus_minus_std_and_chance():
    summary = [
        {"dataset": "grid-cell", "pos": "abs", "n": 3, "mean": 0.5, "std": 0.01},
        {"dataset": "grid-cell", "pos": "rel", "n": 3, "mean": 0.25, "std": 0.125},
    ]
    table = results_table(summary, {"grid-cell": 1 / 16})
    assert "grid-cell (chance 6.2)" in table
    assert "| abs | 50.0 ± 1.0 |" in table and "| rel | 25.0 ± 12.5 |" in table


def test_bias_tables_finds_every_block_with_its_window():
    model = swin_from_config("tiny-cpu", pos="abs+rel")
    tables = bias_tables(model)
    assert list(tables) == [
        "layers.0.blocks.0.attn",
        "layers.0.blocks.1.attn",
        "layers.1.blocks.0.attn",
        "layers.1.blocks.1.attn",
    ]
    assert tables["layers.1.blocks.0.attn"]["table"].shape == (49, 4)
    assert tables["layers.0.blocks.0.attn"]["window_size"] == [4, 4]
    assert bias_tables(swin_from_config("tiny-cpu", pos="abs")) == {}


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"name": "a/b"}, "name must be a plain folder name"),
        ({"datasets": ("mnist",)}, "datasets: dataset must be one of"),
        ({"pos": ("sincos",)}, "pos: pos must be one of"),
        ({"seeds": (-1,)}, r"seeds: seed must be an int in \[0, 4294967295\], got -1"),
        ({"jobs": 0}, r"jobs must be an int in \[1, 1024\], got 0"),
    ],
)
def test_bad_plans_are_rejected_naming_the_field(tmp_path, kw, message, tiny_plan):
    with pytest.raises(ValueError, match=message):
        tiny_plan(tmp_path, **kw)


def test_command_line_rejects_bad_flags(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--name", "x", "--epochs", "0"])
    assert (
        info.value.code == 2 and "epochs must be an int in [1, 100000]" in capsys.readouterr().err
    )
    with pytest.raises(SystemExit):
        main(["--name", "x", "--pos", "sincos"])


def test_command_line_runs_and_records_its_exact_command(tmp_path, capsys):
    argv = ["--name", "cli", "--datasets", "grid-cell", "--pos", "abs", "--seeds", "3"]
    argv += ["--epochs", "1", "--train-size", "16", "--test-size", "8", "--batch-size", "16"]
    argv += ["--results-dir", str(tmp_path / "r"), "--work-dir", str(tmp_path / "w")]
    assert main(argv) == 0
    saved = json.loads((tmp_path / "r" / "cli" / "results.json").read_text())
    assert saved["header"]["command"].startswith("python -m companion.commands.ablation --name cli")
    assert saved["runs"][0]["seed"] == 3
    assert "| abs |" in capsys.readouterr().out


# --------------------------------------------------------------------------- reading results back


def test_results_read_back_with_curves_and_bias_tables(mini):
    results, folder = mini
    assert load_results(folder) == json.loads(json.dumps(results))
    curves = load_curves(folder)
    assert set(curves) == {("relation", p, s) for p in ("none", "rel") for s in (0, 1)}
    assert [r["epoch"] for r in curves[("relation", "rel", 0)]] == [1]
    tables = load_bias_tables(folder, "relation", "rel")
    assert tables["layers.0.blocks.0.attn"]["table"].shape == (49, 2)
    with pytest.raises(FileNotFoundError, match="pos='none'"):
        load_bias_tables(folder, "relation", "none")


def test_find_results_looks_in_the_given_places_first(mini):
    _, folder = mini
    assert find_results("mini", search=[folder.parent]) == folder


def test_find_results_says_where_it_looked(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no results 'nothing-here'.*nowhere"):
        find_results("nothing-here", search=[tmp_path / "nowhere"])


# --------------------------------------------------------------------------- figures


def test_bias_grid_puts_each_offset_at_its_place():
    window = (3, 4)
    index = relative_position_index(window)
    table = torch.arange(5 * 7 * 2, dtype=torch.float32).view(35, 2)
    grid = bias_grid(table.numpy(), window)
    assert grid.shape == (2, 5, 7)
    # query (2, 3), key (0, 1): offset (2, 2) -> grid cell (2 + 2, 2 + 3)
    q, k = 2 * 4 + 3, 0 * 4 + 1
    assert grid[1, 4, 5] == table[index[q, k], 1]


def test_ablation_figures_draw_one_panel_per_dataset(mini):
    results, folder = mini
    fig = plot_ablation_curves(load_curves(folder), results["chance"])
    assert len(fig.axes) == 1
    fig = plot_seed_dots(results["summary"], results["chance"])
    assert len(fig.axes) == 1


def test_bias_table_figure_has_a_panel_per_head_and_block(mini):
    _, folder = mini
    fig = plot_bias_tables(load_bias_tables(folder, "relation", "rel"))
    heat_maps = [ax for ax in fig.axes if ax.images]
    assert len(heat_maps) == 2 + 2 + 4 + 4


def test_old_run_keys_are_unchanged_and_variants_get_their_own():
    assert run_key("grid-cell", "rel", 3) == "grid-cell__rel__seed3"
    assert run_key("grid-cell", "rel", 3, "torus") == "grid-cell__rel__torus__seed3"


@pytest.fixture(scope="module")
def with_extra(tmp_path_factory, tiny_plan):
    """Relation, pos none, seeds 0 and 1, plus the extra cell rel with an |offset|-only table."""
    tmp_path = tmp_path_factory.mktemp("extra")
    plan = tiny_plan(tmp_path, pos=("none",), extra=(("relation", "rel", "abs-offset-bias"),))
    return run_ablation(plan), tmp_path / "results" / "mini", plan


def test_extra_cells_run_for_every_seed_and_are_recorded_with_their_variant(with_extra):
    results, folder, plan = with_extra
    none, rel = Position.parse("none"), Position.parse("rel")  # a plan holds Positions
    assert plan.runs() == [
        ("relation", none, "swin", 0), ("relation", rel, "abs-offset-bias", 0),
        ("relation", none, "swin", 1), ("relation", rel, "abs-offset-bias", 1),
    ]  # fmt: skip
    assert [(r["pos"], r["variant"], r["settings"]["variant"]) for r in results["runs"]] == [
        ("none", "swin", "swin"), ("rel", "abs-offset-bias", "abs-offset-bias"),
    ] * 2  # fmt: skip
    assert results["plan"]["extra"] == ["relation:rel:abs-offset-bias"]
    assert "variant" not in results["plan"]["train"]
    rows = {(r["pos"], r["variant"]): r for r in results["summary"]}
    assert rows["rel", "abs-offset-bias"]["seeds"] == [0, 1]
    assert len(rows["rel", "abs-offset-bias"]["values"]) == 2
    assert "| rel:abs-offset-bias |" in (folder / "results.md").read_text()
    assert results["header"]["wall_s"] > 0
    curves = load_curves(folder, variant=None)
    assert set(curves) == {("relation", p, v, s) for p, v in rows for s in (0, 1)}
    assert set(load_curves(folder)) == {("relation", "none", 0), ("relation", "none", 1)}


def test_a_magnitude_bias_table_is_saved_in_the_signed_offset_layout(with_extra):
    _, folder, _ = with_extra
    tables = load_bias_tables(folder, "relation", "rel", "abs-offset-bias")
    entry = tables["layers.0.blocks.0.attn"]
    wh, ww = entry["window_size"]
    grid = entry["table"].reshape(2 * wh - 1, 2 * ww - 1, -1)
    assert torch.equal(grid, grid.flip(0)) and torch.equal(grid, grid.flip(1))
    with pytest.raises(FileNotFoundError, match="variant='swin'"):
        load_bias_tables(folder, "relation", "rel")


@pytest.mark.parametrize(
    "cell, message",
    [
        ("grid-cell:none:abs-offset-bias", "cell grid-cell:none:abs-offset-bias: rel_bias_offse"),
        ("grid-cell:rel:wobble", "variant must be one of"),
        ("grid-cell:sinus:torus", "pos must be one of"),
        ("mnist:rel:torus", "dataset must be one of"),
        ("grid-cell:rel:swin", "main grid"),
        ("grid-cell:rel", "dataset:pos:variant"),
    ],
)
def test_meaningless_extra_cells_are_refused_in_one_line(capsys, cell, message):
    with pytest.raises(SystemExit):
        main(["--name", "x", "--extra", cell])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(
    "cell, message",
    [
        (
            "grid-cell:rel:torus",
            "extra: a cell must be a (dataset, pos, variant) tuple, got 'grid-cell:rel:torus' "
            "(str)",
        ),
        (
            ("grid-cell", 5, "torus"),
            "extra cell grid-cell:5:torus: pos must be a Position or one of ['none', 'abs', "
            "'rel', 'abs+rel', 'cpb', 'rope-axial', 'rope-mixed'], got 5 (int)",
        ),
    ],
    ids=["a string cell", "a non-string pos"],
)
def test_an_extra_cell_of_the_wrong_type_is_one_type_error_naming_what_was_given_and_allowed(
    tmp_path, tiny_plan, cell, message
):
    with pytest.raises(TypeError) as refused:
        tiny_plan(tmp_path, extra=(cell,))
    assert str(refused.value) == message


def test_an_extra_cell_already_in_the_grid_is_refused(tmp_path, tiny_plan):
    base = TrainConfig(variant="torus", progress=False)
    with pytest.raises(ValueError, match="already in the plan"):
        tiny_plan(tmp_path, base=base, extra=(("relation", "rel", "torus"),))


@pytest.mark.parametrize(
    "cells",
    [
        ["relation:rel:torus", "relation:rel:torus+torus"],
        ["relation:rel:no-shift+torus", "relation:rel:torus+no-shift"],
    ],
    ids=["repeated", "reordered"],
)
def test_two_names_of_one_model_are_one_cell(capsys, cells):
    # One model, one row: variant names are made canonical before the duplicate check.
    with pytest.raises(SystemExit):
        main(["--name", "x", "--extra", *cells])
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "is already in the plan" in err


def test_a_variant_has_one_canonical_name():
    assert canonical_variant("torus+no-shift+torus") == "no-shift+torus"
    assert canonical_variant("swin") == "swin" and canonical_variant("swin+torus") == "torus"
    with pytest.raises(ValueError, match="variant must be one of"):
        canonical_variant("torus+wobble")


def test_the_main_grids_variant_is_canonical_too(tmp_path, tiny_plan):
    base = TrainConfig(variant="torus+no-shift+torus", progress=False)
    assert tiny_plan(tmp_path, base=base).base.variant == "no-shift+torus"
    with pytest.raises(ValueError, match="already in the plan"):
        tiny_plan(tmp_path, base=base, extra=(("relation", "rel", "no-shift+torus"),))
