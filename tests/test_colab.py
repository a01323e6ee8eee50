"""Colab delivery: install cells, links and badges agree with ``_config.yml`` and pin the release
(``v<version>`` of ``pyproject.toml``); Colab folds what the book folds; no GPU requests.

The install cell's promise (it never changes what Colab preinstalls: torch, torchvision, numpy,
matplotlib, ipywidgets, ipython, timm, anywidget) is checked with a real pip resolution in this
venv, which already holds versions that satisfy the package's ranges, while newer wheels of all of
them are on offer, even to `--upgrade`.
`make colab-test` (tools/colab_emulate.py) then runs every chapter as Colab does.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
import types
import zipfile
from importlib import metadata
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import book_folds  # noqa: E402 (tools/ is not a package; see sys.path above)
import colab_sync  # noqa: E402

REPO = colab_sync.load_repository(ROOT / "_config.yml")
NOTEBOOKS = sorted((ROOT / "book").glob("*.ipynb"))
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
KEPT = colab_sync.KEEP
#: Newer releases offered beside this venv's, each one the package's range admits.
NEWER = {"ipywidgets": "8.99.0"}
#: The kept packages the companion itself depends on (torchvision comes only with timm).
DEPENDED = [n for n in KEPT if n in {Requirement(r).name for r in PROJECT["dependencies"]}]


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def _run_install_cell(source: str, in_colab: bool, installed: dict[str, str] | None = None) -> list:
    """Execute an install cell with ``subprocess.run`` replaced; return the calls it made.

    ``installed`` (name -> version) replaces what ``importlib.metadata`` finds; by default this
    venv's distributions without the companion package, as on a Colab that lacks it.
    """
    if installed is None:
        installed = {
            d.metadata["Name"].lower(): d.version
            for d in metadata.distributions()
            if d.metadata["Name"] and d.metadata["Name"].lower() != PROJECT["name"]
        }
    found = [types.SimpleNamespace(metadata={"Name": n}, version=v) for n, v in installed.items()]
    calls = []

    def run(*args, **kwargs):
        calls.append((args, kwargs))
        return subprocess.CompletedProcess(args, 0, "", "")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "run", run)
        patch.setattr(metadata, "distributions", lambda: iter(found))
        if in_colab:
            patch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
        else:
            patch.delitem(sys.modules, "google.colab", raising=False)
        exec(compile(source, "<install cell>", "exec"), {})
    return calls


# ----- the one place: _config.yml ---------------------------------------------------------------


def test_config_names_the_repository_branch_and_colab() -> None:
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["repository"]["branch"] == REPO.branch == "main"
    assert config["repository"]["url"] == REPO.url
    assert REPO.version == PROJECT["version"] and REPO.tag == f"v{PROJECT['version']}"
    assert "path_to_book" in config["repository"]
    assert config["launch_buttons"]["colab_url"] == colab_sync.COLAB
    for button in ("use_repository_button", "use_issues_button", "use_edit_page_button"):
        assert config["html"][button] is True, button


def _project_files() -> list[Path]:
    """The repository's own files: no environments, builds, caches or installed packages."""
    skip = {".git", ".venv", "node_modules", "_build", "__pycache__", ".ruff_cache"}
    skip |= {".pytest_cache", ".hypothesis", ".ipynb_checkpoints", ".jupyter_cache"}
    return [
        path
        for path in ROOT.rglob("*")
        if path.is_file()
        and not skip & set(path.relative_to(ROOT).parts)
        and not any(part.endswith(".egg-info") for part in path.parts)
    ]


#: Other editions of the book (a folder with its own Jupyter Book config, as zh/): their notebooks
#: are generated from the English ones, install cell included, and their config names the
#: repository for Jupyter Book's buttons.
EDITIONS = sorted(p.parent for p in ROOT.glob("*/_config.yml"))


def test_every_edition_names_the_same_repository() -> None:
    for edition in EDITIONS:
        config = yaml.safe_load((edition / "_config.yml").read_text(encoding="utf-8"))
        other = colab_sync.load_repository(edition / "_config.yml", REPO.version)
        assert (other.url, other.branch) == (REPO.url, REPO.branch), edition.name
        assert config["repository"]["path_to_book"] == edition.name


