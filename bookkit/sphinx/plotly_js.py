"""Sphinx extension: load plotly.js only on pages that draw a plotly figure.

Figures come from the build kernel's plotly renderer (bookkit/ipython) as
``<div class="plotly-graph-div">`` plus an inline script calling ``Plotly.newPlot``; the
page then needs the vendored ``_static/plotly.min.js`` before its body. Every other page
loads nothing of plotly (it is about 1.4 MB gzip, most of a page's weight).

Those pages also get ``_static/plotly-keyboard.js`` (book/assets/): native, labelled
keyboard controls for each figure's sliders and menus, which plotly draws in SVG.
"""

from __future__ import annotations

PLOTLY_JS = "plotly.min.js"
KEYBOARD_JS = "plotly-keyboard.js"
MARKER = "plotly-graph-div"


def add_plotly_where_needed(app, pagename, templatename, context, doctree) -> None:
    """Add plotly.js and its keyboard controls to this page only (Sphinx resets page
    scripts after each page)."""
    if MARKER in context.get("body", ""):
        app.add_js_file(PLOTLY_JS)
        app.add_js_file(KEYBOARD_JS)


def setup(app):
    app.connect("html-page-context", add_plotly_where_needed)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
