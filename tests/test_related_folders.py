"""Folders read together come from one results tree and one experiment: a folder missing from the
tree a chapter reads is never taken from another checkout or the installed package, and folders
whose code or settings disagree are refused, naming both and what differs."""

import copy
import shutil

import pytest

from companion.experiments.far_transfer import load_far_transfer
from companion.experiments.integrity import ResultsError
from companion.experiments.related import check_added_seeds, check_one_run
from companion.experiments.results import find_results, load_results

FAR = "cpu-transfer-far"


@pytest.fixture(scope="module")
def records() -> dict[str, dict]:
    """The committed records of chapter 6's experiment, by folder name."""
    names = [FAR, f"{FAR}-more", f"{FAR}-blind", f"{FAR}-48-world", f"{FAR}-48-scaled",
             f"{FAR}-48-world-blind"]  # fmt: skip
    return {name: load_results(find_results(name)) for name in names}


def changed(record: dict, **train) -> dict:
    out = copy.deepcopy(record)
    out["plan"]["train"].update(train)
    return out


def test_a_folder_missing_from_the_tree_read_is_not_merged_from_another(tmp_path, monkeypatch):
    tree = tmp_path / "results"  # a results tree with the main folder but not its extra seeds
    shutil.copytree(find_results(FAR), tree / FAR)
    for name in ("records.csv", "records.csv.sha256"):
        shutil.copyfile(find_results(FAR).parent / name, tree / name)
    monkeypatch.chdir(tmp_path)
    assert find_results(FAR) == tree / FAR
    with pytest.raises(ResultsError, match=rf"{FAR}-more is missing.*same results tree"):
        load_far_transfer()  # the clone's cpu-transfer-far-more is not taken
    with pytest.raises(FileNotFoundError, match="the results tree found first"):
        find_results("cpu-ablation")  # nor any other folder of another tree


def test_the_committed_folders_are_one_run_and_their_added_seeds_agree(records):
    first, more = records[FAR], records[f"{FAR}-more"]
    check_one_run([first, more], [records[f"{FAR}-48-world"], records[f"{FAR}-48-scaled"]])
    check_added_seeds(
        (first, records[f"{FAR}-blind"]),
        (records[f"{FAR}-48-world"], records[f"{FAR}-48-world-blind"]),
    )


def test_extra_seeds_with_other_settings_or_code_are_refused_naming_them(records):
    first, more = records[FAR], records[f"{FAR}-more"]
    with pytest.raises(ResultsError, match=rf"{FAR}-more cannot be read with {FAR}: other "
                       r"settings \(lr 0\.002 vs 0\.001\)"):  # fmt: skip
        check_one_run([first, changed(more, lr=0.002)])
    other_code = copy.deepcopy(more)
    other_code["header"]["git"]["commit"] = "0" * 40
    with pytest.raises(ResultsError, match="ran other code"):
        check_one_run([first, other_code])


def test_a_reference_differs_only_in_how_it_draws_the_task_at_its_size(records):
    first, world = records[FAR], records[f"{FAR}-48-world"]
    assert world["plan"]["train"]["img_size"] != first["plan"]["train"]["img_size"]
    with pytest.raises(ResultsError, match=r"other settings \(epochs 20 vs 40\)"):
        check_one_run([first], [changed(world, epochs=20)])


def test_added_seeds_keep_their_parents_settings_and_one_commit(records):
    first, blind = records[FAR], records[f"{FAR}-blind"]
    world, world_blind = records[f"{FAR}-48-world"], records[f"{FAR}-48-world-blind"]
    with pytest.raises(ResultsError, match=r"other settings \(train_size 4000 vs 2000\)"):
        check_added_seeds((first, changed(blind, train_size=4000)))
    later = copy.deepcopy(world_blind)
    later["header"]["git"]["commit"] = "f" * 40
    with pytest.raises(ResultsError, match="seeds added together ran other code"):
        check_added_seeds((first, blind), (world, later))