def test_the_repository_address_is_written_nowhere_else() -> None:
    address = f"github.com/{REPO.owner}/{REPO.name}"
    generated = {"_config.yml", "README.md", "CITATION.cff"}
    generated |= {p.relative_to(ROOT).as_posix() for p in NOTEBOOKS}
    for edition in EDITIONS:  # checked against _config.yml above, and generated from book/
        generated.add((edition / "_config.yml").relative_to(ROOT).as_posix())
        generated |= {p.relative_to(ROOT).as_posix() for p in (edition / "book").glob("*.ipynb")}
    elsewhere = []
    for path in _project_files():
        name = path.relative_to(ROOT).as_posix()
        if name in generated or path.stat().st_size > 5_000_000:
            continue
        if address in path.read_text(encoding="utf-8", errors="ignore"):
            elsewhere.append(name)
    assert not elsewhere, f"{address} is hard-coded; derive it from _config.yml instead"
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    outside_block = re.sub(
        re.escape(colab_sync.README_START) + ".*?" + re.escape(colab_sync.README_END),
        "",
        readme,
        flags=re.DOTALL,
    )
    assert address not in outside_block, "README names the repository outside its generated block"


def test_everything_generated_from_the_config_is_in_sync() -> None:
    changed = colab_sync.sync(ROOT, check=True)
    assert not changed, f"{changed} differ from _config.yml: run `make colab-sync`"


# ----- every chapter's install cell -------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_chapter_starts_with_the_configured_hidden_install_cell(path: Path) -> None:
    first = _load(path)["cells"][0]
    assert first["cell_type"] == "code"
    assert "remove-input" in first["metadata"].get("tags", [])  # hidden in the built book
    assert first["metadata"].get("cellView") == "form"  # folded in Colab, under its title
    source = _source(first)
    assert source.startswith(colab_sync.INSTALL_TITLE) and "display-mode" in source.splitlines()[0]
    extra = colab_sync.extra_for(path.name)
    assert source == colab_sync.install_cell_source(REPO, extra)
    assert first.get("outputs") == []  # outside Colab it does nothing, so it prints nothing


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_each_install_cell_pins_the_release_of_pyprojects_version(path: Path) -> None:
    # A saved copy of the chapter installs the code it was made with, not whatever main holds.
    source = _source(_load(path)["cells"][0])
    [requirement] = re.findall(r'^REQUIREMENT = "([^"]*)"$', source, re.M)
    parsed = Requirement(requirement)
    assert parsed.name == PROJECT["name"]
    assert parsed.url == f"git+{REPO.url}@v{PROJECT['version']}"
    version_line = f'PACKAGE, VERSION = "{PROJECT["name"]}", "{PROJECT["version"]}"'
    assert version_line in source.splitlines()
    assert "@main" not in source and f"@{REPO.branch}" not in source


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_folds_what_the_book_folds(path: Path) -> None:
    nb = _load(path)
    headings = [c for c in nb["cells"] if book_folds.solution_number(c) is not None]
    assert headings, "every chapter ends with its exercises' solutions"
    assert all(_source(c).startswith("### Solution ") for c in headings)
    ids = [c["metadata"].get("id") for c in headings]
    assert ids == [f"solution-{book_folds.solution_number(c)}" for c in headings]
    assert len(set(ids)) == len(ids)
    # One collapsed section per "### Solution N" heading cell, in the chapter's order.
    assert nb["metadata"]["colab"]["collapsed_sections"] == ids
    # Code is folded as a form exactly where the book hides it (and in the install cell).
    for i, cell in enumerate(nb["cells"]):
        tags = cell["metadata"].get("tags", [])
        hidden = i == 0 or (cell["cell_type"] == "code" and book_folds.HIDE_INPUT in tags)
        assert (cell["metadata"].get("cellView") == "form") == hidden, f"cell {i}"


def test_only_the_chapters_that_compare_with_timm_ask_for_the_timm_extra() -> None:
    extras = {p.name: colab_sync.extra_for(p.name) for p in NOTEBOOKS}
    # a code line of the notebook's JSON that imports timm starts with "from timm or "import timm
    importing = {p.name for p in NOTEBOOKS if re.search(r'"(from|import) timm', p.read_text())}
    assert {name for name, extra in extras.items() if extra} == importing
    for extra in colab_sync.EXTRAS.values():
        assert extra in PROJECT["optional-dependencies"]


def _pins(kwargs_and_args: tuple) -> dict[str, str]:
    """The constraints file a pip call of the install cell was given, as name -> version."""
    (argv,), _ = kwargs_and_args
    path = Path(argv[argv.index("--constraint") + 1])
    lines = path.read_text(encoding="utf-8").split()
    path.unlink()
    return dict(line.split("==") for line in lines)


