"""Keep every place that names the repository or the release in sync with the one source of each.

``_config.yml``'s ``repository`` section (``url``, ``branch``, ``path_to_book``) says where the book
lives; ``pyproject.toml``'s ``version`` is the release (its git tag is ``v<version>``, made by CI's
release job when that version first passes on ``main``); ``CHANGELOG.md``'s entry for that version
gives its date. From them this tool writes:

- cell 0 of every ``book/*.ipynb``: the Colab install cell (tagged ``remove-input``, folded in
  Colab by ``# @title`` and ``cellView: form``), which installs the companion package of this
  release, from the repository at the tag ``v<version>``, only inside Colab, only when that version
  is not installed yet, quietly, with Colab's torch, torchvision, numpy, matplotlib and ipywidgets
  pinned as they are; a chapter listed in ``EXTRAS`` installs that extra of the package too;
- every Colab link in the notebooks' Markdown, opening that notebook at the same tag, so the
  notebook Colab opens and the package it installs are one release;
- Colab's folds (``tools/book_folds.py``): each ``### Solution N`` heading cell gets its
  ``metadata.id`` and the notebook's ``metadata.colab.collapsed_sections`` lists them, so Colab
  folds what the book folds; ``hide-input`` code cells get ``cellView: form`` and no other cell
  but the install cell keeps one;
- no GPU request in any notebook's metadata (``accelerator``, Colab's ``gpuType``): no chapter needs
  a GPU (chapter 5 trains on the CPU, the hardware its results came from), so Colab opens each one
  on its default runtime;
- the README block between ``<!-- colab-sync:start -->`` and ``<!-- colab-sync:end -->``: the
  book's URL (GitHub Pages of the repository) and a Colab badge per chapter, at the release tag;
- ``CITATION.cff``'s ``version``, ``date-released``, ``repository-code`` and ``url`` (the rest of
  the file is written by hand).

Each notebook is read, changed and written at once (and read again just before the write: a
notebook that changed meanwhile is synced again), so a sync never undoes another edit.

Usage: ``python tools/colab_sync.py`` rewrites what differs; ``--check`` only reports it and
exits with status 1 (``make colab-check``, run by the tests). A ``CHANGELOG.md`` whose newest
entry is not pyproject's version stops both, naming what to add.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import nbformat
import yaml

ROOT = Path(__file__).resolve().parent.parent
TOOLS = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: companion._io is the writer
sys.path.insert(0, str(TOOLS))  # tools/ is not a package: book_folds sits beside this file

import book_folds  # noqa: E402

from companion._io import atomic_write_text  # noqa: E402

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PACKAGE = PYPROJECT["name"]
VERSION = PYPROJECT["version"]
INSTALL_TITLE = "# @title Install the book's companion package (Colab only)"
INSTALL_MARKER = "# Colab only: install the book's companion package"
#: What the install cell never changes: Colab's own builds, pinned to the versions it finds (timm,
#: ipython and anywidget where the runtime preinstalls them, as Colab's current one does).
KEEP = (
    "torch", "torchvision", "numpy", "scipy", "matplotlib",
    "ipywidgets", "ipython", "timm", "anywidget",
)  # fmt: skip
#: Chapters (by file-name prefix) whose install cell also installs an extra of the package (its
#: optional dependencies, pyproject.toml): chapters 4 and 6 compare the book's Swin with timm's.
EXTRAS = {"04_": "timm", "06_": "timm"}
COLAB = "https://colab.research.google.com"
BADGE = f"{COLAB}/assets/colab-badge.svg"
COLAB_LINK = re.compile(re.escape(COLAB) + r"/github/[^\s)\"'<>\]]+")
README_START = "<!-- colab-sync:start -->"
README_END = "<!-- colab-sync:end -->"
#: A release's heading in CHANGELOG.md (Keep a Changelog): ``## [0.2.0] - 2026-12-03``.
CHANGELOG_ENTRY = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S+))?[ \t]*$", re.M)
#: The keys of CITATION.cff this tool writes; every other line is left as written.
CITATION_KEYS = ("version", "date-released", "repository-code", "url")


def release_tag(version: str) -> str:
    """The git tag of release ``version``: ``v0.2.0``."""
    return f"v{version}"


@dataclass(frozen=True)
class Repository:
    """Where the book's sources live: ``https://github.com/{owner}/{name}``; ``branch`` is the one
    the online book is built from, ``version`` the release (pyproject.toml's), tagged ``tag``."""

    owner: str
    name: str
    branch: str = "main"
    path_to_book: str = ""
    version: str = VERSION

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"

    @property
    def book_url(self) -> str:
        """The GitHub Pages address that ``.github/workflows/pages.yml`` deploys to."""
        return f"https://{self.owner.lower()}.github.io/{self.name}/"

    @property
    def tag(self) -> str:
        """The release's git tag, ``v<version>``: what install cells install and Colab opens."""
        return release_tag(self.version)

    def requirement(self, extra: str | None = None) -> str:
        """The pip requirement the install cell uses (a direct reference at the release tag)."""
        return f"{PACKAGE}{f'[{extra}]' if extra else ''} @ git+{self.url}@{self.tag}"

    def colab_url(self, notebook: str, ref: str | None = None) -> str:
        """Colab's address of ``notebook`` (a path relative to the book's root) at ``ref``.

        By default at ``branch``, as the online book's launch button opens it (Jupyter Book
        builds that button from ``_config.yml``); the links and badges this tool writes use
        :meth:`release_colab_url`.
        """
        path = PurePosixPath(self.path_to_book or ".") / notebook
        at = ref or self.branch
        return f"{COLAB}/github/{self.owner}/{self.name}/blob/{at}/{path.as_posix()}"

    def release_colab_url(self, notebook: str) -> str:
        """Colab's address of ``notebook`` as released: at the tag its install cell installs."""
        return self.colab_url(notebook, self.tag)


def project_version(pyproject: Path) -> str:
    """``[project] version`` of a ``pyproject.toml``."""
    return str(tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["version"])


def load_repository(config: Path, version: str | None = None) -> Repository:
    """Read ``repository.url`` / ``branch`` / ``path_to_book`` from a Jupyter Book config.

    The release is ``version``, else that of the ``pyproject.toml`` beside ``config``, else
    this project's (``VERSION``).
    """
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    section = data.get("repository") or {}
    url = str(section.get("url", "")).rstrip("/")
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?", url)
    if match is None:
        raise ValueError(
            f"repository.url in {config} must be https://github.com/<owner>/<name>, got {url!r}"
        )
    branch = str(section.get("branch") or "main")
    path_to_book = str(section.get("path_to_book") or "").strip("/")
    if version is None:
        pyproject = config.parent / "pyproject.toml"
        version = project_version(pyproject) if pyproject.is_file() else VERSION
    return Repository(match[1], match[2], branch, path_to_book, version)


def extra_for(notebook: str) -> str | None:
    """The package extra that ``notebook``'s install cell asks for (``EXTRAS``), if any."""
    name = PurePosixPath(notebook).name
    return next((extra for prefix, extra in EXTRAS.items() if name.startswith(prefix)), None)


#: Cell 0, as `ruff format` leaves it (so linting the notebooks never rewrites it); ``@NAME@`` are
#: filled in by :func:`install_cell_source`.
INSTALL_CELL = """\
@TITLE@ { display-mode: "form" }
@MARKER@, unless this version is installed;
# what Colab preinstalls (KEEP: torch, numpy, timm...) is pinned as it is; pip only adds.
# REQUIREMENT names the release this notebook belongs to: a saved copy installs that code.
import subprocess
import sys
import tempfile
from importlib import metadata

PACKAGE, VERSION = "@PACKAGE@", "@VERSION@"
REQUIREMENT = "@REQUIREMENT@"
NEEDS = @NEEDS@
KEEP = @KEEP@
if "google.colab" in sys.modules:
    found = metadata.distributions()
    have = {(d.metadata["Name"] or "").lower().replace("_", "-"): d.version for d in found}
    if have.get(PACKAGE) != VERSION or not set(NEEDS) <= have.keys():
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as pins:
            pins.writelines(f"{name}=={have[name]}\\n" for name in KEEP if name in have)
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--constraint"]
        done = subprocess.run([*pip, pins.name, REQUIREMENT], capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"pip could not install {REQUIREMENT}:\\n{done.stderr}")"""


def install_cell_source(repo: Repository, extra: str | None = None) -> str:
    """The source of cell 0: installs the companion (and ``extra``'s packages) only in Colab.

    It does nothing outside Colab, nor when this version (and the extra's packages) is already
    installed, as in a chapter opened after another in the same runtime. Otherwise it runs pip
    quietly (its report is shown only if it fails) with a constraints file pinning every ``KEEP``
    package to the version Colab has, so pip installs what is missing and changes none of them.
    """
    extras = PYPROJECT["optional-dependencies"][extra] if extra else []
    needs = [PACKAGE] + [re.split(r"[<>=!~ ;\[]", r, maxsplit=1)[0] for r in extras]
    fields = {
        "TITLE": INSTALL_TITLE,
        "MARKER": INSTALL_MARKER,
        "PACKAGE": PACKAGE,
        "VERSION": repo.version,
        "REQUIREMENT": repo.requirement(extra),
        "NEEDS": json.dumps(needs),
        "KEEP": f"{json.dumps(list(KEEP[:6]))}\nKEEP += {json.dumps(list(KEEP[6:]))}",
    }
    return re.sub(r"@([A-Z]+)@", lambda m: fields[m[1]], INSTALL_CELL)


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def sync_notebook(nb: dict[str, Any], repo: Repository, notebook: str) -> dict[str, Any]:
    """A copy of ``nb`` (nbformat v4 JSON) with its install cell, links and folds in sync, no GPU
    request.

    ``notebook`` is the notebook's path relative to the book's root (``book/01_x.ipynb``).
    """
    nb = copy.deepcopy(nb)
    cells = nb.setdefault("cells", [])
    wanted = install_cell_source(repo, extra_for(notebook))
    first = cells[0] if cells else None
    if first is None or not (first.get("cell_type") == "code" and INSTALL_MARKER in _source(first)):
        first = json.loads(json.dumps(nbformat.v4.new_code_cell(wanted)))
        if nb.get("nbformat_minor", 0) < 5:  # cell ids exist from nbformat 4.5 on
            first.pop("id", None)
        cells.insert(0, first)
    if _source(first) != wanted:
        first["source"] = wanted
    tags = first.setdefault("metadata", {}).setdefault("tags", [])
    if "remove-input" not in tags:
        tags.append("remove-input")
    first["metadata"]["cellView"] = "form"  # Colab shows the title, folded
    link = repo.release_colab_url(notebook)
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            text = COLAB_LINK.sub(link, _source(cell))
            if text != _source(cell):
                cell["source"] = text
    # Colab folds what the book folds: solution sections collapsed, hide-input code as a form.
    # A form anywhere else (but the install cell) would hide in Colab what the book shows.
    for cell in cells[1:]:
        meta = cell.get("metadata", {})
        hidden = cell.get("cell_type") == "code" and book_folds.HIDE_INPUT in meta.get("tags", [])
        if "cellView" in meta and not hidden:
            del meta["cellView"]
    book_folds.colab_folds(nb)
    # No chapter needs a GPU: a stale request would only spend the reader's GPU quota.
    meta = nb.setdefault("metadata", {})
    meta.pop("accelerator", None)
    if isinstance(meta.get("colab"), dict):
        meta["colab"].pop("gpuType", None)
    return nb


def notebook_title(nb: dict[str, Any], fallback: str) -> str:
    """The first ``# `` heading of the notebook's Markdown (``1. Absolute ...``), else fallback."""
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            for line in _source(cell).splitlines():
                if line.startswith("# "):
                    return line[2:].strip()
    return fallback


def readme_block(repo: Repository, chapters: list[tuple[str, str]]) -> str:
    """The README's generated block for ``chapters`` = ``[(notebook path, title), ...]``."""
    lines = [
        README_START,
        "<!-- Generated by `make colab-sync` from _config.yml's `repository` and "
        "pyproject.toml's `version`; edit those, not this block. -->",
        "",
        f"Read the book online at **<{repo.book_url}>** (or offline, as one PDF: "
        f"<{repo.book_url}book.pdf>), or run any chapter in Google Colab, as released in "
        f"**{repo.tag}**: each badge opens the chapter at the tag `{repo.tag}`, and its first "
        "cell installs the companion package of that same tag.",
        "",
        "| Chapter | Run it |",
        "|---------|--------|",
    ]
    for notebook, title in chapters:
        badge = f"[![Open In Colab]({BADGE})]({repo.release_colab_url(notebook)})"
        lines.append(f"| {title} | {badge} |")
    if not chapters:
        lines.append("| (no chapter notebooks yet) | |")
    lines.append(README_END)
    return "\n".join(lines)


def sync_readme(text: str, block: str) -> str:
    """Replace the generated block in ``text``, else insert it before ``## Run it``."""
    pattern = re.compile(re.escape(README_START) + r".*?" + re.escape(README_END), re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    anchor = text.find("\n## Run it")
    if anchor == -1:
        return text.rstrip("\n") + "\n\n" + block + "\n"
    return text[: anchor + 1] + block + "\n\n" + text[anchor + 1 :]


def changelog_entries(text: str) -> list[tuple[str, str | None]]:
    """``[(version, date or None), ...]`` of CHANGELOG.md's release headings, newest first
    (an ``## [Unreleased]`` heading is not a release)."""
    return [
        (m["version"], m["date"])
        for m in CHANGELOG_ENTRY.finditer(text)
        if m["version"].lower() != "unreleased"
    ]


def release_date(changelog: str, version: str) -> str:
    """The date of ``version``'s entry, which must be CHANGELOG.md's newest, as ``YYYY-MM-DD``.

    Raises ``ValueError`` saying what to add when the newest entry is another version or has no
    date: a release is not made without its changelog entry.
    """
    entries = changelog_entries(changelog)
    wanted = f"`## [{version}] - YYYY-MM-DD`"
    if not entries or entries[0][0] != version:
        newest = entries[0][0] if entries else "none"
        raise ValueError(
            f"CHANGELOG.md's newest entry is {newest}, but pyproject.toml's version is {version}:"
            f" add {wanted} above it"
        )
    date = entries[0][1]
    if date is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
        raise ValueError(f"CHANGELOG.md's entry for {version} needs its date: {wanted}")
    return date


def sync_citation(text: str, repo: Repository, date: str) -> str:
    """``CITATION.cff`` with its release and addresses from ``repo`` and ``date`` (the keys in
    ``CITATION_KEYS``, each on its own top-level line; a missing one is added at the end)."""
    values = {
        "version": repo.version,
        "date-released": date,
        "repository-code": repo.url,
        "url": repo.book_url,
    }
    for key in CITATION_KEYS:
        line = f'{key}: "{values[key]}"'
        pattern = re.compile(rf"^{re.escape(key)}:.*$", re.M)
        if pattern.search(text):
            text = pattern.sub(lambda _, line=line: line, text, count=1)
        else:
            text = text.rstrip("\n") + "\n" + line + "\n"
    return text


def dump_notebook(nb: dict[str, Any]) -> str:
    """``nb`` as nbformat's own writer saves it (as nbclient/nbconvert do), newline-terminated.

    So a rewritten notebook differs from the original only where its content changed.
    """
    return nbformat.writes(nbformat.from_dict(nb)) + "\n"


def _sync_notebook_file(path: Path, repo: Repository, rel: str, check: bool) -> tuple[str, bool]:
    """Sync one notebook file at once: read, change, write; return its title and whether it
    differed. The file is read again just before the write, and synced again if it changed in
    between (the chapters are edited while this runs), so no other edit is overwritten."""
    for _ in range(5):
        text = path.read_text(encoding="utf-8")
        nb = json.loads(text)
        synced = sync_notebook(nb, repo, rel)
        title = notebook_title(synced, path.stem)
        if synced == nb or check:
            return title, synced != nb
        new = dump_notebook(synced)
        if path.read_text(encoding="utf-8") == text:
            atomic_write_text(path, new)
            return title, True
    raise RuntimeError(f"{rel} kept changing while it was synced: run `make colab-sync` again")


def sync(root: Path, check: bool) -> list[str]:
    """Sync every notebook under ``root/book``, ``root/README.md`` and ``root/CITATION.cff``;
    return what differed. With ``check`` nothing is written.

    Raises ``ValueError`` (before anything is written) when ``root/CHANGELOG.md`` lacks the
    release's entry: ``CITATION.cff`` takes its date from there.
    """
    repo = load_repository(root / "_config.yml")
    citation, changelog = root / "CITATION.cff", root / "CHANGELOG.md"
    date = None
    if changelog.is_file() or citation.is_file():
        text = changelog.read_text(encoding="utf-8") if changelog.is_file() else ""
        date = release_date(text, repo.version)
    changed: list[str] = []
    chapters: list[tuple[str, str]] = []
    for path in sorted((root / "book").glob("*.ipynb")):
        rel = path.relative_to(root).as_posix()
        title, differed = _sync_notebook_file(path, repo, rel, check)
        chapters.append((rel, title))
        if differed:
            changed.append(rel)
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = sync_readme(text, readme_block(repo, chapters))
    if new != text:
        changed.append("README.md")
        if not check:
            atomic_write_text(readme, new)
    if date is not None:
        text = citation.read_text(encoding="utf-8") if citation.is_file() else ""
        new = sync_citation(text, repo, date)
        if new != text:
            changed.append("CITATION.cff")
            if not check:
                atomic_write_text(citation, new)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report differences, write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root folder")
    args = parser.parse_args(argv)
    try:
        changed = sync(args.root, args.check)
    except ValueError as error:
        print(f"colab_sync: {error}", file=sys.stderr)
        return 1
    source = "_config.yml, pyproject.toml and CHANGELOG.md"
    verb = f"out of sync with {source}" if args.check else f"rewritten from {source}"
    for name in changed:
        print(f"{name}: {verb}")
    if args.check and changed:
        print("Run `make colab-sync` to update them.", file=sys.stderr)
        return 1
    if not changed:
        print(
            "Colab install cells, links, folds, README badges and CITATION.cff match "
            "_config.yml and the release."
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
