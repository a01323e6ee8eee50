"""The record table (``results/records.csv``): derived from the sealed folders byte for byte, its
own hash checked, and agreeing with the records on every number."""

import hashlib
import json
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from companion.experiments import chapter5
from companion.experiments.evaluation import unpack_bits
from companion.experiments.integrity import ResultsError
from companion.experiments.records import (
    COLUMNS,
    TABLE,
    TABLE_HASH,
    load_table,
    main,
    published_folders,
    record_rows,
    refresh_table,
    results_root,
    table_text,
)
from companion.experiments.resolution_transfer import condition_name
from companion.position import Position

ROOT = results_root()


@pytest.fixture(scope="module")
def table() -> list[dict]:
    return load_table(ROOT)


def _json(folder: str, name: str) -> dict:
    return json.loads((ROOT / folder / name).read_text(encoding="utf-8"))


def _key(row: dict) -> tuple:
    return tuple(row[c] for c in ("experiment", "record", "task", "code", "variant", "rendering",
                                  "size", "condition", "metric", "seed", "split"))  # fmt: skip


def test_the_committed_table_is_the_one_the_sealed_folders_give_byte_for_byte():
    text = (ROOT / TABLE).read_text(encoding="utf-8")
    assert text == table_text(record_rows(ROOT))
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert (ROOT / TABLE_HASH).read_text(encoding="utf-8") == f"{digest}  {TABLE}\n"
    assert text.splitlines()[0] == ",".join(COLUMNS)


def test_every_run_and_split_of_every_record_is_one_row(table):
    keys = [_key(r) for r in table]
    assert len(keys) == len(set(keys))
    count: dict[tuple[str, str], int] = defaultdict(int)
    for row in table:
        count[row["experiment"], row["record"]] += 1
    for folder in published_folders(ROOT):
        name = folder.relative_to(ROOT).as_posix()
        if (folder / "results.json").is_file():
            runs = _json(name, "results.json")["runs"]
            assert count[name, "results"] == sum(len(r["splits"]) for r in runs)
        if (folder / "transfer.json").is_file():
            rows = _json(name, "transfer.json")["rows"]
            moved = sum(1 + (r.get("correct_finetuned") is not None) for r in rows)
            assert count[name, "transfer"] == moved
        if (folder / "provenance.json").is_file():
            assert count[name, "provenance"] == 1


def test_the_table_and_the_records_agree_on_every_number(table):
    by_key = {_key(r): r for r in table}
    for folder in published_folders(ROOT):
        name = folder.relative_to(ROOT).as_posix()
        if (folder / "results.json").is_file():
            record = _json(name, "results.json")
            for run in record["runs"]:
                for split, result in run["splits"].items():
                    row = next(
                        r for k, r in by_key.items()
                        if k[:3] == (name, "results", run["dataset"])
                        and k[3:5] == (run["pos"], run.get("variant", "swin"))
                        and k[9:] == (run["seed"], split)
                    )  # fmt: skip
                    bits = unpack_bits(result["correct"], result["n"])
                    assert (row["correct"], row["total"]) == (int(bits.sum()), result["n"])
                    assert row["correct"] / row["total"] == pytest.approx(result["accuracy"])
                    assert row["bits_sha256"] == hashlib.sha256(
                        result["correct"].encode()).hexdigest()  # fmt: skip
                    assert float(row["wall_s"]) == run["wall_s"]
                    assert row["commit"] == record["header"]["git"]["commit"]
            for cell in record["summary"]:  # the record's own per-cell values, seed by seed
                rows = {r["seed"]: r for r in table if (r["experiment"], r["record"], r["task"],
                        r["code"], r["variant"], r["split"]) == (name, "results",
                        cell["dataset"], cell["pos"], cell["variant"], "test")}  # fmt: skip
                got = [rows[s]["correct"] / rows[s]["total"] for s in cell["seeds"]]
                assert got == pytest.approx(cell["values"], abs=1e-6)
        if (folder / "transfer.json").is_file():
            for moved in _json(name, "transfer.json")["rows"]:
                for metric, bits in (("acc", "correct"), ("acc_finetuned", "correct_finetuned")):
                    if moved.get(bits) is None:
                        continue
                    row = by_key[name, "transfer", moved["dataset"], moved["pos"],
                                 moved["variant"], moved["rendering"], moved["size"],
                                 condition_name(moved["condition"]), metric, moved["seed"],
                                 "test"]  # fmt: skip
                    assert row["correct"] / row["total"] == pytest.approx(moved[metric], abs=1e-6)
                    assert row["bits_sha256"] == hashlib.sha256(moved[bits].encode()).hexdigest()
        if (folder / "provenance.json").is_file():
            record = _json(name, "provenance.json")
            (row,) = [r for r in table if r["experiment"] == name]
            assert row["correct"] / row["total"] == record["final_test_acc"]
            assert float(row["wall_s"]) == record["wall_s"]


