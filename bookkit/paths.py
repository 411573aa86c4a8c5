"""Every path the book's machinery uses, defined here and nowhere else.

The repository is the checkout the command runs in: the nearest folder, from the
working directory up, that holds ``_toc.yml`` and ``bookkit/`` (so a second checkout or
a git worktree sharing one virtual environment works on its own files), else the
checkout this package was installed from. Two environment variables move the paths,
both read once, at import:

- ``BOOK_ROOT`` runs the machinery on another copy of the repository (a sandbox of
  ``bookkit.measure.mutate``, the dummy chapter of ``tests/tools/test_registry.py``);
- ``BOOK_BUILD_DIR`` moves the build folder (the Makefile passes it to jupyter-book
  too), e.g. ``BOOK_BUILD_DIR=/tmp/x/_build make test``.
"""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def _checkout() -> Path:
    """The checkout of the working directory, else the package's own."""
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / "_toc.yml").is_file() and (folder / "bookkit").is_dir():
            return folder
    return PACKAGE.parent


ROOT = Path(os.environ.get("BOOK_ROOT") or _checkout()).resolve()

# Sources
CONFIG_FILE = ROOT / "_config.yml"
TOC_FILE = ROOT / "_toc.yml"
NOTEBOOKS = ROOT / "notebooks"
BOOK = ROOT / "book"
BIBFILE = BOOK / "references.bib"
COURSE_PAGES = BOOK / "course"
SCHEDULE = COURSE_PAGES / "schedule.md"
INSTRUCTOR_PAGE = COURSE_PAGES / "instructor.md"
TESTS = ROOT / "tests"
CHAPTER_TESTS = TESTS / "chapters"

# Generated and committed: the Colab editions (make sync)
COLAB = ROOT / "colab"
COLAB_STUDENT = COLAB / "student"

# Generated, not committed
VENDOR = BOOK / "vendor"  # MathJax and plotly.js (bookkit.site.vendor)
STUDENT = ROOT / "student"  # make student
BUILD = Path(os.environ.get("BOOK_BUILD_DIR") or ROOT / "_build").resolve()
SITE = BUILD / "html"
SLIDES = SITE / "slides"
PDF = SITE / "pdf"
EXECUTED = BUILD / "jupyter_execute"
EXECUTED_NOTEBOOKS = EXECUTED / "notebooks"
JUPYTER_CACHE = BUILD / ".jupyter_cache"
NO_SOLUTIONS = BUILD / "no-solutions"  # make book-no-solutions
ASSIGNMENTS = BUILD / "assignments"  # make assignments
AUTOGRADE = BUILD / "autograde"  # make autograde's course folders

# The IPython profile of the build's kernels: plotly's HTML renderer and figure
# defaults that only the static site needs (bookkit/ipython/README.md). The Makefile
# exports IPYTHONDIR; kernel_env() sets it for kernels started from Python.
IPYTHON_DIR = PACKAGE / "ipython"


def kernel_env() -> dict[str, str]:
    """The environment of a build or test kernel: this one plus the build's profile."""
    env = dict(os.environ)
    env.setdefault("IPYTHONDIR", str(IPYTHON_DIR))
    return env
