"""Sphinx extension: the site's side of the printable edition (``make pdf``).

``bookkit.editions.pdf`` prints the built site with Chromium into ``_build/html/pdf/``:
``book.pdf`` and one ``NN_topic.pdf`` per chapter. This extension

- adds the print style sheet ``_static/print.css`` (``media="print"``): what a browser's
  own *Print* uses too;
- points each chapter's download menu at its PDF (the theme's ".pdf" entry would only
  open the browser's print dialog);
- provides the ``{pdf-links}`` directive: a list of the book's PDF and each chapter's,
  with the chapter numbers and titles of the table of contents (the introduction page).

A page links only PDFs that exist in the output folder when it is written: ``make book``
(which starts from an empty output folder) publishes no PDF link at all, and ``make
pdf``, after printing, builds the site again; the pages whose links change are then
rewritten (``env-get-outdated``), nothing is executed. With ``print_edition_pdfs =
False`` (the student edition, whose PDFs are not printed) no page links a PDF either.
In both cases the download menu keeps the theme's entry and ``{pdf-links}`` says how
the PDFs are made.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

PDF_DIR = "pdf"
BOOK_PDF = "book.pdf"
CHAPTERS = "notebooks/"


def chapter_docs(env) -> list[str]:
    """The chapter documents (the notebooks), in the order of the table of contents."""
    numbered = [d for d in env.found_docs if d.startswith(CHAPTERS)]
    return sorted(numbered, key=lambda d: env.toc_secnumbers.get(d, {}).get("", (0,)))


def relative(docname: str, target: str) -> str:
    """A link from a page to a file at the site's root (``pdf/book.pdf``)."""
    return "../" * docname.count("/") + target


class pdf_links(nodes.General, nodes.Element):  # noqa: N801 - docutils node naming
    """Placeholder, filled in when every chapter's number and title are known."""


class PdfLinks(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        return [pdf_links()]


def printed(app) -> list[str]:
    """The PDFs in the output folder that pages may link (none unless allowed)."""
    if not app.config.print_edition_pdfs:
        return []
    return sorted(p.name for p in (Path(app.outdir) / PDF_DIR).glob("*.pdf"))


def pdf_linked(app, docname: str) -> bool:
    """Whether a chapter page may link its PDF (it exists; links are allowed)."""
    return f"{docname.removeprefix(CHAPTERS)}.pdf" in printed(app)


def outdated_by_pdfs(app, env, added, changed, removed) -> list[str]:
    """The pages whose PDF links change since the last build: every chapter and every
    page with a ``{pdf-links}`` list, when the set of printed PDFs changed."""
    state = printed(app)
    if getattr(env, "print_edition_state", None) == state:
        return []
    env.print_edition_state = state
    lists = getattr(env, "print_edition_lists", set())  # note_pdf_lists
    return sorted(
        d for d in env.found_docs if d.startswith(CHAPTERS) or d in lists
    )


def note_pdf_lists(app, doctree) -> None:
    """Remember the pages that hold a ``{pdf-links}`` list."""
    if any(True for _ in doctree.findall(pdf_links)):
        if not hasattr(app.env, "print_edition_lists"):
            app.env.print_edition_lists = set()
        app.env.print_edition_lists.add(app.env.docname)


def resolve_pdf_links(app, doctree, docname: str) -> None:
    env = app.env
    for node in list(doctree.findall(pdf_links)):
        if BOOK_PDF not in printed(app):
            node.replace_self(nodes.paragraph(
                "", "The printable edition (one PDF per chapter and one of the whole "
                "book) is made with make pdf after make book; your browser's Print "
                "uses the same print style."))
            continue
        items = nodes.bullet_list(classes=["pdf-links"])

        def item(text: str, target: str) -> None:
            link = nodes.reference("", text, refuri=relative(docname, target))
            items.append(nodes.list_item("", nodes.paragraph("", "", link)))

        item("The whole book (PDF)", f"{PDF_DIR}/{BOOK_PDF}")
        for doc in chapter_docs(env):
            if not pdf_linked(app, doc):
                continue
            number = ".".join(map(str, env.toc_secnumbers.get(doc, {}).get("", ())))
            title = env.titles[doc].astext() if doc in env.titles else doc
            stem = doc.removeprefix(CHAPTERS)
            item(f"Chapter {number}: {title} (PDF)", f"{PDF_DIR}/{stem}.pdf")
        node.replace_self(items)


def pdf_download_button(app, pagename, templatename, context, doctree) -> None:
    """On a chapter page, the download menu's ".pdf" opens the chapter's PDF."""
    if not pagename.startswith(CHAPTERS) or not pdf_linked(app, pagename):
        return
    url = relative(pagename, f"{PDF_DIR}/{pagename.removeprefix(CHAPTERS)}.pdf")
    for group in context.get("header_buttons", []):
        for k, button in enumerate(group.get("buttons", [])):
            if button.get("label") == "download-pdf-button":
                group["buttons"][k] = {
                    "type": "link",
                    "url": url,
                    "text": ".pdf",
                    "tooltip": "Download this chapter as a printable PDF",
                    "icon": "fas fa-file-pdf",
                    "label": "download-pdf-button",
                }


def setup(app):
    app.add_config_value("print_edition_pdfs", True, "html")
    app.add_node(pdf_links)
    app.add_directive("pdf-links", PdfLinks)
    app.add_css_file("print.css", media="print")
    app.connect("env-get-outdated", outdated_by_pdfs)
    app.connect("doctree-read", note_pdf_lists)
    app.connect("doctree-resolved", resolve_pdf_links)
    app.connect("html-page-context", pdf_download_button, priority=600)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
