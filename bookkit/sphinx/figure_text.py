"""Sphinx extension: show each interactive figure's text alternative under it.

A figure cell carries ``"mystnb": {"figure": {"caption", "name"}, "image": {"alt"}}``
(CONTRIBUTING.md). myst-nb numbers and captions the figure and gives a static image its
``alt``; a plotly figure is HTML, which has no ``alt``. This extension takes the cell's
``mystnb.image.alt`` and puts it under the plotly figure as a paragraph, "Text
alternative: ...", which the figure's ``<div>`` names with ``aria-describedby``: screen
reader users hear it with the figure, and every reader can read the numbers the figure
shows.

tests/test_figures.py builds a small fixture book with it; tests/test_site.py checks
that every plotly figure of the built site has a non-empty text alternative.
"""

from __future__ import annotations

import re

from docutils import nodes

PLOT_DIV = re.compile(r'<div id="([\w-]+)" class="plotly-graph-div"')
CLASS = "figure-text-alternative"


def text_alternative(metadata: dict) -> str:
    """The ``mystnb.image.alt`` of a cell's metadata ("" when there is none)."""
    image = (metadata.get("mystnb") or {}).get("image") or {}
    return " ".join(str(image.get("alt") or "").split())


def plotly_html(bundle: nodes.Element) -> nodes.raw | None:
    """The raw HTML node of a plotly figure in a mime bundle, if the bundle holds one.

    (myst-nb drops the bundle's plotly JSON, which it cannot render, so the figure is
    recognised by the ``<div class="plotly-graph-div">`` of its HTML.)"""
    for container in bundle.children:
        if isinstance(container, nodes.container) and container.get(
            "mime_type"
        ) == "text/html":
            for raw in container.findall(nodes.raw):
                if PLOT_DIV.search(raw.astext()):
                    return raw
    return None


def paragraph(text: str, div_id: str) -> nodes.paragraph:
    """The visible text alternative, an id the figure's ``<div>`` can point at."""
    node = nodes.paragraph("", "", classes=[CLASS], ids=[f"{div_id}-text"])
    node += nodes.strong("", "Text alternative:")
    node += nodes.Text(" " + text)
    return node


def add_text_alternatives(app, doctree: nodes.document) -> None:
    """Under every plotly figure of a notebook cell with ``mystnb.image.alt``."""
    for cell in list(doctree.findall(nodes.container)):
        if cell.get("nb_element") != "cell_code":
            continue
        text = text_alternative(cell.get("cell_metadata") or {})
        if not text:
            continue
        for bundle in list(cell.findall(nodes.container)):
            if bundle.get("nb_element") != "mime_bundle":
                continue
            raw = plotly_html(bundle)
            if raw is None:
                continue
            html = raw.astext()
            div_id = PLOT_DIV.search(html)[1]
            described = html.replace(
                f'<div id="{div_id}" class="plotly-graph-div"',
                f'<div id="{div_id}" class="plotly-graph-div" '
                f'aria-describedby="{div_id}-text"',
                1,
            )
            raw.replace_self(
                nodes.raw("", described, format="html", classes=raw["classes"])
            )
            # after the figure (its caption included), or after the output itself
            figure = isinstance(bundle.parent, nodes.figure)
            anchor = bundle.parent if figure else bundle
            place = anchor.parent.index(anchor) + 1
            anchor.parent.insert(place, paragraph(text, div_id))


def setup(app):
    app.connect("doctree-read", add_text_alternatives)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
