"""Run every chapter as Google Colab runs it, offline, and fail on any error output.

What "as Colab runs it" means here:

- a separate venv (``_build/colab-venv-RUNTIME``, made once) with one of Colab's runtimes
  (``RUNTIMES``): its Python where this machine has that minor version, its versions of the
  packages the install cell promises never to change (``keep``: torch, torchvision, numpy,
  matplotlib, ipywidgets; in the current runtime also ipython, timm and anywidget, which Colab now
  preinstalls), and what else Colab preinstalls that the chapters lean on (``others``); no
  companion. Where a listed version cannot be installed here, the nearest one stands in, and
  every run says so;
- a stub ``google.colab`` module imported at start-up, so each chapter's install cell runs;
- each install cell checked to name exactly the release of ``pyproject.toml``'s version, the tag
  ``v<version>`` (as ``make colab-sync`` writes it), then run as written: the repository's URL is
  redirected (``git config url.<local>.insteadOf <url>`` in a temporary HOME) to a local
  repository where that tag resolves, as it does on GitHub once the release exists. The tag there
  is this clone's own ``v<version>`` when it has one (the released code, which a reader of these
  notebooks gets), else this working tree (tracked files, as they are): the release CI will tag
  when this version first passes on ``main``. The configured branch holds this working tree;
- every chapter executed from a folder outside the repository, in a fresh kernel, with the
  network cut (a new network namespace where ``unshare`` can make one; else pip told ``--no-index``
  and every proxy pointed at a closed port). pip finds the few wheels the install cell needs
  beyond Colab's (the build backend, timm where Colab lacks it) in a wheelhouse filled during
  set-up.

Pass: every install cell names the release's tag, no error output in any chapter, and every
package of the venv at the version it had before (the install cells only add). Outputs that differ
from the committed ones (other torch, other numbers) are listed in ``_build/colab/drift.txt`` for a
reader to judge: they are not failures.

Usage: ``python tools/colab_emulate.py [--runtime current|2026.07] [--venv DIR] [--out DIR]
[NOTEBOOK ...]`` (``make colab-test [COLAB_RUNTIME=2026.07]`` runs every chapter; name
notebooks to run only those), with the project's venv (it reads ``_config.yml`` and the release
through ``colab_sync``).
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from colab_sync import (  # noqa: E402 (tools/ is not a package)
    PACKAGE,
    Repository,
    extra_for,
    load_repository,
)


@dataclass(frozen=True)
class Runtime:
    """One of Colab's runtime versions: its Python and the preinstalled packages the chapters use.

    ``keep`` holds the packages whose versions are checked before and after (the install cells
    pin them); ``others`` what else Colab preinstalls that the chapters, the companion's or timm's
    dependencies, or the notebook runner need, at whatever version pip picks beside ``keep``.
    """

    name: str
    python: str
    python_release: str
    keep: dict[str, str]
    others: tuple[str, ...]
    published: str


_OTHERS = (
    "scipy",  # the companion's statistics (companion.experiments.stats)
    "ipykernel",
    "nbclient",
    "nbformat",
    "tqdm",
    "pygments",
    "pyyaml",
    "requests",
    "huggingface-hub",
    "safetensors",
)
#: Colab's runtimes, from its published list (googlecolab/backend-info); ``current`` is the one a
#: new notebook gets, 2026.07 the previous one, which Colab still offers as a pinned version.
RUNTIMES = {
    "current": Runtime(
        name="current (2026.08)",
        python="3.13",
        python_release="3.13.15",
        keep={
            "torch": "2.11.0",
            "torchvision": "0.26.0",
            "numpy": "2.1.3",
            "matplotlib": "3.10.0",
            "ipywidgets": "7.7.1",
            "ipython": "7.34.0",
            "timm": "1.0.28",
            "anywidget": "0.9.21",
        },
        # Colab's ipykernel (6.x) is the one its IPython 7.34 works with.
        others=(*_OTHERS, "ipykernel>=6.17,<7"),
        published="googlecolab/backend-info, 2026-08-19",
    ),
    "2026.07": Runtime(
        name="2026.07 (previous)",
        python="3.12",
        python_release="3.12.11",
        keep={
            "torch": "2.11.0",
            "torchvision": "0.26.0",
            "numpy": "2.0.2",
            "matplotlib": "3.10.0",
            "ipywidgets": "7.7.1",
        },
        others=_OTHERS,
        published="googlecolab/backend-info, 2026-07",
    ),
}
#: What the install cell may fetch beyond Colab's packages: the build backend, and timm where the
#: runtime does not preinstall it (chapter 4's extra).
WHEELHOUSE = ("setuptools>=77", "wheel", "timm>=1.0.9,<1.1")
TIMEOUT_S = 900  # per cell


def colab_python(version: str) -> tuple[str, str]:
    """The newest Python ``version``.x this machine has, and a note when it has none and the
    Python running this script stands in."""
    found = []
    for candidate in [
        shutil.which(f"python{version}"),
        *glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python3")),
    ]:
        if candidate is None:
            continue
        done = subprocess.run(
            [candidate, "-c", "import venv, sys; print(sys.version.split()[0])"],
            capture_output=True,
            text=True,
        )
        if done.returncode == 0:
            found.append((tuple(int(p) for p in done.stdout.strip().split(".")), candidate))
    if found:
        return max(found)[1], ""
    here = sys.version.split()[0]
    return sys.executable, f"no Python {version} on this machine: Python {here} stands in"


def venv_spec(runtime: Runtime) -> str:
    """What the venv was made from; a venv made from another spec is made again."""
    return json.dumps(
        {
            "python": runtime.python,
            "keep": runtime.keep,
            "others": runtime.others,
            "wheels": WHEELHOUSE,
        }
    )


def pip(venv: Path, *args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "python"), "-m", "pip", *args], check=True, **kwargs)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:3])


def nearest(version: str, versions: list[str]) -> str:
    """``version`` if it is among ``versions``, else the nearest of them: preferably one with the
    same major.minor, then the one whose (major, minor, micro) differ least, in that order."""
    if version in versions or not versions:
        return version
    want = _version_key(version)
    same_minor = [v for v in versions if _version_key(v)[:2] == want[:2]]

    def distance(v: str) -> tuple[int, ...]:
        return tuple(abs(a - b) for a, b in zip(_version_key(v), want, strict=False))

    return min(same_minor or versions, key=distance)


def nearest_available(venv: Path, name: str, version: str) -> str:
    """``version`` if pip can install it into ``venv`` (its Python, its platform), else the
    nearest release it can (:func:`nearest`)."""
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "index", "versions", name],
        capture_output=True,
        text=True,
    ).stdout
    found = re.search(r"Available versions: (.*)", listed)
    return nearest(version, [v.strip() for v in found.group(1).split(",")] if found else [])


def make_venv(venv: Path, runtime: Runtime) -> None:
    """Create ``venv`` with the runtime's packages and a wheelhouse, unless it already matches;
    ``venv/colab-versions.json`` records the versions used and why any differs from Colab's."""
    stamp = venv / "colab-spec.json"
    if stamp.is_file() and stamp.read_text() == venv_spec(runtime):
        return
    shutil.rmtree(venv, ignore_errors=True)
    python, python_note = colab_python(runtime.python)
    print(f"Making the Colab venv in {venv} with {python} (once; torch alone is ~3 GB)...")
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    pip(venv, "install", "--quiet", "--upgrade", "pip")
    used, notes = {}, [python_note] if python_note else []
    for name, version in runtime.keep.items():
        used[name] = nearest_available(venv, name, version)
        if used[name] != version:
            notes.append(f"{name} {version} cannot be installed here: {used[name]} stands in")
    pins = [f"{name}=={version}" for name, version in used.items()]
    pip(venv, "install", "--quiet", *pins, *runtime.others)
    pip(venv, "download", "--quiet", "--no-deps", "--dest", str(venv / "wheelhouse"), *WHEELHOUSE)
    # google.colab: a stub package, imported at every start as Colab's kernel imports the real one.
    stub = venv / "colab-stub" / "google" / "colab"
    stub.mkdir(parents=True)
    (stub / "__init__.py").write_text(
        '"""Stand-in for Colab\'s google.colab (tools/colab_emulate.py)."""\n'
    )
    site = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_path('purelib'))",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    (Path(site) / "colab_stub.pth").write_text(f"{venv / 'colab-stub'}\nimport google.colab\n")
    (venv / "colab-versions.json").write_text(json.dumps({"versions": used, "notes": notes}))
    stamp.write_text(venv_spec(runtime))


