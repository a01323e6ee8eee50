"""A reader sees one whole folder while a publish swaps it: never half of the old and half of the
new, so never a false "changed or damaged" alarm on an intact folder."""

import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from companion.experiments import integrity, records
from companion.experiments.integrity import ResultsError, read_folder, whole_folders
from companion.experiments.records import check_against_table, write_table
from companion.experiments.results import (
    find_results,
    load_bias_tables,
    load_results,
    load_transfer,
)
from companion.experiments.runs.publish import finish_staging, publish_lock

ROOT = Path(__file__).resolve().parents[1]
#: Two published folders a publish alternates between (both with runs, moves and curves).
VERSIONS = ("cpu-transfer-far-more", "cpu-transfer-far-blind")

PUBLISHER = """
import shutil
import sys
import threading
from pathlib import Path
from companion.experiments.runs.publish import finish_staging, publish_lock
folder, count = Path(sys.argv[1]), int(sys.argv[2])
versions = [Path(p) for p in sys.argv[3:]]
print("ready", flush=True)
sys.stdin.readline()
for i in range(count):
    with publish_lock(folder) as staging:
        shutil.copytree(versions[i % 2], staging)
        finish_staging(staging, folder, replace=True)
"""


@whole_folders
def read_all(folder: Path) -> tuple[str, int]:
    """What a chapter reads of ``folder``: its runs and curves, every bias table, its moves, each
    checked against the record table the publish rebuilds after its swap."""
    results = load_results(folder)
    for name in results["bias_files"]:
        dataset, pos = Path(name).stem.split("__")[:2]
        load_bias_tables(folder, dataset, pos)
    moves = load_transfer(folder, results)
    check_against_table(folder, results)
    check_against_table(folder, moves, before=results)
    return results["plan"]["name"], len(moves["rows"])


@pytest.fixture
def versions(tmp_path: Path) -> list[Path]:
    return [Path(shutil.copytree(find_results(n), tmp_path / "versions" / n)) for n in VERSIONS]


def publish(version: Path, folder: Path) -> None:
    with publish_lock(folder) as staging:
        shutil.copytree(version, staging)
        finish_staging(staging, folder, replace=True)


@pytest.mark.slow
def test_every_reading_during_forty_publishes_reads_one_whole_folder(tmp_path, versions):
    folder = tmp_path / "results" / "swapped"
    publish(versions[0], folder)
    write_table(folder.parent)  # a results tree: each publish rebuilds its record table
    loaded = [(v, load_results(v)) for v in versions]
    expected = {(r["plan"]["name"], len(load_transfer(v, r)["rows"])) for v, r in loaded}
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    publisher = subprocess.Popen(
        [sys.executable, "-c", PUBLISHER, str(folder), "40", *map(str, versions)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env=env,
    )  # fmt: skip
    assert publisher.stdout is not None and publisher.stdin is not None
    assert publisher.stdout.readline().strip() == "ready"
    publisher.stdin.write("go\n")
    publisher.stdin.flush()
    readings = []
    while publisher.poll() is None or len(readings) < 10:  # reads while the publishes run
        readings.append(read_all(folder))  # any false alarm fails the test here
    assert publisher.wait() == 0, publisher.stderr.read() if publisher.stderr else ""
    assert set(readings) <= expected


def test_a_reading_a_swap_overtook_is_read_again_under_the_lock(tmp_path, versions, monkeypatch):
    folder = tmp_path / "results" / "swapped"
    publish(versions[0], folder)
    real = integrity._read_once
    calls = []

    def overtaken(path: Path):
        calls.append(path)
        manifest, files = real(path)
        if len(calls) == 1:  # a publish swaps the folder while its files are read
            publish(versions[1], folder)
            files = {**files, "results.json": (folder / "results.json").read_bytes()}
        return manifest, files

    expected = read_folder(versions[1])
    monkeypatch.setattr(integrity, "_read_once", overtaken)
    assert read_folder(folder) == expected  # the new folder, whole (outside a loader,
    assert len(calls) == 2  # which holds the lock from the start, only a second reading does)


def test_a_damaged_folder_is_refused_once_read_again_under_the_lock(tmp_path, versions):
    folder = tmp_path / "results" / "damaged"
    publish(versions[0], folder)
    path = folder / "results.md"
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(ResultsError, match=r"results\.md was changed or damaged"):
        read_folder(folder)


HOLD_THE_LOCK = """
import sys
import threading
from pathlib import Path
from companion.experiments.runs.publish import publish_lock
with publish_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    sys.stdin.readline()
"""


@pytest.mark.slow
def test_the_second_reading_waits_for_the_publish_in_progress(tmp_path, versions, monkeypatch):
    folder = tmp_path / "results" / "swapped"
    publish(versions[0], folder)
    real = integrity._read_once
    calls = []

    def overtaken(path: Path):
        calls.append(path)
        manifest, files = real(path)
        return (manifest, {}) if len(calls) == 1 else (manifest, files)  # the first: half gone

    monkeypatch.setattr(integrity, "_read_once", overtaken)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, str(folder)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdin is not None
    assert holder.stdout.readline().strip() == "locked"
    done: list[str] = []
    reader = threading.Thread(target=lambda: done.append(load_results(folder)["plan"]["name"]))
    reader.start()
    reader.join(timeout=0.5)
    assert reader.is_alive() and not done  # waiting: the lock is held by a publish
    holder.stdin.write("\n")
    holder.stdin.flush()
    assert holder.wait() == 0
    reader.join()
    assert done == [VERSIONS[0]] and len(calls) == 2


def test_the_record_table_read_between_a_rebuilds_two_writes_waits_for_the_second(
    tmp_path, monkeypatch
):
    root = tmp_path / "results"
    root.mkdir()
    good = records.table_text([])
    (root / records.TABLE).write_text(good)
    (root / records.TABLE_HASH).write_text("0" * 64 + "  records.csv\n")  # the old hash
    first_read = threading.Event()
    read = records._read_table

    def reading(where: Path) -> list:
        try:
            return read(where)
        finally:
            first_read.set()

    monkeypatch.setattr(records, "_read_table", reading)
    locked = threading.Event()

    def rebuild() -> None:  # holds the table's lock between its two writes, as write_table does
        with integrity.folder_lock(root / records.TABLE):
            locked.set()
            first_read.wait(timeout=60)  # the reader has seen the table without its new hash
            (root / records.TABLE_HASH).write_text(records._hash_line(good))

    writer = threading.Thread(target=rebuild)
    writer.start()
    locked.wait(timeout=60)
    assert records.load_table(root) == []  # refused once, then read whole after the rebuild
    writer.join()


def test_a_damaged_record_table_is_still_refused(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    (root / records.TABLE).write_text(records.table_text([]))
    (root / records.TABLE_HASH).write_text("0" * 64 + "  records.csv\n")
    with pytest.raises(ResultsError, match="does not match"):
        records.load_table(root)
