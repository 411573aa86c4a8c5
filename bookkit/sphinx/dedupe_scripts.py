"""Sphinx extension: drop duplicate <script> entries from every page.

With Sphinx 7.4, sphinx-thebe registers its inline configuration script twice (once with
the file name None, once with ''), and the browser then reports "Identifier
'THEBE_JS_URL' has already been declared" on every page.
"""

from __future__ import annotations


def script_key(script) -> tuple:
    """What makes two scripts the same: their file (None and '' alike), attributes."""
    filename = getattr(script, "filename", script) or ""
    attributes = getattr(script, "attributes", {}) or {}
    return str(filename), tuple(sorted((k, str(v)) for k, v in attributes.items()))


def drop_duplicate_scripts(app, pagename, templatename, context, doctree) -> None:
    seen: set[tuple] = set()
    unique = []
    for script in context.get("script_files", []):
        key = script_key(script)
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app):
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
