"""Shared fixtures (the built site) and the markers that group tests by what they need.

Paths come from ``bookkit.paths`` (``BOOK_BUILD_DIR`` moves the build). The tests are
grouped by what they test: ``chapters/`` (one file per chapter: its functions, its
exercise checks, its editions' chapter-specific checks), ``editions/``, ``site/``,
``pages/`` (the prose pages) and ``tools/`` (the machinery).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from bookkit.paths import SITE

# Timing is not what the property tests check: on a loaded 2-core machine hypothesis's
# default 200 ms deadline per example fails at random.
settings.register_profile("book", deadline=None)
settings.load_profile("book")

BUILD_FIXTURES = {"site", "executed_notebook", "slides"}
LONGEST_FIRST = {"test_site.py"}


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark each test ``site`` if it needs the build (a build fixture or a ``site`` or
    ``browser`` mark), else ``unit``; ``browser`` tests are ``site`` tests too. Then put
    the files in LONGEST_FIRST first."""
    for item in items:
        marks = {m.name for m in item.iter_markers()}
        if "browser" in marks or BUILD_FIXTURES & set(
            getattr(item, "fixturenames", ())
        ):
            marks.add("site")
            item.add_marker(pytest.mark.site)
        if "site" not in marks:
            item.add_marker(pytest.mark.unit)
    # `make test` runs two processes, each taking whole files in this order: the
    # longest file (the browser crawl, about two minutes) goes first, so it does not
    # run alone at the end while the other process idles.
    items.sort(key=lambda item: item.path.name not in LONGEST_FIRST)


@pytest.fixture(scope="session")
def site() -> Path:
    """The built site; `make test` builds it first (`make book`)."""
    if not (SITE / "index.html").is_file():
        pytest.fail(
            f"no built site in {SITE}: run `make test` (it builds the book first) "
            "or `make book`"
        )
    return SITE
