# `make book` builds the site (executing every notebook); `make test` runs every test;
# `make check` is the one-minute loop while editing (sync, lint, unit tests; no build).
# All create .venv on first use. `book` is also a folder name, hence .PHONY.
.PHONY: book book-no-solutions test check lint unit setup sync student assignments autograde slides pdf bench bench-rope determinism mutate portability clean

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# BOOK_BUILD_DIR moves the build (bookkit/paths.py reads it too); jupyter-book writes
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
export IPYTHONDIR := $(CURDIR)/bookkit/ipython
JUPYTER_BOOK := $(VENV)/bin/jupyter-book build . --path-output $(abspath $(BUILD)/..) -W -n --keep-going

setup: $(STAMP) book/vendor/.stamp

# The pinned dependencies, then the book's machinery (bookkit/, pyproject.toml) as an
# editable package: `python -m bookkit.<tool>` and `import bookkit` work everywhere.
$(STAMP): requirements.txt requirements-nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	touch $(STAMP)

book/vendor/.stamp: $(STAMP) bookkit/site/vendor.py
	$(PY) -m bookkit.site.vendor

# After editing a notebook: normalise the sources, then write the committed editions.
sync: setup
	$(PY) -m bookkit.sync
	$(PY) -m bookkit.editions

lint: setup
	$(VENV)/bin/ruff check bookkit tests notebooks

unit: setup
	$(PY) -m pytest -m unit -q

# The one-minute loop: notebooks and editions in sync, lint, unit tests.
check: setup
	$(PY) -m bookkit.sync --check
	$(PY) -m bookkit.editions --check
	$(VENV)/bin/ruff check bookkit tests notebooks
	$(PY) -m pytest -m unit -q

# Builds only: the sources must be in sync (a stale copy would publish the wrong code).
book: setup
	$(PY) -m bookkit.sync --check
	rm -rf $(BUILD)/html $(BUILD)/jupyter_execute $(BUILD)/.jupyter_cache
	$(PY) -m bookkit.execute $(BUILD)/.jupyter_cache
	$(JUPYTER_BOOK)
	$(PY) -m bookkit.execute $(BUILD)/.jupyter_cache --export $(BUILD)/jupyter_execute/notebooks
	$(PY) -m bookkit.editions.slides $(BUILD)/html/slides

# The student edition of the site, for a course that publishes the book before the
# answers: no solution anywhere (pages, downloads, search, slides), no instructor page,
# Colab badges opening colab/student/. Made from the last `make book`'s executed
# notebooks without executing them again (bookkit/editions/student_site.py), then searched for
# any solution's text (bookkit/leaks.py): _build/no-solutions/_build/html/.
book-no-solutions: setup
	test -d $(BUILD)/jupyter_execute/notebooks || $(MAKE) book
	$(PY) -m bookkit.editions.student_site --executed $(BUILD)/jupyter_execute/notebooks --out $(BUILD)/no-solutions
	$(PY) -m bookkit.leaks $(BUILD)/no-solutions --executed $(BUILD)/jupyter_execute/notebooks

# Slides again from the last build's executed notebooks (after editing slide metadata).
slides:
	$(PY) -m bookkit.editions.slides $(BUILD)/html/slides

# The printable edition of the last build (built first if there is none): one PDF per
# chapter and book.pdf in $(BUILD)/html/pdf/, printed by Chromium; then the site is
# built again (nothing executed) so that its pages link the PDFs that now exist
# (bookkit/sphinx/print_edition.py links only files that are there). `make test`
# checks two chapters' PDFs; BOOK_PDF_ALL=1 pytest tests/editions/test_pdf.py all.
pdf: setup
	test -f $(BUILD)/html/index.html || $(MAKE) book
	$(PY) -m bookkit.editions.pdf --site $(BUILD)/html
	$(JUPYTER_BOOK)

student: setup
	$(PY) -m bookkit.editions.student

# Autograding with nbgrader (bookkit/autograde.py): `make assignments` writes the hand-out
# notebooks, one per chapter, into _build/assignments/release/NN_topic/ and grades the
# chapters' own solutions with them (full marks expected); `make autograde
# SUBMISSIONS=folder` grades folder/<student>/NN_topic.ipynb into folder/grades.csv
# (points per case, each check's feedback, tampering) and folder/gradebook.csv (an
# LMS import), keeping the graded notebooks of each batch in its own course folder,
# _build/autograde/<folder's name>/autograded/ (a batch already graded is never
# overwritten).
assignments: setup
	$(PY) -m bookkit.autograde assignments --out $(BUILD)/assignments --validate

autograde: setup
	@test -n "$(SUBMISSIONS)" || { echo "usage: make autograde SUBMISSIONS=folder"; exit 2; }
	$(PY) -m bookkit.autograde grade $(SUBMISSIONS)

# Times a fresh `make test` (build included) and each notebook alone; prints a table.
bench: setup
	$(PY) -m bookkit.measure.bench

# Chapter 11's RoPE implementations against the copy bound (the chapter's own code).
bench-rope: setup
	$(PY) -m bookkit.measure.bench_rope

# Opt-in: run every notebook a second time, alone, and compare its printed output with the
# build's (every random draw is seeded). Needs a build (`make book`).
determinism: setup
	$(PY) -m bookkit.measure.bench --determinism

# Do the tolerances hold on other CPUs? Every notebook standalone and the unit tests under
# numeric environments this machine can imitate (python -m bookkit.measure.portability --list);
# `make portability ENVS="sse42-1thread avx2-2threads"` runs a subset.
portability: setup
	$(PY) -m bookkit.measure.portability $(foreach e,$(ENVS),--env $(e))

# Do the unit tests catch realistic bugs? One mutant at a time in a temporary copy.
mutate: setup
	$(PY) -m bookkit.measure.mutate --sample 20

# The tests read the build (the site, the executed notebooks, the slides), so `make test`
# builds first; the build itself runs no test.
# The tests run in two processes (pytest-xdist), each taking whole test files, so a
# file's module fixtures (the browser crawl, the student site) are built once; in the
# order tests/conftest.py gives (longest first), not reordered by number of tests.
test: book
	$(VENV)/bin/ruff check bookkit tests notebooks
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder tests

clean:
	rm -rf $(BUILD) student book/vendor
