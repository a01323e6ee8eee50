"""A results folder's predictions were committed before the run they predict, and not edited after.

The order is in git: the last commit that changed ``predictions.md`` is an ancestor of (and not
the same as) the commit that ``results.json`` names as the run's, and the file is the same today
as at the run's commit. Skipped outside a git clone or in a shallow one (no history to read).

One exception, named: the GPU runs' predictions (``SAME_COMMIT``) were committed in the very commit
the runs were made from, not in an earlier one as each file's first sentence says (results/README.md
says so). Their content still came first: a run records the commit it starts from, so that commit
existed before the run began; the test checks that the commit's time is before the run's start
(its header's ``date_utc`` less its ``wall_s``).
"""

from __future__ import annotations

import json
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = sorted(
    p.parent for p in (ROOT / "results").glob("*/predictions.md")
    if (p.parent / "results.json").is_file()
)  # fmt: skip


#: Folders whose predictions were committed in the run's own commit (see the module docstring).
SAME_COMMIT = {"gpu-ablation", "gpu-far-relation"}


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def history() -> None:
    if git("rev-parse", "--is-inside-work-tree").returncode != 0:
        pytest.skip("not a git clone: no history to check the order in")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone: the history that shows the order is missing")


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_predictions_were_committed_before_the_run_and_not_edited_after(
    history: None, folder: Path
) -> None:
    # The runs, and what was computed from them (chapter 6's moves, transfer.json), if any.
    records = [r for r in ("results.json", "transfer.json") if (folder / r).is_file()]
    path = (folder / "predictions.md").relative_to(ROOT).as_posix()
    last = git("log", "-1", "--format=%H", "--", path).stdout.strip()
    assert last, f"{path} is not committed"
    for record in records:
        header = json.loads((folder / record).read_text())["header"]
        run = header["git"]["commit"]
        if folder.name in SAME_COMMIT:
            committed = datetime.fromisoformat(git("log", "-1", "--format=%cI", run).stdout.strip())
            ended = datetime.fromisoformat(header["date_utc"].replace("Z", "+00:00"))
            assert committed < ended - timedelta(seconds=header["wall_s"]), (path, record)
        else:
            assert last != run, f"{path} was changed in the run's own commit {run} ({record})"
        assert git("merge-base", "--is-ancestor", last, run).returncode == 0, (
            f"{path} was last changed in {last}, which is not before the commit {run} of {record}"
        )
        assert git("show", f"{run}:{path}").stdout == (folder / "predictions.md").read_text()


def test_the_book_s_experiments_have_their_predictions() -> None:
    names = {p.name for p in FOLDERS}
    assert {
        "cpu-ablation",
        "cpu-far-relation",
        "interior-holdout",
        "cpu-transfer",
        "cpu-transfer-far",
    } <= names
