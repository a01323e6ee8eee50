"""Chapter 6's blind seeds: which planned runs are pilots' twins, read from the sealed
records; chapter 6 prints every one of them and says what they are; and step 5 of
results/run_cpu_transfer_far.sh trains seed 5 of exactly the cells left with fewer than five
seeds that are no pilot's, with the settings of the step they came from."""

from __future__ import annotations

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest

from companion.experiments import pilots
from companion.experiments.pilots import (
    find_pilot_twins,
    fingerprint,
    pilot_folders,
    pilot_twins,
    twins_table,
)
from companion.experiments.results import load_results
from companion.experiments.runs import blind_codes
from companion.experiments.runs.blind_codes import BLIND_SEEDS, lacking_blind_seeds

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
SCRIPT = RESULTS / "run_cpu_transfer_far.sh"
PILOTS = RESULTS / "pilots" / "out" / "transfer"
CHAPTER = ROOT / "book" / "06_resolution_and_beyond.ipynb"
#: Each planned step's folders and the folder step 5 writes for its blind seeds.
STEPS = {
    "cpu-transfer-far-blind": ("cpu-transfer-far", "cpu-transfer-far-more"),
    "cpu-transfer-far-48-world-blind": ("cpu-transfer-far-48-world",),
    "cpu-transfer-far-48-scaled-blind": ("cpu-transfer-far-48-scaled",),
}


def _commands(module: str) -> list[list[str]]:
    """The words after ``python -m <module>`` of each such line of the run script, in order."""
    text = SCRIPT.read_text().replace("\\\n", " ")
    return [
        shlex.split(line.split(f"-m {module}", 1)[1].rstrip(")"))
        for line in text.splitlines()
        if f"-m {module} " in line and not line.lstrip().startswith("#")
    ]


def _by_name(words_list: list[list[str]]) -> dict[str, list[str]]:
    return {w[w.index("--name") + 1]: w for w in words_list}


def _without(words: list[str], *flags: str) -> list[str]:
    """``words`` less each of ``flags`` and its values (up to the next flag)."""
    out, skip = [], False
    for word in words:
        if word.startswith("--"):
            skip = word in flags
        if not skip:
            out.append(word)
    return out


def _test_bits(folder: Path) -> dict[tuple[str, int], str]:
    runs = json.loads((folder / "results.json").read_text())["runs"]
    return {(r["pos"], int(r["seed"])): r["splits"]["test"]["correct"] for r in runs}


def _lacking_by_test_bits(folders: tuple[str, ...]) -> list[str]:
    """The cells with fewer than five seeds whose test bits equal no pilot run's: counted here
    from the files, independently of companion.experiments.pilots."""
    pilots = {bits for f in PILOTS.glob("*/results.json") for bits in _test_bits(f.parent).values()}
    seeds: dict[str, list[int]] = {}
    for folder in folders:
        for (pos, seed), bits in _test_bits(RESULTS / folder).items():
            seeds.setdefault(pos, [])
            if bits not in pilots:
                seeds[pos].append(seed)
    return [pos for pos, blind in seeds.items() if len(blind) < BLIND_SEEDS]


def test_the_twins_are_the_seed_0_runs_the_pilots_ran_with_their_moves():
    planned = [RESULTS / f for folders in STEPS.values() for f in folders]
    twins = pilot_twins(planned, pilot_folders(PILOTS))
    codes = ["none", "abs", "rel", "abs+rel", "cpb", "rope-axial", "rope-mixed"]
    assert [(t.folder, t.run, t.pilot_run) for t in twins] == [
        ("cpu-transfer-far", f"far-relation__{c}__seed0", f"far-relation__{c}__seed0")
        for c in codes
    ] + [
        ("cpu-transfer-far-48-world", f"far-relation__{c}__seed0", f"far-relation__{c}__seed0")
        for c in ("rel", "rope-mixed")
    ]
    assert {t.pilot for t in twins} == {"codes-32", "ref-48-world-w6-cur10"}
    moved = [t for t in twins if t.folder == "cpu-transfer-far"]
    assert sum(t.of for t in moved) == 32 and all(t.moves == t.of for t in moved)


