"""What the chapters read is what the runs wrote: a published folder with one file changed,
damaged, removed or unlisted is refused by every reading function, in one line naming the file;
where the runs sealed their records, even a hash list made to match does not let an edit through."""

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest
import torch

from companion.experiments.chapter1 import load_learned_embedding
from companion.experiments.integrity import (
    MANIFEST,
    ResultsError,
    file_hashes,
    manifest_differences,
    write_manifest,
)
from companion.experiments.results import (
    find_results,
    load_bias_tables,
    load_curves,
    load_results,
    load_transfer,
    read_text,
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A copy of the committed ``cpu-transfer`` folder (runs, curves, tables, transfer rows)."""
    return Path(shutil.copytree(find_results("cpu-transfer"), tmp_path / "cpu-transfer"))


def edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def flip_bit(results: dict) -> None:
    split = results["runs"][0]["splits"]["test"]
    key = next(k for k, v in split.items() if isinstance(v, str) and len(v) > 8)
    split[key] = ("1" if split[key][0] == "0" else "0") + split[key][1:]


def drop_run(results: dict) -> None:
    results["runs"].pop()


def shift_summary(results: dict) -> None:
    results["summary"][0]["mean"] += 0.01


def change_commit(results: dict) -> None:
    results["header"]["git"]["commit"] = "0" * 40


def first_curve(folder: Path) -> Path:
    return sorted((folder / "curves").glob("*.json"))[0]


def change_curve(folder: Path) -> None:
    edit_json(first_curve(folder), lambda c: c["epochs"][0].update(test_acc=0.123))


def change_table(folder: Path) -> None:
    path = sorted((folder / "bias").glob("*.pt"))[0]
    tables = torch.load(path, weights_only=True)
    first = next(iter(tables.values()))
    first["table"][0, 0] += 1.0
    torch.save(tables, path)


def change_transfer_row(folder: Path) -> None:
    edit_json(folder / "transfer.json", lambda t: t["rows"][0].update(acc=1.0))


RESULTS = Path("results.json")
#: (what is changed, how, the file the message must name, what the runs' seals say once the hash
#: list is made to match; None: only the hash list guards it)
TAMPERED = [
    ("per-image bits", lambda f: edit_json(f / RESULTS, flip_bit), "results.json", "record_sha256"),
    ("a dropped seed", lambda f: edit_json(f / RESULTS, drop_run), "results.json", "summary"),
    ("a summary value", lambda f: edit_json(f / RESULTS, shift_summary), "results.json", "summary"),
    ("the commit", lambda f: edit_json(f / RESULTS, change_commit), "results.json", None),
    ("a curve", change_curve, "curves/", "record_sha256"),
    ("a bias table entry", change_table, "bias/", None),
    ("a transfer row", change_transfer_row, "transfer.json", None),
]


def test_a_sealed_transfer_record_edited_with_its_hash_list_is_refused(tmp_path):
    folder = Path(shutil.copytree(find_results("cpu-transfer-far"), tmp_path / "far"))
    change_transfer_row(folder)
    write_manifest(folder)  # the hash list made to match: the record's own seal still refuses
    with pytest.raises(ResultsError, match=r"transfer\.json does not match its record_sha256"):
        load_transfer(folder, load_results(folder))


def read_everything(folder: Path) -> None:
    """Every reading function a chapter calls on a results folder."""
    results = load_results(folder)
    load_curves(folder, variant=None)
    read_text(folder, "predictions.md")  # chapter 6's first experiment: read as text
    for name in results["bias_files"]:
        dataset, pos = Path(name).stem.split("__")[:2]
        load_bias_tables(folder, dataset, pos)
    load_transfer(folder, results)


#: The mark of a folder published before folders were hashed, and hashed once afterwards.
AFTER_THE_RUN = "after the run"


def test_the_committed_folders_read_verified_and_are_marked_hashed():
    for name in ("cpu-ablation", "cpu-far-relation", "cpu-transfer"):
        folder = find_results(name)
        assert manifest_differences(folder) == []
        assert load_results(folder)["header"]["hashed"] == AFTER_THE_RUN
    embedding, record = load_learned_embedding()
    assert record["hashed"] == AFTER_THE_RUN and embedding.dim() == 4


@pytest.mark.parametrize(
    ("what", "tamper", "named", "sealed"), TAMPERED, ids=[t[0] for t in TAMPERED]
)
def test_a_changed_file_is_refused_in_one_line_naming_it(folder, what, tamper, named, sealed):
    read_everything(folder)  # intact: reads
    tamper(folder)
    with pytest.raises(ResultsError) as info:
        read_everything(folder)
    message = str(info.value)
    assert "\n" not in message and named in message and "changed or damaged" in message
    write_manifest(folder)  # the hash list made to match the edit
    if sealed is None:
        read_everything(folder)  # nothing the runs sealed covers it: the hash list was the guard
    else:
        with pytest.raises(ResultsError, match=sealed):
            read_everything(folder)


@pytest.mark.parametrize("damage", ["remove", "truncate", "unlist"])
def test_a_missing_damaged_or_unlisted_file_is_refused(folder, damage):
    curve = first_curve(folder)
    if damage == "remove":
        curve.unlink()
    elif damage == "truncate":
        curve.write_bytes(curve.read_bytes()[:10])
    else:
        hashes = file_hashes(folder)
        del hashes[f"curves/{curve.name}"]
        (folder / MANIFEST).write_text("".join(f"{h}  {p}\n" for p, h in hashes.items()))
    with pytest.raises(ResultsError, match=re.escape(curve.name)):
        load_results(folder)


def test_a_folder_without_a_hash_list_is_refused_and_says_what_to_do(folder):
    (folder / MANIFEST).unlink()
    with pytest.raises(ResultsError, match=r"SHA256SUMS is missing: restore the folder"):
        load_results(folder)


# ------------------------------------------------------------------ every file, and sealed labels


@pytest.mark.parametrize("where", ["results.md", "extra.txt", "curves/extra.json"])
def test_a_file_no_loader_reads_is_checked_too_and_an_extra_file_refused(folder, where):
    results = load_results(folder)  # read before the edit: load_transfer checks its sources
    path = folder / where
    if path.exists():  # results.md: read by no loader, published all the same
        path.write_text(path.read_text() + "an edit\n")
        expected = f"{where} was changed or damaged"
    else:
        path.write_text("{}\n")
        expected = f"{where} is not listed in"
    readers = (
        load_results,
        lambda f: load_transfer(f, results),
        lambda f: read_text(f, "predictions.md"),
    )
    for read in readers:
        with pytest.raises(ResultsError, match=re.escape(expected)):
            read(folder)


def test_a_label_edit_with_its_hashes_refreshed_is_refused_by_the_runs_sealed_labels(folder):
    def relabel(results: dict) -> None:  # the first test image's label changed, every hash made
        kept = results["test_sets"]["grid-cell"]["test"]  # to match but what the runs sealed
        kept["labels"] = ("1" if kept["labels"][0] == "0" else "0") + kept["labels"][1:]
        kept["labels_sha256"] = hashlib.sha256(kept["labels"].encode()).hexdigest()
        counts = [kept["labels"].count(c) for c in set(kept["labels"])]
        kept["constant_answer"] = max(counts) / len(kept["labels"])

    edit_json(folder / RESULTS, relabel)
    write_manifest(folder)
    with pytest.raises(ResultsError, match="not the ones its runs sealed"):
        load_results(folder)
    edit_json(folder / RESULTS, lambda r: r["test_sets"]["grid-cell"]["test"].update(n=3))
    write_manifest(folder)
    with pytest.raises(ResultsError, match="n or constant answer"):
        load_results(folder)


def test_an_empty_test_set_is_refused_not_read_as_a_constant_answer_of_0(folder):
    def empty(results: dict) -> None:  # no labels, every hash and count made to match
        kept = results["test_sets"]["grid-cell"]["test"]
        kept.update(labels="", labels_sha256=hashlib.sha256(b"").hexdigest(), n=0)
        kept["constant_answer"] = 0.0

    edit_json(folder / RESULTS, empty)
    write_manifest(folder)
    with pytest.raises(ResultsError, match="is not an ablation's results"):
        load_results(folder)