def installed_versions(venv: Path) -> dict[str, str]:
    listed = pip(venv, "list", "--format=json", capture_output=True, text=True).stdout
    return {re.sub(r"[-_.]+", "-", p["name"]).lower(): p["version"] for p in json.loads(listed)}


def _git(*args: str, **kwargs) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, **kwargs
    ).stdout.strip()


def _commit_of(root: Path, ref: str) -> str | None:
    """The commit ``ref`` names in the repository at ``root``, or None."""
    found = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--quiet", "--verify", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    return found.stdout.strip() if found.returncode == 0 else None


def _import_tree(root: Path, commit: str, mirror: Path, ref: str, scratch: Path) -> None:
    """Make ``ref`` of ``mirror`` a one-commit history holding ``commit``'s files.

    The files travel through ``git archive``, not a push: a shallow clone (CI's checkout) cannot
    push its commits into an empty repository, and a clone of a shallow one is fragile.
    """
    files = Path(tempfile.mkdtemp(prefix="tree-", dir=scratch))
    archive = subprocess.run(
        ["git", "-C", str(root), "archive", "--format=tar", commit], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(files)], input=archive, check=True)
    env = {
        **os.environ,
        "GIT_INDEX_FILE": str(files.with_suffix(".index")),
        "GIT_AUTHOR_NAME": "colab-emulate",
        "GIT_AUTHOR_EMAIL": "colab-emulate@localhost",
        "GIT_COMMITTER_NAME": "colab-emulate",
        "GIT_COMMITTER_EMAIL": "colab-emulate@localhost",
    }
    git = ["--git-dir", str(mirror), "--work-tree", str(files)]
    _git(*git, "add", "--all", "--force", env=env)
    tree = _git(*git, "write-tree", env=env)
    made = _git(
        "--git-dir", str(mirror), "commit-tree", "--no-gpg-sign", tree, "-m", f"{commit}", env=env
    )
    _git("--git-dir", str(mirror), "update-ref", ref, made)
    shutil.rmtree(files)


