"""Sphinx extension: what the theme and the extensions emit that axe-core flags.

tests/test_site.py runs axe-core on every page and fails on any serious or critical
violation. The fixes that are not colours (those are in book/assets/custom.css):

- The bibliography (sphinxcontrib-bibtex through docutils) is a ``role="list"`` whose
  entries carry the deprecated ``role="doc-biblioentry"``, so the list has no list
  items (aria-required-children, critical): the entries become ``role="listitem"``.
- myst-nb's folded cells have ``<summary aria-label="Toggle hidden content">`` around
  the visible text "Show code cell source": the label hides that text from a screen
  reader and contradicts it (label-content-name-mismatch, serious): the label goes,
  and the summary is named by its text.
- The theme's search button and colour-mode button: templates in ``templates/`` (the
  search button is named by its visible text, the mode icons are decorative), and the
  sidebar logo sits in a navigation landmark (region).

Interactive figures get keyboard controls from ``_static/plotly-keyboard.js``, added by
bookkit/sphinx/plotly_js.py on the pages that draw one.
"""

from __future__ import annotations

from pathlib import Path

TEMPLATES = Path(__file__).parent / "templates"
SIDEBAR = ["book-logo.html", "icon-links.html", "search-button-field.html",
           "sbt-sidebar-nav.html"]  # sphinx-book-theme's theme.conf, logo in a <nav>
REPLACEMENTS = [
    ('role="doc-biblioentry"', 'role="listitem"'),
    ('<summary aria-label="Toggle hidden content">', "<summary>"),
]


def add_templates(app, config) -> None:
    """Our templates first; the sidebar with its logo in a landmark."""
    config.templates_path.insert(0, str(TEMPLATES))
    if not config.html_sidebars:
        config.html_sidebars = {"**": SIDEBAR}


def fix_body(app, pagename, templatename, context, doctree) -> None:
    """Rewrite the few attributes of the page body that axe flags."""
    body = context.get("body")
    if body:
        for old, new in REPLACEMENTS:
            body = body.replace(old, new)
        context["body"] = body


def setup(app):
    app.connect("config-inited", add_templates)
    app.connect("html-page-context", fix_body)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
