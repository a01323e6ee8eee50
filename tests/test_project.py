"""House rules: the configuration agrees with itself; notebooks follow the book's rules."""

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
TOC = yaml.safe_load((ROOT / "_toc.yml").read_text())
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))


def _name(requirement: str) -> str:
    return re.split(r"[<>=!~\[ ;@]", requirement, maxsplit=1)[0].lower()


def test_environment_yml_lists_exactly_the_pyproject_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    project = PYPROJECT["project"]
    expected = list(project["dependencies"])
    for extra in ("test", "book"):
        expected += project["optional-dependencies"][extra]
    assert sorted(r for r in pip_section if not r.startswith("-e")) == sorted(expected)
    assert "-e ." in pip_section
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python"))
    minimum = project["requires-python"].removeprefix(">=")
    assert tuple(map(int, python.split("=")[1].split("."))) >= tuple(map(int, minimum.split(".")))


def test_torch_is_never_pinned_exactly_in_the_package():
    for requirement in PYPROJECT["project"]["dependencies"]:
        if _name(requirement) == "torch":
            assert "==" not in requirement and ">=" in requirement


def test_ipywidgets_range_admits_colabs_7_7():
    spec = next(r for r in PYPROJECT["project"]["dependencies"] if _name(r) == "ipywidgets")
    assert ">=7.7" in spec and "<9" in spec


def test_jupyter_book_is_major_version_1():
    spec = PYPROJECT["project"]["optional-dependencies"]["book"][0]
    assert _name(spec) == "jupyter-book" and "<2" in spec


def test_book_config_fails_on_errors_and_builds_only_the_toc():
    assert CONFIG["only_build_toc_files"] is True
    assert CONFIG["execute"]["raise_on_error"] is True
    for folder in ("companion/*", "tests/*", ".venv/*"):
        assert folder in CONFIG["exclude_patterns"]


def test_ci_runs_the_readme_test_command_then_the_colab_emulation():
    lines = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()]
    assert lines.index("make test") < lines.index("make colab-test")
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and "make book" in readme and "make colab-test" in readme


@pytest.mark.parametrize(("target", "tools"), [("test", "chromium npm"), ("book", "npm")])
def test_system_tools_are_checked_before_any_slow_step(target, tools):
    # `make -n` lists the recipes in the order make would run them, running none.
    dry = subprocess.run(
        ["make", "-n", "--no-print-directory", "-C", str(ROOT), target],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    checks = [i for i, line in enumerate(dry) if "tools/system_deps.sh" in line]
    assert " ".join(dry[i].split()[-1] for i in checks) == tools
    assert checks == list(range(len(checks))), "a system tool is checked after a slow step"


def _toc_files() -> list[str]:
    files = [TOC["root"]]
    files += [c["file"] for c in TOC.get("chapters") or []]
    return files


def test_toc_lists_every_chapter_and_only_existing_files():
    listed = _toc_files()
    for entry in listed:
        assert list(ROOT.glob(entry + ".*")), f"_toc.yml lists {entry}, which does not exist"
    for nb in NOTEBOOKS:
        assert f"book/{nb.stem}" in listed, f"{nb.name} is not in _toc.yml"


def _cells(nb: Path) -> list[dict]:
    return json.loads(nb.read_text())["cells"]


def _source(cell: dict) -> str:
    src = cell["source"]
    return "".join(src) if isinstance(src, list) else src


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_code_cells_define_nothing_and_are_executed(nb):
    for i, cell in enumerate(_cells(nb)):
        if cell["cell_type"] != "code":
            continue
        src = _source(cell)
        assert not re.search(r"^\s*(def|class)\s", src, re.M), f"cell {i} defines code"
        assert not src.strip() or cell["execution_count"] is not None, f"cell {i} not executed"
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, f"cell {i} was committed with an error output"


@pytest.mark.parametrize("nb", NOTEBOOKS, ids=lambda p: p.name)
def test_ignored_outputs_say_why(nb):
    for i, cell in enumerate(_cells(nb)):
        if "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            first_line = _source(cell).lstrip().splitlines()[0]
            assert first_line.startswith("#"), f"cell {i} is nbval-ignore-output without a reason"


def test_a_plain_install_lists_every_companion_package_and_the_results():
    setuptools = PYPROJECT["tool"]["setuptools"]
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for p in (ROOT / "companion").rglob("__init__.py")
    }
    assert set(setuptools["packages"]) == on_disk | {"companion.book_results"}
    assert setuptools["package-dir"] == {"companion.book_results": "results"}
    # results/ stays the one copy at the top level: the ablation writes there, the book reads it.
    assert not (ROOT / "companion" / "book_results").exists()