def _installed(name: str) -> bool:
    try:
        return bool(version(name))
    except metadata.PackageNotFoundError:
        return False


def test_the_install_cell_installs_only_inside_colab() -> None:
    source = colab_sync.install_cell_source(REPO)
    assert _run_install_cell(source, in_colab=False) == []
    [call] = _run_install_cell(source, in_colab=True)
    (argv,), kwargs = call
    requirement = f"{PROJECT['name']} @ git+{REPO.url}@v{PROJECT['version']}"
    assert argv[:5] == [sys.executable, "-m", "pip", "install", "--quiet"]
    assert argv[-1] == requirement and Requirement(requirement).name == PROJECT["name"]
    assert kwargs == {"capture_output": True, "text": True}  # quiet: pip's report only on failure
    assert _pins(call) == {name: version(name) for name in KEPT if _installed(name)}


def test_the_install_cell_skips_when_this_version_is_installed() -> None:
    source = colab_sync.install_cell_source(REPO)
    colab = {"torch": "2.11.0+cu126", "numpy": "2.0.2"}
    assert _run_install_cell(source, True, {**colab, PROJECT["name"]: PROJECT["version"]}) == []
    [call] = _run_install_cell(source, True, {**colab, PROJECT["name"]: "0.0.1"})  # an old one
    assert _pins(call) == colab  # Colab's exact builds, local version labels included
    with_timm = colab_sync.install_cell_source(REPO, "timm")
    [call] = _run_install_cell(with_timm, True, {PROJECT["name"]: PROJECT["version"]})
    assert call[0][0][-1] == f"{PROJECT['name']}[timm] @ git+{REPO.url}@v{PROJECT['version']}"
    installed = {PROJECT["name"]: PROJECT["version"], "timm": "1.0.20"}
    assert _run_install_cell(with_timm, True, installed) == []


def test_the_timm_chapter_pins_the_timm_colab_preinstalls() -> None:
    # Colab's current runtime ships timm 1.0.28: chapter 4's install cell must leave it as it is.
    colab = {"torch": "2.11.0+cu126", "timm": "1.0.28", "ipython": "7.34.0", "anywidget": "0.9.21"}
    with_timm = colab_sync.install_cell_source(REPO, "timm")
    [call] = _run_install_cell(with_timm, True, colab)
    assert _pins(call) == colab


def test_a_failed_install_stops_the_chapter_with_pips_report() -> None:
    def fail(*args, **kwargs):
        return subprocess.CompletedProcess(args, 1, "", "ResolutionImpossible: torch==2.11.0")

    source = colab_sync.install_cell_source(REPO)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(subprocess, "run", fail)
        patch.setattr(metadata, "distributions", lambda: iter([]))
        patch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
        with pytest.raises(RuntimeError, match=r"(?s)could not install .*ResolutionImpossible"):
            exec(compile(source, "<install cell>", "exec"), {})


def test_the_package_asks_for_no_python_upper_bound() -> None:
    # Colab moves to new Pythons; an upper bound would make the install cell fail there.
    assert "<" not in PROJECT["requires-python"]


