"""Copy the JavaScript the built book needs from ``node_modules`` into ``_build/offline``.

The book loads MathJax from its own ``_static/vendor`` folder instead of a CDN, so it renders
offline (and the browser test can forbid the network). It loads nothing else from npm: no page
renders a widget view (tqdm's bars are the only widgets the chapters make, and they are not
shown in the built book), so RequireJS and the ipywidgets HTML manager are not served, and
``_config.yml`` sets ``nb_ipywidgets_js`` to nothing; the browser test fails if a page ever
shows a widget view.
``_config.yml`` lists ``_build/offline`` in ``html_extra_path``; Sphinx copies it into the output
root, which puts these files at ``_build/html/_static/vendor/...``. Only the files a page loads are
copied (a few MB), not the 150 MB of ``node_modules``.

Usage: ``python tools/vendor_js.py [--node-modules node_modules] [--out _build/offline]``
(``make offline-js``; ``npm ci`` first).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: destination under ``_static/vendor`` -> source under ``node_modules``.
FILES = {
    # MathJax 3's all-in-one component; it loads its fonts relative to its own location.
    "mathjax/tex-mml-chtml.js": "mathjax/es5/tex-mml-chtml.js",
    "mathjax/output/chtml/fonts/woff-v2": "mathjax/es5/output/chtml/fonts/woff-v2",
}


def vendor(node_modules: Path, out: Path) -> list[Path]:
    """Replace ``out`` with fresh copies of ``FILES``; return the copied paths.

    Raises ``FileNotFoundError`` naming the missing source (run ``npm ci`` first).
    """
    missing = [src for src in FILES.values() if not (node_modules / src).exists()]
    if missing:
        raise FileNotFoundError(
            f"node_modules={node_modules} lacks {missing}; run `npm ci` in the repository root"
        )
    target = out / "_static" / "vendor"
    if out.exists():
        shutil.rmtree(out)  # no stale file from an older package version survives
    copied = []
    for dest, src in FILES.items():
        source, destination = node_modules / src, target / dest
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, destination)
        else:
            shutil.copy2(source, destination)
        copied.append(destination)
    return copied


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--node-modules", type=Path, default=ROOT / "node_modules")
    parser.add_argument("--out", type=Path, default=ROOT / "_build" / "offline")
    args = parser.parse_args(argv)
    copied = vendor(args.node_modules, args.out)
    size = sum(f.stat().st_size for p in copied for f in ([p] if p.is_file() else p.rglob("*")))
    print(f"{len(copied)} entries, {size / 1e6:.1f} MB -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