@pytest.mark.slow
def test_a_plain_install_ships_the_books_results(tmp_path):
    """``pip install .`` (not editable), as Colab's install cell does: results come with it."""
    source = tmp_path / "source"  # a copy, so that the build leaves nothing in the repository
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, source / name)
    for folder in ("companion", "results"):
        shutil.copytree(
            ROOT / folder, source / folder, ignore=shutil.ignore_patterns("__pycache__")
        )
    site = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index"]
    pip += ["--no-build-isolation", "--target", str(site), str(source)]
    subprocess.run(pip, check=True, capture_output=True)
    shutil.rmtree(source)
    probe = (
        "import companion.experiments.results as a\n"
        "folder = a.find_results('cpu-ablation')\n"
        "print(a.PACKAGE_DIR)\n"
        "print(folder)\n"
        "curves = a.load_curves(folder, variant=None)\n"
        "print(len(curves), len(a.load_bias_tables(folder, 'grid-cell', 'rel')))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    elsewhere = tmp_path / "elsewhere"  # no results/ here nor in its parent
    elsewhere.mkdir()
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=elsewhere, env=env, check=True, capture_output=True
    )
    package, folder, counts = out.stdout.decode().splitlines()
    assert Path(package) == site / "companion"
    assert Path(folder) == site / "companion" / "book_results" / "cpu-ablation"
    committed = json.loads((ROOT / "results" / "cpu-ablation" / "results.json").read_text())
    assert counts.split()[0] == str(len(committed["runs"]))
    shipped = sum(
        f.stat().st_size for f in (site / "companion" / "book_results").rglob("*") if f.is_file()
    )
    # About 7.4 MB today (chapter 5's folders with ten seeds and their blind GPU replication,
    # chapter 6's far-relation transfer
    # with its blind seeds and the transfer pilots it is compared with, and the record table the
    # readers check them against, 0.34 MB): a guard against checkpoints or datasets slipping into
    # the package (a tiny-cpu checkpoint alone is several MB), not a budget for curves.
    assert shipped < 8_500_000, f"{shipped} bytes of results in the package: keep them small"
    for unread in ("cpu-transfer", "cpu-transfer-48-world"):  # no chapter reads them
        assert not (site / "companion" / "book_results" / unread).exists()
    # Of the pilots, only the transfer pilots' records ship: chapter 6 compares its runs to them.
    pilots = site / "companion" / "book_results" / "pilots"
    shipped_pilots = {p.relative_to(pilots).parts[:3] for p in pilots.rglob("*") if p.is_file()}
    assert {parts[:2] for parts in shipped_pilots} == {("out", "transfer")}
    transfer_pilots = ROOT / "results" / "pilots" / "out" / "transfer"
    assert {parts[2] for parts in shipped_pilots} == {
        p.parent.name for p in transfer_pilots.glob("*/results.json")
    }


#: Any heading that names a GPU promises GPU results (the book has none unless results/ holds one).
GPU_CLAIM = re.compile(r"\bGPUs?\b", re.IGNORECASE)


def _gpu_results() -> list[str]:
    """The committed ablations whose runs used a GPU (their header names one)."""
    found = []
    for path in sorted((ROOT / "results").glob("*/results.json")):
        if json.loads(path.read_text()).get("header", {}).get("gpu"):
            found.append(path.parent.name)
    return found


def _headings() -> list[tuple[str, str]]:
    found = []
    for path in sorted((ROOT / "book").glob("*.md")):
        found += [(path.name, line) for line in path.read_text().splitlines()]
    for nb in NOTEBOOKS:
        for cell in _cells(nb):
            if cell["cell_type"] == "markdown":
                found += [(nb.name, line) for line in _source(cell).splitlines()]
    return [(name, line) for name, line in found if line.lstrip().startswith("#")]


def test_no_heading_promises_gpu_results_that_were_never_run():
    if _gpu_results():
        pytest.skip(f"GPU results are committed: {_gpu_results()}")
    claims = [f"{name}: {line.strip()}" for name, line in _headings() if GPU_CLAIM.search(line)]
    assert not claims, f"headings claim GPU training, but no results/ holds a GPU run: {claims}"


def test_the_gpu_claim_check_catches_the_phrasings_it_is_for():
    assert GPU_CLAIM.search("# 5. Train a small Swin on a GPU")
    assert GPU_CLAIM.search("## Scaling up on an H100 GPU")
    # A title that says the same command "uses a GPU" promises a run that never ran on one.
    assert GPU_CLAIM.search("# 5. Train a small Swin (in Colab the same command uses a GPU)")
    assert not GPU_CLAIM.search("# 5. Train a small Swin on 2 CPU cores")


def test_the_package_states_the_version_of_its_release():
    import companion

    assert companion.__version__ == PYPROJECT["project"]["version"]
