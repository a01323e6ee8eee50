"""Colab delivery: install cells, links and badges agree with ``_config.yml``; no GPU requests.

The install cell's promise (it never changes what Colab preinstalls: torch, torchvision, numpy,
matplotlib, ipywidgets, ipython, timm, anywidget) is checked with a real pip resolution in this
venv, which already holds versions that satisfy the package's ranges, while newer wheels of all of
them are on offer, even to `--upgrade`.
`make colab-test` (tools/colab_emulate.py) then runs every chapter as Colab does.
"""

from __future__ import annotations

import json
import os
import re
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
import colab_sync  # noqa: E402 (tools/ is not a package; see sys.path above)

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
    assert config["repository"]["branch"] == REPO.ref == "main"
    assert config["repository"]["url"] == REPO.url
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


def test_the_repository_address_is_written_nowhere_else() -> None:
    address = f"github.com/{REPO.owner}/{REPO.name}"
    generated = {"_config.yml", "README.md"} | {p.relative_to(ROOT).as_posix() for p in NOTEBOOKS}
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


def test_only_the_timm_chapter_asks_for_the_timm_extra() -> None:
    extras = {p.name: colab_sync.extra_for(p.name) for p in NOTEBOOKS}
    assert {name for name, extra in extras.items() if extra} <= {
        p.name for p in NOTEBOOKS if p.name.startswith("04_")
    }
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
    requirement = f"{PROJECT['name']} @ git+{REPO.url}@{REPO.ref}"
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
    assert call[0][0][-1] == f"{PROJECT['name']}[timm] @ git+{REPO.url}@{REPO.ref}"
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
def test_colab_links_in_a_notebook_open_that_notebook(path: Path) -> None:
    expected = REPO.colab_url(path.relative_to(ROOT).as_posix())
    for cell in _load(path)["cells"]:
        if cell["cell_type"] == "markdown":
            for link in colab_sync.COLAB_LINK.findall(_source(cell)):
                assert link == expected


def test_readme_has_the_book_url_and_a_colab_badge_per_chapter() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert REPO.book_url in readme
    for path in NOTEBOOKS:
        badge = f"[![Open In Colab]({colab_sync.BADGE})]({REPO.colab_url(f'book/{path.name}')})"
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


def _project(root: Path, url: str, branch: str = "main") -> None:
    (root / "book").mkdir(parents=True)
    (root / "_config.yml").write_text(
        f"repository:\n  url: {url}\n  branch: {branch}\n  path_to_book: ''\n", encoding="utf-8"
    )
    (root / "README.md").write_text("# Book\n\nIntro.\n\n## Run it\n\nmake\n", encoding="utf-8")


def _notebook(cells: list[dict], **metadata) -> dict:
    return {"cells": cells, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5}


def _markdown(text: str) -> dict:
    return {"cell_type": "markdown", "id": "md", "metadata": {}, "source": text}


def test_sync_rewrites_cells_links_readme_and_drops_gpu_requests(tmp_path: Path) -> None:
    _project(tmp_path, "https://github.com/old-owner/old-name")
    old = colab_sync.load_repository(tmp_path / "_config.yml")
    stale = {
        "cell_type": "code",
        "execution_count": 1,
        "id": "install",
        "metadata": {"tags": ["remove-input"]},
        "outputs": [],
        "source": colab_sync.install_cell_source(old),
    }
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

    (tmp_path / "_config.yml").write_text(
        "repository:\n  url: https://github.com/new-owner/new-name\n  branch: v1.0\n",
        encoding="utf-8",
    )
    assert colab_sync.main(["--check", "--root", str(tmp_path)]) == 1
    assert colab_sync.main(["--root", str(tmp_path)]) == 0
    assert colab_sync.main(["--check", "--root", str(tmp_path)]) == 0
    new = colab_sync.load_repository(tmp_path / "_config.yml")
    train = _load(tmp_path / "book" / "05_train.ipynb")
    assert _source(train["cells"][0]) == colab_sync.install_cell_source(new)
    assert "@v1.0" in _source(train["cells"][0])
    assert train["cells"][0]["execution_count"] == 1  # only the source changed
    assert new.colab_url("book/05_train.ipynb") in _source(train["cells"][1])
    assert "accelerator" not in train["metadata"]  # the stale GPU request is gone
    assert train["metadata"]["colab"] == {}
    abs_nb = _load(tmp_path / "book" / "01_abs.ipynb")
    assert abs_nb["cells"][0]["metadata"]["tags"] == ["remove-input"]  # inserted
    assert abs_nb["cells"][0]["metadata"]["cellView"] == "form"
    assert "accelerator" not in abs_nb["metadata"]
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert readme.count(colab_sync.README_START) == 1
    assert "https://new-owner.github.io/new-name/" in readme
    assert f"| 1. Abs | [![Open In Colab]({colab_sync.BADGE})]" in readme
    assert "old-owner" not in readme
    assert readme.index(colab_sync.README_END) < readme.index("## Run it")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_rewriting_a_notebook_changes_nothing_but_its_content(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert colab_sync.dump_notebook(json.loads(text)) == text


def test_sync_leaves_an_up_to_date_notebook_byte_for_byte(tmp_path: Path) -> None:
    if not NOTEBOOKS:
        pytest.skip("no chapter notebooks yet")
    _project(tmp_path, REPO.url, REPO.ref)
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