def _wheel(folder: Path, name: str, version: str, requires=(), python: str | None = None) -> Path:
    """A minimal, valid pure-Python wheel holding only metadata."""
    dist = f"{re.sub(r'[-.]+', '_', name)}-{version}"
    path = folder / f"{dist}-py3-none-any.whl"
    metadata = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    metadata += "".join(f"Requires-Dist: {r}\n" for r in requires)
    metadata += f"Requires-Python: {python}\n" if python else ""
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr(f"{dist}.dist-info/METADATA", metadata)
        wheel.writestr(
            f"{dist}.dist-info/WHEEL",
            "Wheel-Version: 1.0\nGenerator: test_colab\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        )
        wheel.writestr(f"{dist}.dist-info/RECORD", "")
    return path


def _pip_would_install(tmp_path: Path, extra: tuple[str, ...] = (), keep_pins: bool = True) -> dict:
    """Run the install cell's own pip arguments as a dry run in this venv; return name -> version.

    The cell's git requirement is swapped for a wheel with the package's real metadata (its
    dependencies from pyproject.toml), so no network and no build are needed. Beside it, newer
    torch, numpy and matplotlib wheels are offered, as PyPI would offer them to Colab.
    """
    [call] = _run_install_cell(colab_sync.install_cell_source(REPO), in_colab=True)
    argv = call[0][0]
    assert argv[:3] == [sys.executable, "-m", "pip"]
    if not keep_pins:  # the same call without its constraints file
        at = argv.index("--constraint")
        Path(argv[at + 1]).unlink()
        argv = argv[:at] + argv[at + 2 :]
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    package = _wheel(
        wheels,
        PROJECT["name"],
        PROJECT["version"],
        PROJECT["dependencies"],
        PROJECT["requires-python"],
    )
    for name in KEPT:
        _wheel(wheels, name, NEWER.get(name, "99.0.0"))
    local = f"{PROJECT['name']} @ {package.as_uri()}"
    pip_args = [local if a.startswith(f"{PROJECT['name']} @ ") else a for a in argv[3:]]
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # only our wheels, whatever this machine's pip config
    offline = ["--dry-run", "--report", str(report), "--no-index", "--find-links", str(wheels)]
    try:
        subprocess.run(
            [sys.executable, "-m", "pip", *pip_args, *extra, *offline],
            env=env,
            check=True,
            capture_output=True,
        )
    finally:
        if keep_pins:
            Path(argv[argv.index("--constraint") + 1]).unlink()
    planned = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {item["metadata"]["name"]: item["metadata"]["version"] for item in planned}


@pytest.mark.slow
def test_pip_installs_the_companion_and_keeps_torch_numpy_matplotlib(tmp_path: Path) -> None:
    dependencies = {Requirement(r).name: Requirement(r) for r in PROJECT["dependencies"]}
    for name in DEPENDED:  # the premise: this venv already satisfies the package's ranges
        assert dependencies[name].specifier.contains(version(name), prereleases=True)
    planned = _pip_would_install(tmp_path)
    assert planned == {PROJECT["name"]: PROJECT["version"]}


@pytest.mark.slow
def test_the_pins_hold_even_against_an_eager_upgrade(tmp_path: Path) -> None:
    planned = _pip_would_install(tmp_path, ("--upgrade", "--upgrade-strategy", "eager"))
    assert planned == {PROJECT["name"]: PROJECT["version"]}


@pytest.mark.slow
def test_without_its_pins_the_same_upgrade_would_change_them(tmp_path: Path) -> None:
    # So the tests above pass because the cell keeps the five, not because pip missed the wheels.
    eager = ("--upgrade", "--upgrade-strategy", "eager")
    planned = _pip_would_install(tmp_path, eager, keep_pins=False)
    assert {name: planned.get(name) for name in DEPENDED} == {
        name: NEWER.get(name, "99.0.0") for name in DEPENDED
    }


# ----- links, badges, images, GPU ---------------------------------------------------------------


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_links_in_a_notebook_open_that_notebook_as_released(path: Path) -> None:
    expected = REPO.release_colab_url(path.relative_to(ROOT).as_posix())
    assert f"/blob/v{PROJECT['version']}/" in expected
    for cell in _load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            for link in colab_sync.COLAB_LINK.findall(_source(cell)):
                assert link == expected


def test_readme_has_the_book_url_and_a_colab_badge_per_chapter() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert REPO.book_url in readme
    for path in NOTEBOOKS:
        link = REPO.release_colab_url(f"book/{path.name}")
        assert f"/blob/v{PROJECT['version']}/book/{path.name}" in link  # the release's notebook
        badge = f"[![Open In Colab]({colab_sync.BADGE})]({link})"
        assert badge in readme, path.name
    assert len(colab_sync.COLAB_LINK.findall(readme)) == len(NOTEBOOKS)


def test_no_chapter_asks_colab_for_a_gpu() -> None:
    for path in NOTEBOOKS:
        metadata = _load(path)["metadata"]
        assert "accelerator" not in metadata, path.name
        assert "gpuType" not in metadata.get("colab", {}), path.name


_MD_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)\s>]+)")
_HTML_IMAGE = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']([^\"']+)", re.IGNORECASE)


def _relative(src: str) -> bool:
    # Colab opens the notebook alone: a path next to it does not exist there.
    return not re.match(r"(https?:|data:|attachment:)", src)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebooks_show_no_image_by_relative_path(path: Path) -> None:
    found = []
    for i, cell in enumerate(_load(path)["cells"]):
        texts = [_source(cell)] if cell["cell_type"] == "markdown" else []
        for output in cell.get("outputs", []):
            html = output.get("data", {}).get("text/html", "")
            texts.append("".join(html) if isinstance(html, list) else html)
        for text in texts:
            found += [(i, s) for s in _MD_IMAGE.findall(text) + _HTML_IMAGE.findall(text)]
    assert not [(i, s) for i, s in found if _relative(s)]