def test_step_5_trains_seed_5_of_exactly_the_cells_lacking_a_fifth_blind_seed():
    lacking = {
        name: lacking_blind_seeds([RESULTS / f for f in folders], pilot_folders(PILOTS))
        for name, folders in STEPS.items()
    }
    assert lacking == {name: _lacking_by_test_bits(folders) for name, folders in STEPS.items()}
    assert lacking == {
        "cpu-transfer-far-blind": ["none", "rel", "abs+rel", "rope-axial", "rope-mixed"],
        "cpu-transfer-far-48-world-blind": ["rel", "rope-mixed"],
        "cpu-transfer-far-48-scaled-blind": [],
    }
    # The script asks blind_codes about each step's folders before training its blind folder.
    asked = _commands("companion.experiments.runs.blind_codes")
    assert [w[w.index("--pilots") + 2 :] for w in asked] == [
        [f"results/{f}" for f in folders] for folders in STEPS.values()
    ]
    assert all(w[w.index("--pilots") + 1] == "$PILOTS" for w in asked)
    assert "PILOTS=results/pilots/out/transfer" in SCRIPT.read_text()
    ablations = _by_name(_commands("companion.commands.ablation"))
    for name, folders in STEPS.items():
        blind, planned = ablations[name], ablations[folders[0]]
        assert blind[blind.index("--seeds") + 1 :][:2] == ["5", "--pos"], name
        assert blind[blind.index("--pos") + 1] == "$BLIND", name
        # The same settings as the step the cells came from, but the name, seeds and codes.
        same = ("--name", "--seeds", "--pos")
        assert sorted(_without(blind, *same)) == sorted(_without(planned, *same)), name
    moves = _by_name(_commands("companion.commands.resolution_experiment"))
    assert _without(moves["cpu-transfer-far-blind"], "--name") == _without(
        moves["cpu-transfer-far"], "--name"
    )


def test_a_copy_of_a_pilot_is_its_twin_and_a_run_that_only_agrees_image_by_image_is_not(
    tmp_path: Path,
):
    shutil.copytree(PILOTS / "ref-48-world-w6-cur10", tmp_path / "planned")
    twins = pilot_twins([tmp_path / "planned"], [PILOTS / "ref-48-world-w6-cur10"])
    assert [(t.run, t.pilot_run, t.of) for t in twins] == [
        ("far-relation__rel__seed0", "far-relation__rel__seed0", 0),
        ("far-relation__rope-mixed__seed0", "far-relation__rope-mixed__seed0", 0),
    ]
    run = json.loads((PILOTS / "codes-32" / "results.json").read_text())["runs"][0]
    other = {**run, "final": {**run["final"], "test_loss": run["final"]["test_loss"] + 1e-6}}
    assert fingerprint(other) != fingerprint(run)


def test_blind_codes_refuses_a_pilots_folder_without_pilots(tmp_path: Path, capsys):
    with pytest.raises(SystemExit):
        blind_codes.main(["--pilots", str(tmp_path), str(RESULTS / "cpu-transfer-far-48-world")])
    assert "no pilot folder" in capsys.readouterr().err


def test_chapter_6_prints_every_planned_run_equal_to_a_pilot_and_says_they_are_not_blind():
    cells = json.loads(CHAPTER.read_text())["cells"]
    source = ["".join(c["source"]) for c in cells]
    at = [
        i
        for i, c in enumerate(cells)
        if c["cell_type"] == "code" and "find_pilot_twins(" in source[i]
    ]
    assert len(at) == 1, "chapter 6 has no (or more than one) cell listing the pilots' twins"
    # It reads every folder of the experiment, so that no new folder's twins go unlisted.
    folders = sorted(p.parent.name for p in RESULTS.glob("cpu-transfer-far*/results.json"))
    assert sorted(re.findall(r'"(cpu-transfer-far[^"]*)"', source[at[0]])) == folders
    twins = pilot_twins([RESULTS / f for f in folders], pilot_folders(PILOTS))
    printed = [
        "".join(out["data"]["text/markdown"])
        for out in cells[at[0]]["outputs"]
        if "text/markdown" in out.get("data", {})
    ]
    assert printed == [twins_table(twins)], "the committed output is not what the records give"
    if twins:  # the prose just before the list says what they are
        prose = source[at[0] - 1]
        assert cells[at[0] - 1]["cell_type"] == "markdown"
        for words in ("pilot", "bit for bit", "not blind", "seed 5", "`predictions.md` unchanged"):
            assert words in prose, words


def test_find_pilot_twins_finds_the_pilots_beside_the_results_it_reads(monkeypatch):
    twins = find_pilot_twins(["cpu-transfer-far-48-world", "cpu-transfer-far-48-scaled"])
    assert [(t.folder, t.run) for t in twins] == [
        ("cpu-transfer-far-48-world", "far-relation__rel__seed0"),
        ("cpu-transfer-far-48-world", "far-relation__rope-mixed__seed0"),
    ]
    monkeypatch.setattr(pilots, "TRANSFER_PILOTS", "pilots/nowhere")
    with pytest.raises(FileNotFoundError, match="no pilot folder"):
        find_pilot_twins(["cpu-transfer-far-48-world"])


def test_the_blind_folders_give_every_cell_five_seeds_no_pilot_ran():
    for name, folders in STEPS.items():
        planned = [RESULTS / f for f in folders]
        lacking = lacking_blind_seeds(planned, pilot_folders(PILOTS))
        if not lacking:
            assert not (RESULTS / name).exists(), name
            continue
        runs = load_results(RESULTS / name)["runs"]
        assert sorted((r["pos"], r["seed"]) for r in runs) == sorted((p, 5) for p in lacking)
        assert pilot_twins([RESULTS / name], pilot_folders(PILOTS)) == []
        assert lacking_blind_seeds([*planned, RESULTS / name], pilot_folders(PILOTS)) == []
