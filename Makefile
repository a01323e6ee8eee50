# Two commands do all set-up on a fresh machine:
#   make book   -> npm (apt-get if missing), .venv, install, offline JS, the HTML book in _build/html
#   make test   -> chromium and npm (apt-get if missing; else it stops at once saying what to
#                  install), .venv, install, lint, unit tests, nbval over book/, the book build,
#                  and the browser test of the built book (headless Chromium, offline)
#   make colab-test -> every chapter as Colab runs it (tools/colab_emulate.py); .ci/run runs it
#   make pdf    -> the book as one PDF, _build/pdf/book.pdf, and the Chinese edition's,
#                  _build/pdf/book-zh.pdf (tools/book_pdf.py), then their test
SHELL := /bin/bash
# Some machines set PYTHONDONTWRITEBYTECODE=1 (this project's do): every pytest process, xdist
# worker, notebook kernel and spawned run would then compile companion/ and rewrite the tests'
# asserts from source again (about 6 of the 20 s it takes to collect the tests). The caches go
# to __pycache__/, which git ignores; the code digests hash only *.py.
unexport PYTHONDONTWRITEBYTECODE
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Torch for this project's own machines (see .ci/torch-cpu.txt); override on others, e.g.
#   make test TORCH_REQUIREMENTS=   (keep whatever torch the venv has / let pip choose)
TORCH_REQUIREMENTS ?= .ci/torch-cpu.txt
STAMP := $(VENV)/.installed
JB_FLAGS := -W -n --keep-going
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
# MathJax, copied from node_modules for the book to serve itself (html_extra_path in
# _config.yml): the built book needs no CDN.
NODE_STAMP := node_modules/.package-lock.json
OFFLINE_STAMP := _build/offline.stamp
STATIC_STAMP := _build/static.stamp

.PHONY: setup test unit slow nbval lint book book-check browser-test notebooks clean \
	offline-js colab-sync colab-check colab-test linkcheck system-deps browser-deps node-deps pdf

$(STAMP): pyproject.toml $(TORCH_REQUIREMENTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_REQUIREMENTS),$(PY) -m pip install --quiet -r $(TORCH_REQUIREMENTS))
	$(PY) -m pip install --quiet -e '.[test,book]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	touch $@

setup: $(STAMP)

# The system tools come first, so a machine that lacks one fails in a second, not after nbval.
test: browser-deps node-deps setup lint unit slow nbval book-check browser-test

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy companion

# `make unit`: every test that takes seconds (run it after each change); `make slow`: the few
# marked slow (a wheel install, torchrun, whole training runs, a notebook kernel). `make test`
# runs both. Each says what it runs and prints its duration and its five slowest tests.
# `make unit` and `make nbval` spread their tests over every core (pytest-xdist; a chapter stays
# in one kernel: --dist loadfile); the slow tests start processes of their own and run one by one.
UNIT_MARKS := not browser and not slow
XDIST := -n auto
# One torch (OpenMP) thread per xdist worker and per notebook kernel: with torch's default (every
# core) in each of them, the workers fight over the cores and a second's computation takes many.
ONE_THREAD := OMP_NUM_THREADS=1

unit: setup
	@echo "unit: pytest tests -m '$(UNIT_MARKS)'"
	@start=$$(date +%s); $(ONE_THREAD) $(PY) -m pytest tests -q -p no:cacheprovider -m "$(UNIT_MARKS)" \
		$(XDIST) --durations=5; status=$$?; echo "unit: $$(( $$(date +%s) - start )) s"; exit $$status