def snapshot_repository(scratch: Path, root: Path = ROOT) -> tuple[Path, str]:
    """A bare repository standing in for GitHub's: its configured branch holds this working tree
    (tracked files, as they are) and the tag ``v<version>`` the release the install cells name.

    The tag holds the commit ``root``'s clone tags ``v<version>`` when it has that tag (what
    Colab's pip gets from GitHub), else this working tree (what the release workflow will tag).
    Returns the repository and a line saying which.
    """
    repo = load_repository(root / "_config.yml")
    commit = _git("-C", str(root), "stash", "create") or _git("-C", str(root), "rev-parse", "HEAD")
    mirror = scratch / "repository.git"
    _git("init", "--quiet", "--bare", str(mirror))
    _import_tree(root, commit, mirror, f"refs/heads/{repo.branch}", scratch)
    _git("--git-dir", str(mirror), "symbolic-ref", "HEAD", f"refs/heads/{repo.branch}")
    tagged = _commit_of(root, f"refs/tags/{repo.tag}")
    if tagged is None:
        _git(
            "--git-dir",
            str(mirror),
            "update-ref",
            f"refs/tags/{repo.tag}",
            f"refs/heads/{repo.branch}",
        )
        return mirror, (
            f"{repo.tag} is not tagged yet: it stands at this working tree, as the release "
            "workflow will tag it"
        )
    _import_tree(root, tagged, mirror, f"refs/tags/{repo.tag}", scratch)
    note = f"{repo.tag} is tagged at {tagged[:12]}: the install cells install that release"
    if _git("-C", str(root), "rev-parse", f"{tagged}^{{tree}}") != _git(
        "-C", str(root), "rev-parse", f"{commit}^{{tree}}"
    ):
        note += (
            "; this working tree differs from it, and reaches Colab's readers only in a new "
            "release (raise the version in pyproject.toml)"
        )
    return mirror, note


def pin_failures(notebooks: list[Path], repo: Repository) -> list[str]:
    """Each notebook whose install cell does not install exactly the release ``repo.tag`` (the
    requirement ``make colab-sync`` writes for it), one line each."""
    failures = []
    for path in notebooks:
        nb = json.loads(path.read_text(encoding="utf-8"))
        first = _source(nb["cells"][0]) if nb.get("cells") else ""
        found = re.search(r'^REQUIREMENT = "([^"]*)"$', first, re.M)
        wanted = repo.requirement(extra_for(path.name))
        if found is None or found[1] != wanted:
            named = found[1] if found else "no REQUIREMENT"
            failures.append(
                f"{path.name}: its install cell names {named!r}, not the release {wanted!r} "
                "(run `make colab-sync`)"
            )
    return failures


