"""Sphinx extension: the search box finds the prose, not the code.

A reader searching the site for "which scaling method" wants the paragraph that answers
it, not the plotly slider code that happens to hold the same words. So the search index
leaves out what the notebooks' code cells show:

- the source of every code cell (myst-nb's ``cell_code_source`` containers) and every
  literal block;
- the raw HTML of cell outputs (plotly's figure JSON, HTML tables' markup stays out; the
  figures' captions, which are prose, stay in).

Sphinx's indexer has no option for it, so this wraps its ``WordCollector`` (the visitor
that collects a page's words) when the extension is set up. The other half, finding a
number such as 8192, is in the browser: Sphinx's ``searchtools.js`` drops every query
term made of digits only, so the site serves a copy without that rule
(``bookkit/site/vendor.py`` writes it; the index itself has always held numbers).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.search import WordCollector

SKIPPED_ELEMENTS = ("cell_code_source",)  # myst-nb: the code of a cell
_ORIGINAL = WordCollector.dispatch_visit


def is_code(node: nodes.Node) -> bool:
    """A node whose words a reader does not search for: code, or an output's raw
    HTML."""
    if isinstance(node, nodes.literal_block):
        return True
    if isinstance(node, nodes.Element) and node.get("nb_element") in SKIPPED_ELEMENTS:
        return True
    if isinstance(node, nodes.raw):
        parent = node.parent
        while parent is not None:
            if isinstance(parent, nodes.Element) and parent.get("nb_element") == (
                "cell_code_output"
            ):
                return True
            parent = parent.parent
    return False


def dispatch_visit(self: WordCollector, node: nodes.Node) -> None:
    if is_code(node):
        raise nodes.SkipNode
    _ORIGINAL(self, node)


def setup(app):
    WordCollector.dispatch_visit = dispatch_visit
    return {"parallel_read_safe": True, "parallel_write_safe": True}