# Only the files that mark a test slow are collected (importing every test module costs about
# 7 s); tests/conftest.py stops any run that finds a slow test marked in a way this misses.
SLOW_FILES = $(filter-out tests/conftest.py,$(shell grep -l "pytest.mark.slow" tests/*.py))
slow: setup
	@echo "slow: pytest $(SLOW_FILES) -m 'slow and not browser'"
	@start=$$(date +%s); $(PY) -m pytest $(SLOW_FILES) -q -p no:cacheprovider -m "slow and not browser" \
		--durations=5; status=$$?; echo "slow: $$(( $$(date +%s) - start )) s"; exit $$status

nbval: setup
	$(ONE_THREAD) $(PY) -m pytest -q --nbval --nbval-current-env $(XDIST) --dist loadfile \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider book

$(NODE_STAMP): package.json package-lock.json | node-deps
	npm ci --ignore-scripts --no-audit --no-fund

$(OFFLINE_STAMP): $(NODE_STAMP) tools/vendor_js.py | setup
	$(PY) tools/vendor_js.py
	touch $@

offline-js: $(OFFLINE_STAMP)

# Sphinx skips a build whose sources are unchanged, and with it the copy of _static/: a change
# there alone (book.css, toc-highlight.js) starts the HTML over, or the old files would stay.
$(STATIC_STAMP): $(wildcard _static/*)
	rm -rf _build/html _build/zh
	mkdir -p _build && touch $@

# The build renders the committed outputs (_config.yml: execute_notebooks: off); nbval is what
# proves them reproduced, so `make test` runs every chapter once, not twice.
# Both editions: the English book in _build/html, the Chinese edition (zh/, its notebooks generated
# by tools/zh_edition.py from the English ones) built beside it and served under _build/html/zh/.
book: node-deps setup $(OFFLINE_STAMP) $(STATIC_STAMP)
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	$(VENV)/bin/jupyter-book build zh --path-output _build/zh $(JB_FLAGS)
	rm -rf _build/html/zh && cp -r _build/zh/_build/html _build/html/zh
	@echo "Book built: _build/html/index.html (Chinese edition: _build/html/zh/index.html)"

book-check: book

# Every page of _build/html in headless Chromium, served on 127.0.0.1, no other host reachable;
# screenshots go to _build/screenshots/. To re-test an existing build without rebuilding:
#   .venv/bin/python -m pytest tests/browser
# Each test file runs in one worker (--dist loadfile), with its own Chromium and server.
browser-test: browser-deps book
	$(PY) -m pytest -q -p no:cacheprovider $(XDIST) --dist loadfile tests/browser

# The book as one PDF: Sphinx's single-page HTML build of the same sources (committed outputs,
# MathJax served locally), printed by headless Chromium once MathJax has typeset every formula
# (tools/book_pdf.py, its layout in tools/pdf_layout.py): a title page (edition, build date,
# where the online book and the code live), contents with page numbers (a first print places the
# headings, a second prints their pages), bookmarks by chapter and section, every fold printed
# open (a solution under its "Solution N" title), links that work offline, each chapter on a new
# page, each figure on the page where its code ends; tagged for screen readers (Chromium's
# structure tree: headings, paragraphs, lists, tables, links, figures with their alt text; /Lang
# en or zh-CN). The Chinese edition likewise, from zh/ (built in _build/zh-pdf):
# _build/pdf/book-zh.pdf, its front matter in Chinese ("目录", "关于本书", solutions under "解答 N"), its Chinese text set
# in Debian's fonts-wqy-microhei (apt-get if missing, like chromium), which the PDF embeds.
# Then tests/pdf reads both back (tools/pdf_pages.py, pypdf): the title page, the contents'
# numbers against where each chapter and section starts, the bookmarks, no link to the local
# server, no on-screen control, every solution, each figure on its code's last page, no page under
# half full but before a chapter or a figure that cannot fit, no text under 8.5 pt but formulas,
# every figure, formulas drawn as math, every font embedded, the tags (structure tree, /MarkInfo,
# /Lang, the title, headings, figures' alt text); in the Chinese PDF, its Chinese text in the
# embedded CJK font and read back as written. Not part of `make test`: .ci/run and the Pages
# workflow run it.
cjk-font-deps:
	@bash tools/system_deps.sh fonts-wqy-microhei

.PHONY: cjk-font-deps
pdf: browser-deps node-deps cjk-font-deps setup $(OFFLINE_STAMP)
	$(VENV)/bin/jupyter-book build . --builder singlehtml $(JB_FLAGS)
	$(PY) tools/book_pdf.py --html _build/singlehtml --out _build/pdf/book.pdf
	$(VENV)/bin/jupyter-book build zh --builder singlehtml --path-output _build/zh-pdf $(JB_FLAGS)
	$(PY) tools/book_pdf.py --html _build/zh-pdf/_build/singlehtml --out _build/pdf/book-zh.pdf \
		--lang zh
	$(PY) -m pytest -q -p no:cacheprovider tests/pdf

# Every chapter as Colab runs it: a venv with Colab's Python, torch, torchvision, numpy, matplotlib,
# ipywidgets (and ipython, timm, anywidget) (_build/colab-venv-RUNTIME, made once), the install
# cell run as written (it pins the release, @v<version>) against a local stand-in for the
# repository (this working tree, tagged as that release), each chapter executed outside the
# repository with no network. Fails on any error output or a changed Colab package;
# _build/colab/drift.txt lists outputs that differ from the committed ones.
# COLAB_RUNTIME=current (default: Colab's runtime as a new notebook gets it) or 2026.07 (the
# previous one, which Colab still offers pinned); tools/colab_emulate.py lists their versions.
COLAB_RUNTIME ?= current
colab-test: setup
	$(PY) tools/colab_emulate.py --runtime $(COLAB_RUNTIME)

# Colab install cells, Colab links and README badges from _config.yml's `repository`.
colab-sync: setup
	$(PY) tools/colab_sync.py

colab-check: setup
	$(PY) tools/colab_sync.py --check

# Checks every external link of the book; needs the internet, so it is not part of `make test`.
linkcheck: setup $(OFFLINE_STAMP)
	$(VENV)/bin/jupyter-book build . --builder linkcheck

# Debian's chromium (the browser test) and npm (offline JS) when missing: apt-get as root, else
# one line saying what to install (tools/system_deps.sh).
browser-deps:
	@bash tools/system_deps.sh chromium

node-deps:
	@bash tools/system_deps.sh npm

system-deps: browser-deps node-deps cjk-font-deps

# Re-execute every chapter in place (after changing companion/ or a notebook).
notebooks: setup
	for nb in $(NOTEBOOKS); do \
		$(VENV)/bin/jupyter-execute --inplace "$$nb" || exit 1; \
	done

clean:
	rm -rf _build .pytest_cache .hypothesis
