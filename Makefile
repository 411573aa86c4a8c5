# `make book` builds the site (executing every notebook); `make test` runs every test;
# `make check` is the one-minute loop while editing (sync, lint, unit tests; no build).
# All create .venv on first use. `book` is also a folder name, hence .PHONY.
.PHONY: book book-no-solutions test check lint unit setup sync student assignments autograde slides pdf bench bench-rope determinism mutate portability clean

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# BOOK_BUILD_DIR moves the build (tools/paths.py reads it too); jupyter-book writes
# <parent>/_build, so the folder must be named _build.
BUILD := $(or $(BOOK_BUILD_DIR),_build)
ifneq ($(notdir $(abspath $(BUILD))),_build)
$(error BOOK_BUILD_DIR must be a folder named _build, got $(BUILD))
endif
# No hub access at build or test time: the model comes from a PyPI wheel.
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
export HF_HUB_DISABLE_TELEMETRY := 1
export PYTHONHASHSEED := 0
# Every kernel started from here (build, tests, bench) runs the build's IPython profile:
# plotly's HTML renderer and figure defaults that only the static site needs.
export IPYTHONDIR := $(CURDIR)/tools/ipython

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

lint: setup
	$(VENV)/bin/ruff check tools tests notebooks

unit: setup
	$(PY) -m pytest -m unit -q

# The one-minute loop: notebooks in sync, lint, unit tests of the chapter functions.
check: setup
	$(PY) tools/sync_notebooks.py --check
	$(VENV)/bin/ruff check tools tests notebooks
	$(PY) -m pytest -m unit -q

book: setup
	$(PY) tools/sync_notebooks.py --check
	rm -rf $(BUILD)/html $(BUILD)/jupyter_execute $(BUILD)/.jupyter_cache
	$(PY) tools/execute_notebooks.py $(BUILD)/.jupyter_cache
	$(VENV)/bin/jupyter-book build . --path-output $(abspath $(BUILD)/..) -W -n --keep-going
	$(PY) tools/execute_notebooks.py $(BUILD)/.jupyter_cache --export $(BUILD)/jupyter_execute/notebooks
	$(PY) tools/make_slides.py $(BUILD)/html/slides

# The student edition of the site, for a course that publishes the book before the
# answers: no solution anywhere (pages, downloads, search, slides), no instructor page,
# Colab badges opening colab/student/. Made from the last `make book`'s executed
# notebooks without executing them again (tools/make_student_site.py), then searched for
# any solution's text (tools/solution_leaks.py): _build/no-solutions/_build/html/.
book-no-solutions: setup
	test -d $(BUILD)/jupyter_execute/notebooks || $(MAKE) book
	$(PY) tools/make_student_site.py --executed $(BUILD)/jupyter_execute/notebooks --out $(BUILD)/no-solutions
	$(PY) tools/solution_leaks.py $(BUILD)/no-solutions --executed $(BUILD)/jupyter_execute/notebooks

# Slides again from the last build's executed notebooks (after editing slide metadata).
slides:
	$(PY) tools/make_slides.py $(BUILD)/html/slides

# The printable edition of the last build (built first if there is none): one PDF per
# chapter and book.pdf in $(BUILD)/html/pdf/ (the site links them), printed by Chromium,
# then checked.
pdf: setup
	test -f $(BUILD)/html/index.html || $(MAKE) book
	$(PY) tools/make_pdf.py --site $(BUILD)/html
	BOOK_PDF_ALL=1 BOOK_BUILD_DIR=$(abspath $(BUILD)) $(PY) -m pytest -q tests/test_pdf.py

student: setup
	$(PY) tools/make_student.py student

# Autograding with nbgrader (tools/autograde.py): `make assignments` writes the hand-out
# notebooks, one per chapter, into _build/assignments/release/NN_topic/ and grades the
# chapters' own solutions with them (full marks expected); `make autograde
# SUBMISSIONS=folder` grades folder/<student>/NN_topic.ipynb into folder/grades.csv
# (scores, each check's feedback, tampering), keeping the graded notebooks in
# _build/autograde/autograded/.
assignments: setup
	$(PY) tools/autograde.py assignments --out $(BUILD)/assignments --validate

autograde: setup
	@test -n "$(SUBMISSIONS)" || { echo "usage: make autograde SUBMISSIONS=folder"; exit 2; }
	$(PY) tools/autograde.py grade $(SUBMISSIONS) --course $(BUILD)/autograde

# Times a fresh `make test` (build included) and each notebook alone; prints a table.
bench: setup
	$(PY) tools/bench.py

# Chapter 11's RoPE implementations against the copy bound (the chapter's own code).
bench-rope: setup
	$(PY) tools/bench_rope.py

# Opt-in: run every notebook a second time, alone, and compare its printed output with the
# build's (every random draw is seeded). Needs a build (`make book`).
determinism: setup
	$(PY) tools/bench.py --determinism

# Do the tolerances hold on other CPUs? Every notebook standalone and the unit tests under
# numeric environments this machine can imitate (tools/portability.py --list);
# `make portability ENVS="sse42-1thread avx2-2threads"` runs a subset.
portability: setup
	$(PY) tools/portability.py $(foreach e,$(ENVS),--env $(e))

# Do the unit tests catch realistic bugs? One mutant at a time in a temporary copy.
mutate: setup
	$(PY) tools/mutate.py --sample 20

# The tests run in two processes (pytest-xdist), each taking whole test files, so a
# file's module fixtures (the browser crawl, the student site) are built once; in the
# order tests/conftest.py gives (longest first), not reordered by number of tests.
test: book
	$(VENV)/bin/ruff check tools tests notebooks
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder tests

clean:
	rm -rf $(BUILD) student book/vendor
