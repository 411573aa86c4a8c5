"""The student edition's side of Sphinx (``make book-no-solutions``).

``bookkit.editions.student_site`` builds the student edition from its own source tree
(notebooks without solution cells, no instructor page) with a configuration that sets
``book_student_edition = True`` (and the withheld pages). With it, this extension

- tags every notebook cell tagged ``solution`` ``remove-cell`` as well, before myst-nb
  reads the notebook (a second net: the staged notebooks have no such cells);
- switches on sphinx-exercise's ``hide_solutions``, for any ``{solution}`` directive;
- adds the Sphinx tag ``student_edition``: the course pages put what only the full site
  may say (solutions in drop-downs) in ``{only} not student_edition`` blocks, and what
  only the student site says in ``{only} student_edition`` ones;
- turns every link to a withheld page or one of its labels into its plain text
  (``hide_solutions_withheld = {"docs": [...], "labels": [...]}``, which the tool
  writes into the student edition's configuration): the course pages still say "the
  instructor page", but nothing links to a page that is not there.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePosixPath

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util import docname_join

from bookkit.notebook import HIDDEN_CASES, SETUP, SOLUTION

# The Sphinx tag of the student edition: prose that only the full site may say (that
# solutions sit in drop-downs, ...) goes in ```{only} not student_edition``` blocks.
STUDENT_TAG = "student_edition"


def _configure(app: Sphinx, config: Config) -> None:
    if config.book_student_edition:
        config.hide_solutions = True
        app.tags.add(STUDENT_TAG)


def _hide(app: Sphinx, docname: str, source: list[str]) -> None:
    if not app.config.book_student_edition or not str(
        app.env.doc2path(docname)
    ).endswith(".ipynb"):
        return
    notebook = json.loads(source[0])
    for cell in notebook["cells"]:
        tags = cell.setdefault("metadata", {}).setdefault("tags", [])
        if {SOLUTION, HIDDEN_CASES} & set(tags) and SETUP not in tags:
            tags.append(SETUP)
    source[0] = json.dumps(notebook)


def _target_doc(node: addnodes.pending_xref, docname: str) -> str | None:
    """The document a ``{doc}`` role or a Markdown link points at, if it is one."""
    target = str(node.get("reftarget", ""))
    if node.get("reftype") == "doc":
        return docname_join(docname, target)
    if node.get("reftype") == "myst" and node.get("refdomain") == "doc":
        return str(PurePosixPath(target).with_suffix(""))
    if node.get("reftype") == "myst" and target.endswith(".md"):
        folder = PurePosixPath(docname).parent
        return str(PurePosixPath(os.path.normpath(folder / target)).with_suffix(""))
    return None


class UnlinkWithheld(SphinxPostTransform):
    """Links to withheld pages and their labels become plain text."""

    default_priority = 5  # before Sphinx's and MyST's reference resolvers

    def run(self, **kwargs) -> None:
        withheld = self.config.hide_solutions_withheld or {}
        docs, labels = set(withheld.get("docs", [])), set(withheld.get("labels", []))
        if not (docs or labels):
            return
        for node in list(self.document.findall(addnodes.pending_xref)):
            target = str(node.get("reftarget", "")).lower()
            if _target_doc(node, self.env.docname) in docs or (
                node.get("reftype") in ("ref", "numref", "myst") and target in labels
            ):
                node.replace_self(nodes.inline("", node.astext()))


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_config_value("book_student_edition", False, "env")
    app.add_config_value("hide_solutions_withheld", {}, "env")
    app.connect("config-inited", _configure)
    app.connect("source-read", _hide)
    app.add_post_transform(UnlinkWithheld)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
