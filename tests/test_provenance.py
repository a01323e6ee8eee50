"""Where results come from: a run's tree is dirty for any change but the outputs runs write (under
``results/``, but not its run scripts and predictions), and
every committed result ran the package of the commit its header names."""

from __future__ import annotations

import hashlib
import json
import statistics
import subprocess
from pathlib import Path, PurePosixPath

import pytest

from companion.train.provenance import git_state

ROOT = Path(__file__).resolve().parents[1]


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    git(tmp_path, "init", "-q")
    (tmp_path / "code.py").write_text("x = 1\n")
    git(tmp_path, "add", ".")
    git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first")
    return tmp_path


def test_a_tree_is_clean_with_new_outputs_under_results_only(repo: Path) -> None:
    (repo / "results" / "first-half").mkdir(parents=True)
    (repo / "results" / "first-half" / "results.json").write_text("{}")
    assert git_state(repo)["dirty"] is False
    (repo / "notes.txt").write_text("an untracked file elsewhere")
    assert git_state(repo)["dirty"] is True


def test_replaced_outputs_under_results_are_clean_but_a_run_script_or_prediction_is_not(
    repo: Path,
) -> None:
    folder = repo / "results" / "exp"
    folder.mkdir(parents=True)
    for name in ("results.json", "predictions.md", "run.sh"):
        (folder / name).write_text("old\n")
    git(repo, "add", ".")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "results")
    (folder / "results.json").write_text("new\n")  # a script's first step republished it
    assert git_state(repo)["dirty"] is False
    for name in ("predictions.md", "run.sh"):
        (folder / name).write_text("edited\n")
        assert git_state(repo)["dirty"] is True, name
        git(repo, "checkout", "--", f"results/exp/{name}")


def test_a_tree_with_a_changed_tracked_file_is_dirty(repo: Path) -> None:
    (repo / "code.py").write_text("x = 2\n")
    assert git_state(repo) == {"commit": git(repo, "rev-parse", "HEAD").strip(), "dirty": True}


def package_digest_at(commit: str) -> str:
    """The digest ``provenance.source_digest`` computes, of ``companion/`` as committed."""
    names = git(ROOT, "ls-tree", "-r", "--name-only", commit, "companion").split()
    files = sorted(PurePosixPath(n) for n in names if n.endswith(".py"))
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to("companion").as_posix().encode())
        digest.update(subprocess.run(["git", "show", f"{commit}:{path}"], cwd=ROOT,
                                     capture_output=True, check=True).stdout)  # fmt: skip
    return digest.hexdigest()


FOLDERS = sorted(p.parent for p in (ROOT / "results").glob("*/results.json"))


@pytest.mark.parametrize("folder", FOLDERS, ids=lambda p: p.name)
def test_every_run_ran_the_package_of_the_commit_its_header_names(folder: Path) -> None:
    if subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT,
                      capture_output=True, text=True).stdout.strip() != "false":  # fmt: skip
        pytest.skip("not a full git clone: the commits' trees are not here")
    results = json.loads((folder / "results.json").read_text())
    header = results["header"]
    if "companion_sha256" not in header:
        pytest.skip(f"{folder.name} predates the package digest in its header")
    expected = package_digest_at(header["git"]["commit"])
    assert header["companion_sha256"] == expected
    assert {r["code_sha256"] for r in results["runs"]} == {expected}


def test_results_readme_gives_the_transfer_experiments_measured_wall_times() -> None:
    # results/README.md states how long chapter 6's experiment took to regenerate; the numbers
    # must be the headers' (each record's own wall time, in minutes to one decimal).
    readme = (ROOT / "results" / "README.md").read_text()
    records = [
        ("cpu-transfer", "results.json"),
        ("cpu-transfer", "transfer.json"),
        ("cpu-transfer-48-world", "results.json"),
        ("cpu-transfer-48-scaled", "results.json"),
        ("cpu-transfer-48-world-w6", "results.json"),
    ]
    minutes = [
        json.loads((ROOT / "results" / name / record).read_text())["header"]["wall_s"] / 60
        for name, record in records
    ]
    for value in minutes:
        assert f"{value:.1f} min" in readme
    assert f"{sum(minutes):.1f} min in all" in readme


def _median_epoch_s(name: str, first: int = 6) -> float:
    """The median training epoch (s) of a folder's runs from epoch ``first`` on (past the 5-epoch
    curriculum by default)."""
    times = [
        epoch["epoch_time_s"]
        for path in (ROOT / "results" / name / "curves").glob("*.json")
        for epoch in json.loads(path.read_text())["epochs"]
        if epoch["epoch"] >= first
    ]
    return float(statistics.median(times))


