"""Every path the tooling uses, defined once.

``BOOK_BUILD_DIR`` (environment) moves the build folder, e.g. to test another build:
``BOOK_BUILD_DIR=/tmp/build make test``. The Makefile passes it to jupyter-book too.
"""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
TOOLS = ROOT / "tools"
BUILD = Path(os.environ.get("BOOK_BUILD_DIR") or ROOT / "_build").resolve()
SITE = BUILD / "html"
EXECUTED = BUILD / "jupyter_execute"
EXECUTED_NOTEBOOKS = EXECUTED / "notebooks"
VENDOR = ROOT / "book" / "vendor"
BIBFILE = ROOT / "book" / "references.bib"
# The IPython profile of the build's kernels: the plotly renderer and figure defaults
# that
# only the static site needs (see tools/ipython/README.md). The Makefile exports
# IPYTHONDIR.
IPYTHON_DIR = TOOLS / "ipython"


def kernel_env() -> dict[str, str]:
    """The environment of a build or test kernel: this one plus the build's profile."""
    env = dict(os.environ)
    env.setdefault("IPYTHONDIR", str(IPYTHON_DIR))
    return env
