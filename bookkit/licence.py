"""The book's licence and citation, written once for every place that states them.

- Text and figures: CC BY 4.0 (``LICENSE-CC-BY-4.0.txt``), the licence made for
  teaching material: anyone may copy, adapt and teach from it, commercially too,
  crediting the book. Creative Commons advises against its licences for software.
- Code (the notebooks' code cells, ``bookkit/``, ``tests/``): MIT (``LICENSE``), so a
  reader may paste a function into their own project under the usual short notice.

``bookkit.sync`` writes :func:`footer_source` as the last cell of every chapter, so the
chapters and every edition of them end with it. The introduction page, the README and
``CITATION.cff`` state the same; ``tests/tools/test_licence.py`` checks that they agree.
"""

from __future__ import annotations

from bookkit.config import book_config, repository_file_url

CONTENT_LICENCE = "CC BY 4.0"
CONTENT_LICENCE_URL = "https://creativecommons.org/licenses/by/4.0/"
CONTENT_LICENCE_FILE = "LICENSE-CC-BY-4.0.txt"
CODE_LICENCE = "MIT"
CODE_LICENCE_FILE = "LICENSE"
SPDX = ("CC-BY-4.0", "MIT")
FOOTER_MARK = "<!-- licence-footer: written by make sync -->"
FOOTER_ID = "licence-footer"  # a fixed cell id, so regenerating gives identical files


def notice() -> str:
    """One sentence: who holds the copyright, and under which licences."""
    config = book_config()
    return (
        f"*{config['title']}* © {config['copyright']} {config['author']}. "
        f"Text and figures are licensed under [{CONTENT_LICENCE}]"
        f"({CONTENT_LICENCE_URL}), code under the [{CODE_LICENCE} licence]"
        f"({repository_file_url(CODE_LICENCE_FILE)})."
    )


def footer_source() -> str:
    """The last markdown cell of every chapter notebook (and of its editions)."""
    return (
        f"{FOOTER_MARK}\n**Licence.** {notice()} You may copy, adapt and teach from "
        "this chapter, crediting the book: {ref}`how to cite it <cite-this-book>`."
    )
