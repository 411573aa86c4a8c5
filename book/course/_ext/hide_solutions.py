"""Build the site without solutions: ``BOOK_HIDE_SOLUTIONS=1 jupyter-book build``.

With the variable set, every notebook cell tagged ``solution`` also gets the tag
``remove-cell`` before myst-nb reads the notebook: the cell still executes (so every
check below it passes), but neither its source nor its output reaches the page.
sphinx-exercise's ``hide_solutions`` is switched on as well, for any ``{solution}``
outside such a cell. ``make book-no-solutions`` sets the variable.
"""

from __future__ import annotations

import json
import os

from sphinx.application import Sphinx
from sphinx.config import Config


def _enabled() -> bool:
    return os.environ.get("BOOK_HIDE_SOLUTIONS") == "1"


def _configure(app: Sphinx, config: Config) -> None:
    if _enabled():
        config.hide_solutions = True


def _hide(app: Sphinx, docname: str, source: list[str]) -> None:
    if not _enabled() or not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    notebook = json.loads(source[0])
    for cell in notebook["cells"]:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if "solution" in tags and "remove-cell" not in tags:
            tags.append("remove-cell")
    source[0] = json.dumps(notebook)


def setup(app: Sphinx) -> dict[str, bool]:
    app.connect("config-inited", _configure)
    app.connect("source-read", _hide)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
