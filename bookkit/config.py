"""The book's configuration: ``_config.yml`` and ``_toc.yml``, each read once.

Everything the machinery takes from them goes through here: the website's address and
the student site's, the repository and branch the Colab links open, the execution
settings the build uses.
"""

from __future__ import annotations

import functools

import yaml

from bookkit.paths import CONFIG_FILE, TOC_FILE


@functools.cache
def book_config() -> dict:
    """``_config.yml`` as a dict (cached: read-only; copy it before editing)."""
    return yaml.safe_load(CONFIG_FILE.read_text())


@functools.cache
def toc() -> dict:
    """``_toc.yml`` as a dict (cached: treat it as read-only)."""
    return yaml.safe_load(TOC_FILE.read_text())


def site_url() -> str:
    """The website's address, ``html.baseurl``, ending with a slash."""
    url = (book_config().get("html") or {}).get("baseurl") or ""
    if not url.startswith("https://"):
        raise ValueError(
            "set html.baseurl in _config.yml to the website's https address"
        )
    return url.rstrip("/") + "/"


DEFAULT_STUDENT_SITE = (
    "https://position-embeddings.github.io/position-embeddings-book/student/"
)


def student_site_url() -> str:
    """The student site's address, ``course.student_site`` (the book without
    solutions, ``make book-no-solutions``), ending with a slash: what every student
    edition links to."""
    url = (book_config().get("course") or {}).get("student_site") or (
        DEFAULT_STUDENT_SITE)
    if not url.startswith("https://"):
        raise ValueError(
            "set course.student_site in _config.yml to the student site's https "
            "address"
        )
    return url.rstrip("/") + "/"


def repository() -> tuple[str, str]:
    """(``owner/name`` on GitHub, branch): where the Colab links open notebooks."""
    repo = book_config()["repository"]
    url = repo["url"].rstrip("/")
    if not url.startswith("https://github.com/"):
        raise ValueError(f"repository.url must be a GitHub address, got {url!r}")
    return url.removeprefix("https://github.com/"), repo["branch"]


def repository_file_url(name: str) -> str:
    """The GitHub address of a file of the repository."""
    slug, branch = repository()
    return f"https://github.com/{slug}/blob/{branch}/{name}"


def execution_settings() -> tuple[int, bool]:
    """(per-cell timeout in seconds, allow_errors) of the ``execute`` section: the
    build's own, used by every tool that executes a notebook as the build does."""
    execute = book_config()["execute"]
    return int(execute["timeout"]), bool(execute["allow_errors"])