def offline_env(venv: Path, scratch: Path, mirror: Path, root: Path = ROOT) -> dict[str, str]:
    """The environment of the kernels: no repository on the path, no index, the URL redirected."""
    repo = load_repository(root / "_config.yml")
    home = scratch / "home"
    home.mkdir()
    gitconfig = home / ".gitconfig"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "PYTHON", "GIT_", "VIRTUAL_ENV", "JUPYTER", "MPL"))
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(gitconfig),
        GIT_CONFIG_NOSYSTEM="1",
        PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}",
        PIP_CONFIG_FILE=os.devnull,
        PIP_NO_INDEX="1",
        PIP_FIND_LINKS=str(venv / "wheelhouse"),
        PIP_DISABLE_PIP_VERSION_CHECK="1",
        PIP_NO_CACHE_DIR="1",
        # Where no network namespace can be made, anything that honours a proxy goes nowhere.
        HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9",
        http_proxy="http://127.0.0.1:9",
        https_proxy="http://127.0.0.1:9",
        NO_PROXY="127.0.0.1,localhost",
        HF_HUB_OFFLINE="1",
    )
    subprocess.run(
        ["git", "config", "--global", f"url.{mirror.as_uri()}.insteadOf", repo.url],
        env=env,
        check=True,
    )
    return env


