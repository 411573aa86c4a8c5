"""Sphinx extension: drop duplicate <script> entries from every page.

With Sphinx 7.4, sphinx-thebe registers its inline configuration script twice, and the browser
then reports "Identifier 'THEBE_JS_URL' has already been declared" on every page.
"""
from __future__ import annotations


def _dedupe(app, pagename, templatename, context, doctree) -> None:
    seen: set = set()
    unique = []
    for script in context.get("script_files", []):
        attributes = getattr(script, "attributes", {}) or {}
        key = (str(getattr(script, "filename", script)), tuple(sorted((k, str(v)) for k, v in attributes.items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", _dedupe, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
