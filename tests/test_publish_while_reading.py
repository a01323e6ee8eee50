"""A reader takes no lock: a folder a publish swaps while it is read is refused in one line naming
the file, never read half old and half new; a damaged folder or record table is refused too."""

import shutil
from pathlib import Path

import pytest

from companion.experiments import integrity, records
from companion.experiments.integrity import ResultsError, read_folder
from companion.experiments.results import find_results, load_results
from companion.experiments.runs.publish import finish_staging, publish_lock

#: Two published folders a publish alternates between (both with runs, moves and curves).
VERSIONS = ("cpu-transfer-far-more", "cpu-transfer-far-blind")


@pytest.fixture
def versions(tmp_path: Path) -> list[Path]:
    return [Path(shutil.copytree(find_results(n), tmp_path / "versions" / n)) for n in VERSIONS]


def publish(version: Path, folder: Path) -> None:
    with publish_lock(folder) as staging:
        shutil.copytree(version, staging)
        finish_staging(staging, folder, dropped=integrity.file_hashes(folder))  # replaced whole


def test_a_reading_a_swap_overtook_is_refused_naming_the_file(tmp_path, versions, monkeypatch):
    folder = tmp_path / "results" / "swapped"
    publish(versions[0], folder)
    real = integrity._files

    def overtaken(path: Path) -> dict[str, bytes]:  # a publish swapped the folder mid-reading:
        files = real(path)  # the old folder's files but the new one's results.json
        return {**files, "results.json": (versions[1] / "results.json").read_bytes()}

    monkeypatch.setattr(integrity, "_files", overtaken)
    with pytest.raises(ResultsError, match=r"swapped/results\.json was changed or damaged"):
        load_results(folder)
    monkeypatch.undo()
    publish(versions[1], folder)
    assert load_results(folder)["plan"]["name"] == VERSIONS[1]  # read again: the new one, whole


def test_a_publish_that_would_remove_a_published_file_is_refused(tmp_path, versions):
    folder = tmp_path / "results" / "kept"
    publish(versions[0], folder)
    lost = r"publishing would remove 1 file\(s\) .*results\.md"
    with pytest.raises(ValueError, match=lost), publish_lock(folder) as staging:
        shutil.copytree(folder, staging)
        (staging / "results.md").unlink()
        finish_staging(staging, folder)
    read_folder(folder)  # the published folder, whole


def test_a_damaged_folder_is_refused(tmp_path, versions):
    folder = tmp_path / "results" / "damaged"
    publish(versions[0], folder)
    path = folder / "results.md"
    path.write_bytes(path.read_bytes() + b"\n")
    with pytest.raises(ResultsError, match=r"results\.md was changed or damaged"):
        read_folder(folder)


def test_a_damaged_record_table_is_refused(tmp_path):
    root = tmp_path / "results"
    root.mkdir()
    (root / records.TABLE).write_text(records.table_text([]))
    (root / records.TABLE_HASH).write_text("0" * 64 + "  records.csv\n")
    with pytest.raises(ResultsError, match="does not match"):
        records.load_table(root)