# ----- the sync tool on a scratch project -------------------------------------------------------


def _project(root: Path, url: str, branch: str = "main", version: str | None = None) -> None:
    (root / "book").mkdir(parents=True, exist_ok=True)
    (root / "_config.yml").write_text(
        f"repository:\n  url: {url}\n  branch: {branch}\n  path_to_book: ''\n", encoding="utf-8"
    )
    (root / "README.md").write_text("# Book\n\nIntro.\n\n## Run it\n\nmake\n", encoding="utf-8")
    if version is not None:
        _pyproject(root, version)


def _pyproject(root: Path, version: str) -> None:
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "{PROJECT["name"]}"\nversion = "{version}"\n', encoding="utf-8"
    )


def _notebook(cells: list[dict], **metadata) -> dict:
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


_CELL_IDS = itertools.count()


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "id": f"md-{next(_CELL_IDS)}", "metadata": {}, "source": text}


def _code(text: str, *tags: str) -> dict:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"code-{next(_CELL_IDS)}",
        "metadata": {"tags": list(tags)} if tags else {},
        "outputs": [],
        "source": text,
    }


def test_sync_rewrites_cells_links_readme_and_drops_gpu_requests(tmp_path: Path) -> None:
    _project(tmp_path, "https://github.com/old-owner/old-name", version="1.0.0")
    old = colab_sync.load_repository(tmp_path / "_config.yml")
    assert old.tag == "v1.0.0"
    stale = {
        "cell_type": "code",
        "execution_count": 1,
        "id": "install",
        "metadata": {"tags": ["remove-input"]},
        "outputs": [],
        "source": colab_sync.install_cell_source(old),
    }
    # A link at the branch, as an older sync wrote it: the sync moves it to the release's tag.
    body = _markdown(f"# 5. Train\n\n[open]({old.colab_url('book/05_train.ipynb')})")
    gpu = {"accelerator": "GPU", "colab": {"gpuType": "T4"}}  # a stale GPU request
    (tmp_path / "book" / "05_train.ipynb").write_text(json.dumps(_notebook([stale, body], **gpu)))
    (tmp_path / "book" / "01_abs.ipynb").write_text(json.dumps(_notebook([_markdown("# 1. Abs")])))
    assert colab_sync.sync(tmp_path, check=False) == [
        "book/01_abs.ipynb",
        "book/05_train.ipynb",
        "README.md",
    ]
    assert colab_sync.sync(tmp_path, check=True) == []
    train = _load(tmp_path / "book" / "05_train.ipynb")
    assert old.release_colab_url("book/05_train.ipynb") in _source(train["cells"][1])
    assert "/blob/v1.0.0/book/05_train.ipynb" in _source(train["cells"][1])

    # A new address and a new release: every pin moves to the new repository and tag.
    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/new-owner/new-name\n  branch: trunk\n",
        encoding="utf-8",
    )
    _pyproject(tmp_path, "1.1.0")
    assert colab_sync.main(["--check", "--root", str(tmp_path)]) == 1
    assert colab_sync.main(["--root", str(tmp_path)]) == 0
    assert colab_sync.main(["--check", "--root", str(tmp_path)]) == 0
    new = colab_sync.load_repository(tmp_path / "_config.yml")
    assert (new.branch, new.version, new.tag) == ("trunk", "1.1.0", "v1.1.0")
    train = _load(tmp_path / "book" / "05_train.ipynb")
    install = _source(train["cells"][0])
    assert install == colab_sync.install_cell_source(new)
    assert 'REQUIREMENT = "' + new.requirement() + '"' in install
    assert install.count("@v1.1.0") == 1 and '"1.1.0"' in install  # the tag and the version
    assert train["cells"][0]["execution_count"] == 1  # only the source changed
    link = "https://colab.research.google.com/github/new-owner/new-name/blob/v1.1.0/book/05_train"
    assert link in _source(train["cells"][1])
    assert "accelerator" not in train["metadata"]  # the stale GPU request is gone
    assert train["metadata"]["colab"] == {"collapsed_sections": []}  # no solution to fold
    abs_nb = _load(tmp_path / "book" / "01_abs.ipynb")
    assert abs_nb["cells"][0]["metadata"]["tags"] == ["remove-input"]  # inserted
    assert abs_nb["cells"][0]["metadata"]["cellView"] == "form"
    assert "accelerator" not in abs_nb["metadata"]
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert readme.count(colab_sync.README_START) == 1
    assert "https://new-owner.github.io/new-name/" in readme
    assert (
        f"| 1. Abs | [![Open In Colab]({colab_sync.BADGE})]({link[: -len('05_train')]}01_abs"
        in (readme)
    )
    assert "as released in **v1.1.0**" in readme
    assert "old-owner" not in readme and "v1.0.0" not in readme
    assert readme.index(colab_sync.README_END) < readme.index("## Run it")