def test_results_readme_gives_chapter_5s_measured_regeneration_time() -> None:
    # results/README.md states how long chapter 5's three folders took to regenerate, against the
    # budget it states for them; the numbers must be the headers' wall times, in minutes to one
    # decimal, their sum, and the interior hold-out's time scaled by the two runs' median epochs.
    readme = (ROOT / "results" / "README.md").read_text()
    names = ("cpu-far-relation", "cpu-ablation", "interior-holdout")
    minutes = [
        json.loads((ROOT / "results" / name / "results.json").read_text())["header"]["wall_s"] / 60
        for name in names
    ]
    for value in minutes:
        assert f"{value:.1f} min" in readme
    assert f"{sum(minutes):.1f} min in all" in readme
    slow, fast = _median_epoch_s("interior-holdout"), _median_epoch_s("cpu-far-relation")
    scaled = minutes[2] * fast / slow
    assert f"{minutes[2]:.1f} × {fast:.2f} / {slow:.2f} = {scaled:.1f} min" in readme
    assert f"about {minutes[0] + minutes[1] + scaled:.1f} min" in readme


def test_results_readme_gives_the_far_transfers_wall_time_against_the_benchmark_epoch() -> None:
    # Chapter 6's far-relation transfer: every record's wall time (the headers'), their sum, and
    # the sum at the benchmark host's pace (its 32-px runs' median epoch against cpu-far-relation's,
    # the runs of the same length on the host whose eager epoch benchmarks/cpu_options.json gives).
    readme = (ROOT / "results" / "README.md").read_text()
    records = [
        (name, record)
        for name in ("cpu-transfer-far", "cpu-transfer-far-more")
        for record in ("results.json", "transfer.json")
        if (ROOT / "results" / name / record).is_file()
    ] + [
        ("cpu-transfer-far-48-world", "results.json"),
        ("cpu-transfer-far-48-scaled", "results.json"),
    ]
    minutes = [
        json.loads((ROOT / "results" / name / record).read_text())["header"]["wall_s"] / 60
        for name, record in records
    ]
    for value in minutes:
        assert f"{value:.1f} min" in readme
    total = sum(minutes)
    assert f"{total:.1f} min in all" in readme
    here, there = _median_epoch_s("cpu-transfer-far"), _median_epoch_s("cpu-far-relation")
    assert f"{total:.1f} × {there:.2f} / {here:.2f} = {total * there / here:.1f} min" in readme


def _minutes(name: str, record: str = "results.json") -> float:
    return json.loads((ROOT / "results" / name / record).read_text())["header"]["wall_s"] / 60


def test_results_readme_gives_the_blind_seeds_time_and_chapter_6s_total_at_the_benchmark_pace():
    # Step 5 of run_cpu_transfer_far.sh (the blind seeds) ran later, under another load: each of its
    # records' wall time, scaled to the benchmark host's pace by its own runs' median epoch (the
    # references' against the planned references', then as the first run), and the chapter's total.
    readme = " ".join((ROOT / "results" / "README.md").read_text().split())
    at_32 = _minutes("cpu-transfer-far-blind"), _minutes("cpu-transfer-far-blind", "transfer.json")
    refs = _minutes("cpu-transfer-far-48-world-blind")
    for value in (*at_32, refs):
        assert f"{value:.1f} min" in readme
    assert f"{sum(at_32) + refs:.1f} min in all" in readme
    there, here = _median_epoch_s("cpu-far-relation"), _median_epoch_s("cpu-transfer-far")
    blind = _median_epoch_s("cpu-transfer-far-blind")
    x = sum(at_32) * there / blind
    assert f"({at_32[0]:.1f} + {at_32[1]:.1f}) × {there:.2f} / {blind:.2f} = {x:.1f} min" in readme
    ref_blind = _median_epoch_s("cpu-transfer-far-48-world-blind", first=11)
    ref_first = _median_epoch_s("cpu-transfer-far-48-world", first=11)
    y = refs * ref_first / ref_blind * there / here
    assert (
        f"{refs:.1f} × {ref_first:.2f} / {ref_blind:.2f} × {there:.2f} / {here:.2f} = {y:.1f} min"
    ) in readme
    planned = (
        sum(
            _minutes(name, record)
            for name in ("cpu-transfer-far", "cpu-transfer-far-more")
            for record in ("results.json", "transfer.json")
        )
        + _minutes("cpu-transfer-far-48-world")
        + _minutes("cpu-transfer-far-48-scaled")
    )
    first = planned * there / here
    total = first + x + y
    assert f"{first:.1f} + {x:.1f} + {y:.1f} = {total:.1f} min" in readme
    assert total <= 120, "chapter 6 no longer regenerates within its 2 hours"
