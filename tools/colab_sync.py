"""Keep every place that names the repository in sync with ``_config.yml``.

``_config.yml``'s ``repository`` section (``url``, ``branch``, ``path_to_book``) is the one place
that says where the book lives. From it this tool writes:

- cell 0 of every ``book/*.ipynb``: the Colab install cell (tagged ``remove-input``, folded in
  Colab by ``# @title`` and ``cellView: form``), which installs the companion package (version from
  ``pyproject.toml``) from the repository at ``branch``, only inside Colab, only when that version
  is not installed yet, quietly, with Colab's torch, torchvision, numpy, matplotlib and ipywidgets
  pinned as they are; a chapter listed in ``EXTRAS`` installs that extra of the package too;
- every Colab link in the notebooks' Markdown, pointing at that notebook on ``branch``;
- no GPU request in any notebook's metadata (``accelerator``, Colab's ``gpuType``): no chapter needs
  a GPU (chapter 5 trains on the CPU, the hardware its results came from), so Colab opens each one
  on its default runtime;
- the README block between ``<!-- colab-sync:start -->`` and ``<!-- colab-sync:end -->``: the
  book's URL (GitHub Pages of the repository) and a Colab badge per chapter.

Usage: ``python tools/colab_sync.py`` rewrites what differs; ``--check`` only reports it and
exits with status 1 (``make colab-check``, run by the tests).
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
sys.path.insert(0, str(ROOT))  # run as a script from anywhere: companion._io is the writer

from companion._io import atomic_write_text  # noqa: E402

PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
PACKAGE = PYPROJECT["name"]
VERSION = PYPROJECT["version"]
INSTALL_TITLE = "# @title Install the book's companion package (Colab only)"
INSTALL_MARKER = "# Colab only: install the book's companion package"
#: What the install cell never changes: Colab's own builds, pinned to the versions it finds (timm,
#: ipython and anywidget where the runtime preinstalls them, as Colab's current one does).
KEEP = ("torch", "torchvision", "numpy", "matplotlib", "ipywidgets", "ipython", "timm", "anywidget")
#: Chapters (by file-name prefix) whose install cell also installs an extra of the package (its
#: optional dependencies, pyproject.toml): chapter 4 compares the book's Swin with timm's.
EXTRAS = {"04_": "timm"}
COLAB = "https://colab.research.google.com"
BADGE = f"{COLAB}/assets/colab-badge.svg"
COLAB_LINK = re.compile(re.escape(COLAB) + r"/github/[^\s)\"'<>\]]+")
README_START = "<!-- colab-sync:start -->"
README_END = "<!-- colab-sync:end -->"


@dataclass(frozen=True)
class Repository:
    """Where the book's sources live: ``https://github.com/{owner}/{name}`` at ``ref``."""

    owner: str
    name: str
    ref: str
    path_to_book: str = ""

    @property
    def url(self) -> str:
        return f"https://github.com/{self.owner}/{self.name}"

    @property
    def book_url(self) -> str:
        """The GitHub Pages address that ``.github/workflows/pages.yml`` deploys to."""
        return f"https://{self.owner.lower()}.github.io/{self.name}/"

    def requirement(self, extra: str | None = None) -> str:
        """The pip requirement the install cell uses (a direct reference at ``ref``)."""
        return f"{PACKAGE}{f'[{extra}]' if extra else ''} @ git+{self.url}@{self.ref}"

    def colab_url(self, notebook: str) -> str:
        """Colab's address of ``notebook`` (a path relative to the book's root)."""
        path = PurePosixPath(self.path_to_book or ".") / notebook
        return f"{COLAB}/github/{self.owner}/{self.name}/blob/{self.ref}/{path.as_posix()}"


def load_repository(config: Path) -> Repository:
    """Read ``repository.url`` / ``branch`` / ``path_to_book`` from a Jupyter Book config."""
    data = yaml.safe_load(config.read_text(encoding="utf-8")) or {}
    section = data.get("repository") or {}
    url = str(section.get("url", "")).rstrip("/")
    match = re.fullmatch(r"https://github\.com/([\w.-]+)/([\w.-]+?)(?:\.git)?", url)
    if match is None:
        raise ValueError(
            f"repository.url in {config} must be https://github.com/<owner>/<name>, got {url!r}"
        )
    ref = str(section.get("branch") or "main")
    path_to_book = str(section.get("path_to_book") or "").strip("/")
    return Repository(match[1], match[2], ref, path_to_book)


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

    It does nothing outside Colab, nor when this ``VERSION`` (and the extra's packages) is already
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
        "VERSION": VERSION,
        "REQUIREMENT": repo.requirement(extra),
        "NEEDS": json.dumps(needs),
        "KEEP": json.dumps(list(KEEP)),
    }
    return re.sub(r"@([A-Z]+)@", lambda m: fields[m[1]], INSTALL_CELL)


def _source(cell: dict[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def sync_notebook(nb: dict[str, Any], repo: Repository, notebook: str) -> dict[str, Any]:
    """A copy of ``nb`` (nbformat v4 JSON) with its install cell and links in sync, no GPU request.

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
    link = repo.colab_url(notebook)
    for cell in cells:
        if cell.get("cell_type") == "markdown":
            text = COLAB_LINK.sub(link, _source(cell))
            if text != _source(cell):
                cell["source"] = text
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
        "<!-- Generated by `make colab-sync` from _config.yml's `repository`; edit that, "
        "not this block. -->",
        "",
        f"Read the book online at **<{repo.book_url}>** (or offline, as one PDF: "
        f"<{repo.book_url}book.pdf>), or run any chapter in Google Colab:",
        "",
        "| Chapter | Run it |",
        "|---------|--------|",
    ]
    for notebook, title in chapters:
        badge = f"[![Open In Colab]({BADGE})]({repo.colab_url(notebook)})"
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


def dump_notebook(nb: dict[str, Any]) -> str:
    """``nb`` as nbformat's own writer saves it (as nbclient/nbconvert do), newline-terminated.

    So a rewritten notebook differs from the original only where its content changed.
    """
    return nbformat.writes(nbformat.from_dict(nb)) + "\n"


def sync(root: Path, check: bool) -> list[str]:
    """Sync every notebook under ``root/book`` and ``root/README.md``; return what differed.

    With ``check`` nothing is written.
    """
    repo = load_repository(root / "_config.yml")
    changed: list[str] = []
    chapters: list[tuple[str, str]] = []
    for path in sorted((root / "book").glob("*.ipynb")):
        rel = path.relative_to(root).as_posix()
        nb = json.loads(path.read_text(encoding="utf-8"))
        synced = sync_notebook(nb, repo, rel)
        chapters.append((rel, notebook_title(synced, path.stem)))
        if synced != nb:
            changed.append(rel)
            if not check:
                atomic_write_text(path, dump_notebook(synced))
    readme = root / "README.md"
    text = readme.read_text(encoding="utf-8")
    new = sync_readme(text, readme_block(repo, chapters))
    if new != text:
        changed.append("README.md")
        if not check:
            atomic_write_text(readme, new)
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="report differences, write nothing")
    parser.add_argument("--root", type=Path, default=ROOT, help="the book's root folder")
    args = parser.parse_args(argv)
    changed = sync(args.root, args.check)
    verb = "out of sync with _config.yml" if args.check else "rewritten from _config.yml"
    for name in changed:
        print(f"{name}: {verb}")
    if args.check and changed:
        print("Run `make colab-sync` to update them.", file=sys.stderr)
        return 1
    if not changed:
        print("Colab install cells, links and README badges match _config.yml.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
