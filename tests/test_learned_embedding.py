import json
from pathlib import Path

import pytest
import torch

from companion.absolute import sincos_2d_position_embedding
from companion.experiments.chapter1 import load_learned_embedding
from companion.experiments.integrity import ResultsError
from companion.experiments.learned_embedding import (
    grid_table,
    neighbour_pairs,
    permutation_p_value,
    same_parity_pairs,
    shuffled_null,
    similarity_gap,
)


def test_smooth_embedding_has_positive_neighbour_gap_far_outside_the_null():
    table = sincos_2d_position_embedding(8, 32)  # (64, 32): neighbours alike by construction
    observed = similarity_gap(table, neighbour_pairs(8))
    null = shuffled_null(table, neighbour_pairs(8), draws=200)
    assert observed > 0.1
    assert observed > null.max()
    assert permutation_p_value(observed, null) == pytest.approx(1 / 201)


def test_random_embedding_sits_inside_its_null():
    table = torch.randn(64, 32, generator=torch.Generator().manual_seed(0))
    null = shuffled_null(table, neighbour_pairs(8), draws=200)
    assert abs(float(null.mean())) < 0.01
    assert permutation_p_value(similarity_gap(table, neighbour_pairs(8)), null) > 0.05


def test_shuffled_null_is_deterministic_for_a_seed():
    table = torch.randn(16, 8)
    pairs = neighbour_pairs(4)
    assert torch.equal(
        shuffled_null(table, pairs, 20, seed=3), shuffled_null(table, pairs, 20, seed=3)
    )


def test_neighbour_pairs_of_a_2x3_grid_are_its_7_edges_counted_both_ways():
    pairs = neighbour_pairs((2, 3))
    assert int(pairs.sum()) == 2 * 7
    assert pairs[0, 1] and pairs[0, 3] and not pairs[0, 4]


def test_same_parity_pairs_join_cells_with_the_same_merge_slot():
    pairs = same_parity_pairs(4)
    assert pairs[0, 2] and pairs[0, 10] and not pairs[0, 1] and not pairs[0, 0]
    assert int(pairs.sum()) == 4 * 4 * 3  # 4 slots of 4 cells, 3 partners each


def test_a_parity_coded_embedding_passes_the_parity_null():
    slot_vectors = torch.randn(4, 16, generator=torch.Generator().manual_seed(1))
    rows, cols = torch.meshgrid(torch.arange(8), torch.arange(8), indexing="ij")
    table = slot_vectors[(rows % 2 * 2 + cols % 2).reshape(-1)]
    null = shuffled_null(table, same_parity_pairs(8), draws=200)
    assert permutation_p_value(similarity_gap(table, same_parity_pairs(8)), null) < 0.01


def test_similarity_gap_rejects_a_relation_of_the_wrong_size():
    with pytest.raises(ValueError, match="related must have shape \\(4, 4\\)"):
        similarity_gap(torch.randn(4, 3), neighbour_pairs(3))


def test_grid_table_flattens_swin_layout_row_major():
    embed = torch.arange(2 * 3 * 4.0).reshape(1, 2, 3, 4)
    table, grid = grid_table(embed)
    assert grid == (2, 3)
    assert torch.equal(table[4], embed[0, 1, 1])


def test_grid_table_rejects_other_shapes_naming_the_parameter():
    with pytest.raises(ValueError, match="pos_embed must be a \\(1, h, w, D\\)"):
        grid_table(torch.zeros(64, 32))


def test_the_committed_embedding_loads_with_its_provenance():
    embedding, record = load_learned_embedding()
    assert embedding.shape == (1, 8, 8, 32)
    assert record["git"]["dirty"] is False and record["settings"]["pos"] == "abs"


def test_load_learned_embedding_names_the_folders_it_searched(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"folder: no absolute_pos_embed\.pt"):
        load_learned_embedding(tmp_path)


# --------------------------------------------------------------------------- the command


@pytest.fixture
def no_training(monkeypatch):
    """``python -m companion.commands.learned_embedding``'s main, training that fails the test."""
    from companion.experiments.runs import learned_embedding as run

    def train(*args, **kwargs):
        pytest.fail("training started before --out was checked")

    monkeypatch.setattr(run, "train", train)
    return run


def _refused(run, capsys, out, *extra) -> str:
    code = run.main(["--out", str(out), *extra])
    captured = capsys.readouterr()
    assert code == 1 and captured.out == "", captured
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{run.PROG}: error: --out {out} "), lines
    return lines[0]


def test_an_out_that_is_a_file_is_refused_before_training(no_training, tmp_path, capsys):
    (tmp_path / "f").write_text("mine")
    assert "exists and is a file" in _refused(no_training, capsys, tmp_path / "f")
    assert "cannot be created" in _refused(no_training, capsys, tmp_path / "f" / "sub")
    assert (tmp_path / "f").read_text() == "mine"


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_unwritable_out_is_refused_before_training(no_training, capsys):
    # Tried by creating a file there: os.access answers yes to root, for /proc too.
    assert "is not writable" in _refused(no_training, capsys, Path("/proc/companion-out"))


def test_debug_shows_the_out_errors_traceback(no_training, tmp_path):
    (tmp_path / "f").write_text("mine")
    with pytest.raises(NotADirectoryError, match="--out"):
        no_training.main(["--out", str(tmp_path / "f"), "--debug"])


def test_a_new_out_folder_receives_the_embedding_and_its_provenance(tmp_path, capsys, monkeypatch):
    from types import SimpleNamespace

    from companion.experiments.runs import learned_embedding as run

    model = torch.nn.Module()
    model.absolute = torch.nn.Module()
    model.absolute.pos_embed = torch.nn.Parameter(torch.ones(1, 2, 2, 3))
    trained = SimpleNamespace(model=model, history=[{"test_acc": 12.5}])
    monkeypatch.setattr(run, "train", lambda cfg: trained)
    monkeypatch.setattr(run, "provenance", lambda command: {"command": command})
    out = tmp_path / "new" / "learned-abs"
    assert run.main(["--out", str(out)]) == 0
    assert "final test acc 12.5" in capsys.readouterr().out
    embedding = torch.load(out / "absolute_pos_embed.pt", weights_only=True)
    assert torch.equal(embedding, model.absolute.pos_embed.detach())
    record = json.loads((out / "provenance.json").read_text())
    assert record["command"].endswith(f"--out {out}") and record["final_test_acc"] == 12.5
    # hashed as it is written: it reads back verified, and a changed embedding is refused
    loaded, _ = load_learned_embedding(out)
    assert torch.equal(loaded, embedding) and record["hashed"] == "at publish"
    torch.save(embedding + 1, out / "absolute_pos_embed.pt")
    with pytest.raises(ResultsError, match="changed or damaged"):
        load_learned_embedding(out)


def test_an_interrupted_run_says_nothing_was_saved(tmp_path, capsys, monkeypatch):
    from companion.experiments.runs import learned_embedding as run

    def interrupted(cfg):
        raise KeyboardInterrupt("interrupted in epoch 3; continue with --resume")

    monkeypatch.setattr(run, "train", interrupted)
    monkeypatch.setattr(run, "provenance", lambda command: {"command": command})
    assert run.main(["--out", str(tmp_path / "out")]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nothing was saved" in err[0] and "--resume" not in err[0]