def test_every_code_in_the_table_is_one_the_position_parser_reads(table):
    for code in sorted({r["code"] for r in table}):
        Position.parse(code)


def test_a_changed_table_is_refused_and_the_check_command_says_so(tmp_path, capsys):
    copy = tmp_path / "results"
    copy.mkdir()
    for name in ("cpu-ablation", "learned-abs"):
        shutil.copytree(ROOT / name, copy / name)
    assert main(["--results-dir", str(copy)]) == 0
    assert len(load_table(copy)) == 126  # 125 runs of one split, and learned-abs
    assert main(["--results-dir", str(copy), "--check"]) == 0
    text = (copy / TABLE).read_text(encoding="utf-8")
    (copy / TABLE).write_text(text.replace(",188,1000,", ",189,1000,", 1), encoding="utf-8")
    with pytest.raises(ResultsError, match="changed or damaged"):
        load_table(copy)
    assert main(["--results-dir", str(copy), "--check"]) == 1
    assert "changed or damaged" in capsys.readouterr().err


def test_a_nested_sealed_folder_is_read_and_the_pilots_are_not(tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(ROOT / "learned-abs", copy / "seeds" / "seed-0")
    shutil.copytree(ROOT / "learned-abs", copy / "pilots" / "learned-abs")
    assert [r["experiment"] for r in record_rows(copy)] == ["seeds/seed-0"]


def test_a_killed_publishs_hidden_folders_are_no_experiments(tmp_path):
    copy = tmp_path / "results"
    for name in ("learned-abs", ".learned-abs.old", ".learned-abs.staging"):
        shutil.copytree(ROOT / "learned-abs", copy / name)
    assert [r["experiment"] for r in record_rows(copy)] == ["learned-abs"]


def test_the_folders_themselves_are_left_untouched_by_a_rebuild(tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(ROOT / "cpu-far-relation", copy / "cpu-far-relation")
    before = {p: p.read_bytes() for p in Path(copy).rglob("*") if p.is_file()}
    main(["--results-dir", str(copy)])
    after = {p: p.read_bytes() for p in Path(copy).rglob("*") if p.is_file()}
    assert {p: after[p] for p in before} == before
    lock = copy / f".{TABLE}.lock"  # held while the two files are written (git ignores it)
    assert set(after) - set(before) == {copy / TABLE, copy / TABLE_HASH, lock}


def test_publishing_a_folder_rebuilds_the_table_of_its_results_tree(tmp_path, capsys):
    copy = tmp_path / "results"
    shutil.copytree(ROOT / "learned-abs", copy / "learned-abs")
    main(["--results-dir", str(copy)])
    folder = copy / "more" / "learned-abs-again"
    shutil.copytree(ROOT / "learned-abs", folder)
    assert refresh_table(folder) == copy / TABLE
    assert [r["experiment"] for r in load_table(copy)] == ["learned-abs", "more/learned-abs-again"]
    (folder / "provenance.json").write_text("{}", encoding="utf-8")  # a damaged tree: published,
    assert refresh_table(folder) is None  # the table left as it was, and the reader told
    assert "not rebuilt" in capsys.readouterr().err
    assert refresh_table(tmp_path / "elsewhere" / "x") is None  # no table above: nothing done


def test_a_chapter_reads_a_record_only_where_the_table_holds_its_counts_and_bits(tmp_path):
    copy = tmp_path / "results"
    shutil.copytree(ROOT / "cpu-ablation", copy / "cpu-ablation")
    with pytest.raises(ResultsError, match=r"no records\.csv above"):
        chapter5.load_results(copy / "cpu-ablation")
    main(["--results-dir", str(copy)])
    assert chapter5.load_results(copy / "cpu-ablation")["runs"]
    text = (copy / TABLE).read_text(encoding="utf-8").replace(",188,1000,", ",189,1000,", 1)
    (copy / TABLE).write_text(text, encoding="utf-8")  # a table that hashes right, other counts
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    (copy / TABLE_HASH).write_text(f"{digest}  {TABLE}\n", encoding="utf-8")
    with pytest.raises(ResultsError, match=r"results\.json does not agree with .*records\.csv"):
        chapter5.load_results(copy / "cpu-ablation")