def test_sync_writes_colab_folds_and_check_fails_when_they_are_missing_or_stale(
    tmp_path: Path,
) -> None:
    _project(tmp_path, REPO.url)
    cells = [
        _markdown("# 1. Abs\n\n## 1.9 Exercises\n\n1. **Do it.**"),
        _markdown("### Solution 1\n\nThe idea."),
        _code("show_source(answer_1)", "hide-input"),
        _markdown("### Solution 2\n\nAnother."),
        _code("answer_2()"),
    ]
    cells[4]["metadata"]["cellView"] = "form"  # a form the book does not fold: stale
    path = tmp_path / "book" / "01_abs.ipynb"
    path.write_text(json.dumps(_notebook(cells)))
    assert colab_sync.sync(tmp_path, check=False) == ["book/01_abs.ipynb", "README.md"]
    nb = _load(path)
    assert nb["metadata"]["colab"]["collapsed_sections"] == ["solution-1", "solution-2"]
    by_heading = {_source(c).split("\n")[0]: c["metadata"].get("id") for c in nb["cells"]}
    assert by_heading["### Solution 1"] == "solution-1"
    assert by_heading["### Solution 2"] == "solution-2"
    views = [c["metadata"].get("cellView") for c in nb["cells"]]
    assert views == ["form", None, None, "form", None, None]  # install cell, hide-input cell
    assert colab_sync.sync(tmp_path, check=True) == []

    del nb["metadata"]["colab"]["collapsed_sections"]  # missing: Colab would show them open
    path.write_text(colab_sync.dump_notebook(nb))
    assert colab_sync.main(["--check", "--root", str(tmp_path)]) == 1
    assert colab_sync.main(["--root", str(tmp_path)]) == 0

    nb = _load(path)  # stale: a third solution the metadata does not know of
    nb["cells"].append(_markdown("### Solution 3\n\nA third."))
    path.write_text(colab_sync.dump_notebook(nb))
    assert colab_sync.sync(tmp_path, check=True) == ["book/01_abs.ipynb"]
    colab_sync.sync(tmp_path, check=False)
    assert _load(path)["metadata"]["colab"]["collapsed_sections"] == [
        "solution-1",
        "solution-2",
        "solution-3",
    ]


def test_a_notebook_edited_during_the_sync_is_synced_again_not_overwritten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _project(tmp_path, REPO.url)
    path = tmp_path / "book" / "01_abs.ipynb"
    path.write_text(json.dumps(_notebook([_markdown("# 1. Abs")])))
    real = colab_sync.sync_notebook
    edits = []

    def sync_while_edited(nb, repo, notebook):
        synced = real(nb, repo, notebook)
        if not edits:  # another editor saves the chapter while the first sync computes
            edits.append(1)
            path.write_text(json.dumps(_notebook([_markdown("# 1. Abs"), _markdown("New.")])))
        return synced

    monkeypatch.setattr(colab_sync, "sync_notebook", sync_while_edited)
    assert colab_sync.sync(tmp_path, check=False) == ["book/01_abs.ipynb", "README.md"]
    nb = _load(path)
    assert [_source(c) for c in nb["cells"][1:]] == ["# 1. Abs", "New."]  # the edit survives
    assert colab_sync.INSTALL_MARKER in _source(nb["cells"][0])  # and the sync was made