def netns_prefix() -> list[str]:
    """``unshare`` into a new network namespace with only loopback up, where that is allowed."""
    if not (shutil.which("unshare") and shutil.which("ip")):
        return []
    for unshare in (["unshare", "--net"], ["unshare", "--net", "--map-root-user"]):
        probe = [*unshare, "sh", "-c", "ip link set lo up"]
        if subprocess.run(probe, capture_output=True).returncode == 0:
            return [*unshare, "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
    return []


#: Runs inside the Colab venv: execute one notebook in place, keep going past errors.
RUNNER = """
import sys, nbformat
from nbclient import NotebookClient
path, timeout = sys.argv[1], int(sys.argv[2])
nb = nbformat.read(path, as_version=4)
NotebookClient(nb, timeout=timeout, allow_errors=True, kernel_name="python3").execute()
nbformat.write(nb, path)
"""


def _text(output: dict) -> str:
    if output.get("output_type") == "stream":
        text = output.get("text", "")
    else:
        text = output.get("data", {}).get("text/plain", "")
    return "".join(text) if isinstance(text, list) else text


def _source(cell: dict) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else source


def errors_of(nb: dict) -> list[str]:
    """``cell N (first line): EName: value`` for every error output."""
    found = []
    for i, cell in enumerate(nb["cells"]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                first = _source(cell).splitlines()[0] if _source(cell) else ""
                found.append(
                    f"cell {i} ({first[:60]}): {output['ename']}: {output['evalue'][:200]}"
                )
    return found


def _compared(outputs: list[dict]) -> str:
    # A figure's text is its repr (`<Figure size 616.994x278 ...>`), not what a reader sees.
    return "".join(_text(o) for o in outputs if "image/png" not in o.get("data", {}))


def drift_of(committed: dict, ran: dict) -> list[str]:
    """Text outputs that differ from the committed ones, outside cells declared as varying
    (``nbval-ignore-output``); figures are not compared."""
    found = []
    for i, (old, new) in enumerate(zip(committed["cells"], ran["cells"], strict=False)):
        tags = old.get("metadata", {}).get("tags", [])
        if old.get("cell_type") != "code" or "nbval-ignore-output" in tags:
            continue
        before, after = _compared(old.get("outputs", [])), _compared(new.get("outputs", []))
        if before != after:
            lines = [
                (a, b)
                for a, b in zip(before.splitlines(), after.splitlines(), strict=False)
                if a != b
            ]
            shown = lines[:3] or [(before[-120:], after[-120:])]
            first = _source(old).splitlines()[0] if _source(old) else ""
            found.append(f"  cell {i} ({first[:70]}):")
            for a, b in shown:
                found.append(f"    committed: {a[:110]}\n    colab    : {b[:110]}")
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--runtime",
        choices=sorted(RUNTIMES),
        default="current",
        help="Colab's runtime version to emulate (default: current)",
    )
    parser.add_argument("--venv", type=Path, help="default: _build/colab-venv-RUNTIME")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "colab")
    parser.add_argument("notebooks", nargs="*", type=Path)
    args = parser.parse_args(argv)
    runtime = RUNTIMES[args.runtime]
    notebooks = args.notebooks or sorted((ROOT / "book").glob("*.ipynb"))
    venv = (args.venv or ROOT / "_build" / f"colab-venv-{args.runtime}").resolve()
    start = time.perf_counter()
    # The install line is the one a reader runs: it must name this release's tag, nothing else.
    repo = load_repository(ROOT / "_config.yml")
    unpinned = pin_failures(notebooks, repo)
    if unpinned:
        for failure in unpinned:
            print("FAILED", failure, file=sys.stderr)
        return 1
    make_venv(venv, runtime)
    record = json.loads((venv / "colab-versions.json").read_text())
    used: dict[str, str] = record["versions"]
    python = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    print(f"Colab runtime {runtime.name} ({runtime.published}): Python {python}, ", end="")
    print(", ".join(f"{name} {version}" for name, version in used.items()))
    notes = [n for n in record["notes"] if not n.startswith("no Python")]
    if python != runtime.python_release:
        notes.insert(0, f"Python {runtime.python_release} is not here: {python} stands in")
    for note in notes:
        print(f"  nearest available: {note}")
    # Start from Colab's state: the companion is not preinstalled, nor timm where Colab lacks it.
    for name in (PACKAGE, *(() if "timm" in runtime.keep else ("timm",))):
        pip(venv, "uninstall", "--quiet", "--yes", name, capture_output=True)
    before = installed_versions(venv)
    not_colab = {n: before.get(n) for n in used if not (before.get(n) or "").startswith(used[n])}
    if not_colab:
        print(f"The Colab venv does not hold Colab's versions: {not_colab}", file=sys.stderr)
        return 1
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    failures, drift = [], []
    with tempfile.TemporaryDirectory(prefix="colab-") as tmp:
        scratch = Path(tmp)
        mirror, release = snapshot_repository(scratch)
        env = offline_env(venv, scratch, mirror)
        print(f"Release: the install cells install {repo.requirement()}; {release}")
        work = scratch / "content"  # Colab's working folder; outside the repository
        work.mkdir()
        prefix = netns_prefix()
        cut = "cut (own network namespace)" if prefix else "proxies closed, pip --no-index"
        print(f"Network: {cut}")
        for path in notebooks:
            copy = work / path.name
            shutil.copyfile(path, copy)
            tick = time.perf_counter()
            runner = [str(venv / "bin" / "python"), "-c", RUNNER, str(copy), str(TIMEOUT_S)]
            done = subprocess.run(
                [*prefix, *runner], cwd=work, env=env, capture_output=True, text=True
            )
            if done.returncode != 0:
                failures.append(f"{path.name}: the runner failed: {done.stderr.strip()[-800:]}")
                continue
            ran = json.loads(copy.read_text(encoding="utf-8"))
            shutil.copyfile(copy, out / path.name)
            errors = errors_of(ran)
            failures += [f"{path.name}: {e}" for e in errors]
            differ = drift_of(json.loads(path.read_text(encoding="utf-8")), ran)
            if differ:
                drift += [f"{path.name}:", *differ]
            differing = sum(1 for line in differ if line.startswith("  cell"))
            print(
                f"{path.name}: {len(errors)} error outputs, {differing} outputs differ from the "
                f"committed ones ({time.perf_counter() - tick:.0f} s)"
            )
    after = installed_versions(venv)
    # Nothing Colab preinstalls may change (torch, numpy, timm...): the install cells only add.
    for name, version in sorted(before.items()):
        if after.get(name) != version:
            failures.append(f"the install cells changed {name}: {version} -> {after.get(name)}")
    if after.get(PACKAGE) is None:
        failures.append(f"no install cell installed {PACKAGE}")
    (out / "drift.txt").write_text("\n".join(drift) + "\n", encoding="utf-8")
    print(f"Outputs that differ under Colab's versions: {out / 'drift.txt'}")
    print(f"Colab emulation ({runtime.name}): {time.perf_counter() - start:.0f} s")
    for failure in failures:
        print("FAILED", failure, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
