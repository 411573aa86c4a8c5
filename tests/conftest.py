"""Shared fixtures: paths, the built site, and the tools/ folder on sys.path."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "tests"))

BUILD = Path(os.environ.get("BOOK_BUILD_DIR", ROOT / "_build"))  # override to test another build
SITE = BUILD / "html"
EXECUTED = BUILD / "jupyter_execute"


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site; `make test` builds it first (`make book`)."""
    if not (SITE / "index.html").is_file():
        pytest.fail("no built site in _build/html: run `make test` (it builds the book first) "
                    "or `make book`")
    return SITE