def test_citation_and_changelog_follow_the_release(tmp_path: Path) -> None:
    _project(tmp_path, "https://github.com/owner/book", version="1.0.0")
    (tmp_path / "CHANGELOG.md").write_text(
        "# Changelog\n\n## [1.0.0] - 2026-01-02\n\n### Added\n\n- A book.\n", encoding="utf-8"
    )
    kept = 'cff-version: 1.2.0\ntitle: "Book"\nauthors:\n  - name: "The authors"\n'
    (tmp_path / "CITATION.cff").write_text(kept + 'version: "0.9.0"\n', encoding="utf-8")
    assert colab_sync.sync(tmp_path, check=False) == ["README.md", "CITATION.cff"]
    citation = yaml.safe_load((tmp_path / "CITATION.cff").read_text(encoding="utf-8"))
    assert citation["version"] == "1.0.0" and citation["date-released"] == "2026-01-02"
    assert citation["repository-code"] == "https://github.com/owner/book"
    assert citation["url"] == "https://owner.github.io/book/"
    assert (tmp_path / "CITATION.cff").read_text(encoding="utf-8").startswith(kept)

    # A new version without its changelog entry stops the sync before it writes anything.
    _pyproject(tmp_path, "1.1.0")
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match=r"newest entry is 1\.0\.0.*add `## \[1\.1\.0\] - "):
        colab_sync.sync(tmp_path, check=False)
    assert colab_sync.main(["--check", "--root", str(tmp_path)]) == 1
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme
    changelog = (tmp_path / "CHANGELOG.md").read_text(encoding="utf-8")
    (tmp_path / "CHANGELOG.md").write_text(
        changelog.replace("## [1.0.0]", "## [Unreleased]\n\n## [1.1.0]\n\n- More.\n\n## [1.0.0]")
    )
    with pytest.raises(ValueError, match=r"entry for 1\.1\.0 needs its date"):
        colab_sync.sync(tmp_path, check=True)
    (tmp_path / "CHANGELOG.md").write_text(
        changelog.replace("## [1.0.0]", "## [1.1.0] - 2026-02-03\n\n- More.\n\n## [1.0.0]")
    )
    assert colab_sync.sync(tmp_path, check=False) == ["README.md", "CITATION.cff"]
    citation = yaml.safe_load((tmp_path / "CITATION.cff").read_text(encoding="utf-8"))
    assert (citation["version"], citation["date-released"]) == ("1.1.0", "2026-02-03")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_rewriting_a_notebook_changes_nothing_but_its_content(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert colab_sync.dump_notebook(json.loads(text)) == text


def test_sync_leaves_an_up_to_date_notebook_byte_for_byte(tmp_path: Path) -> None:
    if not NOTEBOOKS:
        pytest.skip("no chapter notebooks yet")
    _project(tmp_path, REPO.url, REPO.branch)
    copy = tmp_path / "book" / NOTEBOOKS[0].name
    copy.write_bytes(NOTEBOOKS[0].read_bytes())
    colab_sync.sync(tmp_path, check=False)
    assert copy.read_bytes() == NOTEBOOKS[0].read_bytes()


@pytest.mark.parametrize(
    "url", ["https://gitlab.com/a/b", "git@github.com:a/b.git", "", "https://github.com/a"]
)
def test_load_repository_accepts_only_a_github_https_url(tmp_path: Path, url: str) -> None:
    (tmp_path / "_config.yml").write_text(f"repository:\n  url: '{url}'\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"repository.url in .* must be https://github.com/"):
        colab_sync.load_repository(tmp_path / "_config.yml")


# ----- tools/colab_emulate.py: the emulated runtimes ----------------------------------------------


def test_colab_test_emulates_the_current_runtime_and_keeps_2026_07() -> None:
    import colab_emulate

    current, previous = colab_emulate.RUNTIMES["current"], colab_emulate.RUNTIMES["2026.07"]
    assert current.python == "3.13" and current.keep["numpy"] == "2.1.3"
    assert current.keep["timm"] == "1.0.28" and current.keep["ipython"] == "7.34.0"
    assert previous.python == "3.12" and previous.keep["numpy"] == "2.0.2"
    assert "timm" not in previous.keep
    # Every package the emulation holds at Colab's version is one the install cells pin.
    assert set(current.keep) | set(previous.keep) <= set(KEPT)


@pytest.mark.parametrize(
    ("wanted", "offered", "chosen"),
    [
        ("2.1.3", ["2.1.2", "2.1.3", "2.2.0"], "2.1.3"),
        ("1.0.28", ["1.0.26", "1.0.27", "1.1.0"], "1.0.27"),
        ("7.34.0", ["7.33.0", "8.0.0"], "7.33.0"),
        ("0.9.21", ["0.8.0", "1.0.0"], "0.8.0"),
        ("2.11.0", [], "2.11.0"),
    ],
)
def test_a_missing_version_is_replaced_by_the_nearest(wanted, offered, chosen) -> None:
    import colab_emulate

    assert colab_emulate.nearest(wanted, offered) == chosen


# ----- tools/colab_emulate.py: the release the install cells resolve ------------------------------

GIT = [
    "git",
    "-c",
    "user.name=Book",
    "-c",
    "user.email=book@localhost",
    "-c",
    "commit.gpgsign=false",
]


def _git_project(root: Path, version: str) -> None:
    """A small git repository shaped like this one: _config.yml, pyproject.toml, one file."""
    _project(root, "https://github.com/owner/book", version=version)
    (root / "marker.txt").write_text("first\n", encoding="utf-8")
    subprocess.run([*GIT, "init", "--quiet", "-b", "main", str(root)], check=True)
    subprocess.run([*GIT, "-C", str(root), "add", "--all"], check=True)
    subprocess.run([*GIT, "-C", str(root), "commit", "--quiet", "-m", "first"], check=True)


def _clone_tag(tmp_path: Path, scratch: Path, mirror: Path, root: Path, tag: str) -> str:
    """Clone the GitHub URL at ``tag`` as pip does, through the emulation's redirect; return the
    marker file it checks out."""
    import colab_emulate

    env = colab_emulate.offline_env(tmp_path / "venv", scratch, mirror, root)
    clone = tmp_path / f"clone-{tag}"
    url = colab_sync.load_repository(root / "_config.yml").url
    subprocess.run(
        ["git", "clone", "--quiet", "--branch", tag, url, str(clone)],
        env=env,
        check=True,
        capture_output=True,
    )
    shutil.rmtree(scratch / "home")  # offline_env makes it afresh each time
    return (clone / "marker.txt").read_text(encoding="utf-8")


def test_the_emulation_resolves_an_untagged_release_at_this_working_tree(tmp_path: Path) -> None:
    import colab_emulate

    root, scratch = tmp_path / "repo", tmp_path / "scratch"
    _git_project(root, "1.0.0")
    (root / "marker.txt").write_text("edited\n", encoding="utf-8")  # not committed
    scratch.mkdir()
    mirror, note = colab_emulate.snapshot_repository(scratch, root)
    assert "v1.0.0 is not tagged yet" in note
    refs = subprocess.run(
        ["git", "ls-remote", str(mirror)], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    heads = dict(line.split("\t")[::-1] for line in refs if line)
    assert heads["refs/tags/v1.0.0"] == heads["refs/heads/main"]
    assert _clone_tag(tmp_path, scratch, mirror, root, "v1.0.0") == "edited\n"


def test_the_emulation_installs_an_existing_release_tag_as_colab_would(tmp_path: Path) -> None:
    import colab_emulate

    root, scratch = tmp_path / "repo", tmp_path / "scratch"
    _git_project(root, "1.0.0")
    subprocess.run([*GIT, "-C", str(root), "tag", "-a", "v1.0.0", "-m", "Release"], check=True)
    (root / "marker.txt").write_text("later\n", encoding="utf-8")
    subprocess.run([*GIT, "-C", str(root), "commit", "--quiet", "-am", "later"], check=True)
    scratch.mkdir()
    mirror, note = colab_emulate.snapshot_repository(scratch, root)
    assert "v1.0.0 is tagged at" in note and "raise the version" in note
    assert _clone_tag(tmp_path, scratch, mirror, root, "v1.0.0") == "first\n"  # the release
    assert _clone_tag(tmp_path, scratch, mirror, root, "main") == "later\n"  # this tree


def test_the_emulation_refuses_an_install_cell_not_pinned_to_the_release(tmp_path: Path) -> None:
    import colab_emulate

    repo = colab_sync.Repository("owner", "book", version="1.0.0")
    pinned = _notebook([_code(colab_sync.install_cell_source(repo))])
    (tmp_path / "01_abs.ipynb").write_text(json.dumps(pinned))
    (tmp_path / "04_timm.ipynb").write_text(json.dumps(pinned))  # chapter 4 needs its extra
    at_main = colab_sync.install_cell_source(colab_sync.Repository("owner", "book")).replace(
        "@v" + colab_sync.VERSION, "@main"
    )
    (tmp_path / "02_rel.ipynb").write_text(json.dumps(_notebook([_code(at_main)])))
    failures = colab_emulate.pin_failures(sorted(tmp_path.glob("*.ipynb")), repo)
    assert [f.split(":")[0] for f in failures] == ["02_rel.ipynb", "04_timm.ipynb"]
    assert "@main" in failures[0] and "run `make colab-sync`" in failures[0]
    assert "[timm]" in failures[1]
    assert colab_emulate.pin_failures([tmp_path / "01_abs.ipynb"], repo) == []
