# Two commands do all set-up on a fresh machine:
#   make book   -> .venv, install, offline JS (npm), build the HTML book into _build/html
#   make test   -> .venv, install, lint, unit tests, nbval over book/, book build, and the
#                  browser test of the built book (headless Chromium, offline)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
# Torch for this project's own machines (see .ci/torch-cpu.txt); override on others, e.g.
#   make test TORCH_REQUIREMENTS=   (keep whatever torch the venv has / let pip choose)
TORCH_REQUIREMENTS ?= .ci/torch-cpu.txt
STAMP := $(VENV)/.installed
JB_FLAGS := -W -n --keep-going
NOTEBOOKS := $(sort $(wildcard book/*.ipynb))
# MathJax, RequireJS and the ipywidgets HTML manager, copied from node_modules for the book to
# serve itself (html_extra_path in _config.yml): the built book needs no CDN.
NODE_STAMP := node_modules/.package-lock.json
OFFLINE_STAMP := _build/offline.stamp

.PHONY: setup test unit nbval lint book book-check browser-test notebooks clean \
	offline-js colab-sync colab-check linkcheck system-deps

$(STAMP): pyproject.toml $(TORCH_REQUIREMENTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_REQUIREMENTS),$(PY) -m pip install --quiet -r $(TORCH_REQUIREMENTS))
	$(PY) -m pip install --quiet -e '.[test,book]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	touch $@

setup: $(STAMP)

test: setup lint unit nbval book-check browser-test

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

unit: setup
	$(PY) -m pytest tests -q -p no:cacheprovider -m "not browser"

nbval: setup
	$(PY) -m pytest -q --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider book

$(NODE_STAMP): package.json package-lock.json
	npm ci --ignore-scripts --no-audit --no-fund

$(OFFLINE_STAMP): $(NODE_STAMP) tools/vendor_js.py tools/widgets-setup.js | setup
	$(PY) tools/vendor_js.py
	touch $@

offline-js: $(OFFLINE_STAMP)

book: setup $(OFFLINE_STAMP)
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	@echo "Book built: _build/html/index.html"

book-check: book

# Every page of _build/html in headless Chromium, served on 127.0.0.1, no other host reachable;
# screenshots go to _build/screenshots/. To re-test an existing build without rebuilding:
#   .venv/bin/python -m pytest tests/browser
browser-test: book
	$(PY) -m pytest -q -p no:cacheprovider tests/browser

# Colab install cells, Colab links and README badges from _config.yml's `repository`.
colab-sync: setup
	$(PY) tools/colab_sync.py

colab-check: setup
	$(PY) tools/colab_sync.py --check

# Checks every external link of the book; needs the internet, so it is not part of `make test`.
linkcheck: setup $(OFFLINE_STAMP)
	$(VENV)/bin/jupyter-book build . --builder linkcheck

# Debian's chromium (the browser test) and npm (offline JS), when missing; needs root (CI).
SYSTEM_DEPS ?= chromium npm
system-deps:
	@need=""; \
	for tool in $(SYSTEM_DEPS); do command -v $$tool >/dev/null || need="$$need $$tool"; done; \
	if [ -n "$$need" ]; then \
		apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $$need; \
	fi

# Re-execute every chapter in place (after changing companion/ or a notebook).
notebooks: setup
	for nb in $(NOTEBOOKS); do \
		$(VENV)/bin/jupyter-execute --inplace "$$nb" || exit 1; \
	done

clean:
	rm -rf _build .pytest_cache .hypothesis
