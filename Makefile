# Two commands do all set-up on a fresh machine:
#   make book   -> .venv, install, build the HTML book into _build/html
#   make test   -> .venv, install, unit tests, nbval over book/, book build check
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

.PHONY: setup test unit nbval lint book book-check notebooks clean

$(STAMP): pyproject.toml $(TORCH_REQUIREMENTS)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(if $(TORCH_REQUIREMENTS),$(PY) -m pip install --quiet -r $(TORCH_REQUIREMENTS))
	$(PY) -m pip install --quiet -e '.[test,book]'
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3" >/dev/null
	touch $@

setup: $(STAMP)

test: setup lint unit nbval book-check

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

unit: setup
	$(PY) -m pytest tests -q

nbval: setup
	$(PY) -m pytest -q --nbval --nbval-current-env \
		--nbval-sanitize-with tests/nbval_sanitize.cfg -p no:cacheprovider book

book: setup
	$(VENV)/bin/jupyter-book build . $(JB_FLAGS)
	@echo "Book built: _build/html/index.html"

book-check: book

# Re-execute every chapter in place (after changing companion/ or a notebook).
notebooks: setup
	for nb in $(NOTEBOOKS); do \
		$(VENV)/bin/jupyter-execute --inplace "$$nb" || exit 1; \
	done

clean:
	rm -rf _build .pytest_cache .hypothesis
