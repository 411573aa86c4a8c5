"""Sphinx extension: the search box finds the prose, not the code.

A reader searching the site for "which scaling method" wants the paragraph that answers
it, not the plotly slider code that happens to hold the same words. So the search index
leaves out what the notebooks' code cells show:

- the source of every code cell (myst-nb's ``cell_code_source`` containers) and every
  literal block;
- the raw HTML of cell outputs (plotly's figure JSON, HTML tables' markup stays out; the
  figures' captions, which are prose, stay in).

Sphinx's indexer has no option for it, so this wraps ``IndexBuilder._word_collector``
(Sphinx 7.4's function that collects a page's words; its older ``WordCollector`` visitor
is not used any more) when the extension is set up: it collects the words of a copy of
the page without the code. The other half, finding a
number such as 8192, is in the browser: Sphinx's ``searchtools.js`` drops every query
term made of digits only, so the site serves a copy without that rule
(``bookkit/site/vendor.py`` writes it; the index itself has always held numbers).
"""

from __future__ import annotations

from docutils import nodes
from sphinx.search import IndexBuilder

SKIPPED_ELEMENTS = ("cell_code_source",)  # myst-nb: the code of a cell
_ORIGINAL = IndexBuilder._word_collector


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


def without_code(doctree: nodes.document) -> nodes.document:
    """A copy of the page without its code (the page itself is left as it is)."""
    pruned = doctree.deepcopy()
    for node in list(pruned.findall(is_code)):
        if node.parent is not None:  # not already gone with an enclosing node
            node.parent.remove(node)
    return pruned


def word_collector(self: IndexBuilder, doctree: nodes.document):
    return _ORIGINAL(self, without_code(doctree))


def setup(app):
    IndexBuilder._word_collector = word_collector
    return {"parallel_read_safe": True, "parallel_write_safe": True}
