"""The site's search finds prose and numbers, not code (bookkit/sphinx/search_prose.py,
the searchtools.js that bookkit/site/vendor.py writes)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import snowballstemmer
from docutils import nodes

from bookkit.site.vendor import NUMERIC_RULE, searchtools_with_numbers
from bookkit.sphinx.search_prose import is_code, without_code, word_collector


def search_index(site: Path) -> dict:
    text = (site / "searchindex.js").read_text()
    return json.loads(re.search(r"Search\.setIndex\((.*)\)\s*$", text, re.S)[1])


@pytest.mark.site
def test_numbers_are_in_the_index_and_searched(site: Path) -> None:
    index = search_index(site)
    pages = [index["docnames"][k] for k in _as_list(index["terms"].get("8192"))]
    assert "notebooks/09_context_extension" in pages, pages
    served = (site / "_static" / "searchtools.js").read_text()
    assert NUMERIC_RULE not in served, "the site serves Sphinx's own search, which "
    "drops numbers"


@pytest.mark.site
def test_code_is_out_of_the_index(site: Path) -> None:
    """Words that appear only in code cells are not indexed: `linewidth` and
    `hovertemplate` (plotting keywords) are in the notebooks' code, not their prose."""
    terms = search_index(site)["terms"]
    for word in ("linewidth", "hovertemplate"):
        assert word not in terms, f"{word!r}, a word of the code, is in the index"
    # prose is, stemmed as Sphinx stems English ("rotation" -> "rotat")
    stem = snowballstemmer.stemmer("english").stemWord
    assert stem("rotation") in terms and stem("interleaved") in terms


def _as_list(value) -> list[int]:
    return [] if value is None else value if isinstance(value, list) else [value]


@pytest.mark.unit
def test_code_and_output_html_are_skipped() -> None:
    source = nodes.container(nb_element="cell_code_source")
    output = nodes.container(nb_element="cell_code_output")
    html = nodes.raw("", "<div>plot</div>", format="html")
    output += html
    prose = nodes.paragraph(text="a rotation")
    assert is_code(source) and is_code(nodes.literal_block("", "x = 1"))
    assert is_code(html)
    assert not is_code(prose) and not is_code(output)
    assert not is_code(nodes.raw("", "<b>x</b>", format="html"))  # prose HTML


@pytest.mark.unit
def test_the_served_search_keeps_everything_but_the_numeric_rule() -> None:
    patched = searchtools_with_numbers()
    assert "queryTerm.match(/^\\d+$/)" not in patched
    assert "stopwords.indexOf(queryTermLower) !== -1" in patched
    assert "splitQuery" in patched and len(patched) > 10_000


@pytest.mark.unit
def test_the_indexer_collects_the_prose_only() -> None:
    """Sphinx's own word collector, given a page with a code cell, an output's HTML and
    a paragraph, finds the paragraph's words only; the page itself is untouched."""
    import types

    from docutils.utils import new_document
    from sphinx.search.en import SearchEnglish

    page = new_document("page")
    page += nodes.paragraph(text="the rotation keeps norms")
    cell = nodes.container(nb_element="cell_code")
    source = nodes.container(nb_element="cell_code_source")
    source += nodes.literal_block("", "fig = plt.figure(linewidth=2)")
    output = nodes.container(nb_element="cell_code_output")
    output += nodes.raw("", "<div>hovertemplate</div>", format="html")
    cell += [source, output]
    page += cell
    indexer = types.SimpleNamespace(lang=SearchEnglish({}))
    words = word_collector(indexer, page).words
    assert "rotation" in words and "norms" in words
    assert not {"linewidth", "fig", "hovertemplate"} & set(words)
    assert "linewidth" in page.astext(), "the page keeps its code"
    assert "linewidth" not in without_code(page).astext()
