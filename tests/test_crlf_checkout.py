"""Records read the same on every checkout: a clone made as Git for Windows makes it
(``core.autocrlf=true``) still verifies its published folders and parses their predictions; a
malformed predictions block is one error naming its file."""

import shutil
import subprocess
from pathlib import Path

import pytest

from companion.experiments.integrity import manifest_differences
from companion.experiments.predictions import (
    PREDICTIONS,
    parse_far_transfer_predictions,
    parse_predictions,
)
from companion.experiments.results import read_text

ROOT = Path(__file__).resolve().parents[1]
FOLDER = "results/cpu-transfer-far"  # a published folder with a predictions.md


def _git(*args: str, cwd: Path = ROOT) -> str:
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_a_crlf_predictions_file_parses_as_its_lf_original():
    text = (ROOT / FOLDER / "predictions.md").read_text()
    crlf = text.replace("\n", "\r\n")
    assert parse_far_transfer_predictions(crlf, "x") == parse_far_transfer_predictions(text, "x")


def test_a_core_autocrlf_clone_verifies_its_published_folders(tmp_path):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("needs git and a git checkout of the project")
    head = _git("rev-parse", "HEAD")
    clone = tmp_path / "clone"
    _git("clone", "--quiet", "--shared", "--no-checkout", str(ROOT), str(clone), cwd=tmp_path)
    for paths in ([".gitattributes"], [FOLDER]):  # the attributes first, as a checkout reads them
        _git("-c", "core.autocrlf=true", "checkout", "--quiet", head, "--", *paths, cwd=clone)
    folder = clone / FOLDER
    assert manifest_differences(folder) == []
    read = [
        parse_far_transfer_predictions(read_text(f, PREDICTIONS)) for f in (folder, ROOT / FOLDER)
    ]
    assert read[0] == read[1]


MALFORMED = ["not json", "[1, 2]", '{"solved": {}}', '{"predictions": [{"id": "P1"}]}']


@pytest.mark.parametrize("block", [*MALFORMED, '{"predictions": 1}'])
def test_a_malformed_predictions_block_is_one_error_naming_the_file(block):
    text = f"# Predictions\n\n```json\n{block}\n```\n"
    with pytest.raises(ValueError, match=r"^results/x/predictions.md: the json block must be "):
        parse_predictions(text, "results/x/predictions.md")
