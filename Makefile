# Two commands: `make book` builds the site (executing every notebook); `make test` runs every test.
# Both create .venv on first use. `book` is also a folder name, hence .PHONY.
.PHONY: book test setup sync student slides bench clean

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
BUILD := _build
# No hub access at build or test time: the model comes from a PyPI wheel.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export PYTHONHASHSEED := 0

setup: $(STAMP) book/vendor/.stamp

$(STAMP): requirements.txt requirements-nodeps.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	touch $(STAMP)

book/vendor/.stamp: $(STAMP) tools/vendor_assets.py
	$(PY) tools/vendor_assets.py

sync: setup
	$(PY) tools/sync_notebooks.py

book: setup
	$(PY) tools/sync_notebooks.py --check
	rm -rf $(BUILD)/html $(BUILD)/jupyter_execute
	$(VENV)/bin/jupyter-book build . --path-output . -W -n --keep-going
	$(PY) tools/make_slides.py $(BUILD)/html/slides

# Slides again from the last build's executed notebooks (after editing slide metadata).
slides:
	$(PY) tools/make_slides.py $(BUILD)/html/slides

student: setup
	$(PY) tools/make_student.py student

bench: setup
	$(PY) tools/bench.py

test: book
	$(PY) -m pytest tests

clean:
	rm -rf $(BUILD) student book/vendor
